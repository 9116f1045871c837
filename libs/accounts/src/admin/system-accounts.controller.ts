import { Audited } from '@app/audit';
import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import {
  AnswersWithSecrets,
  ApiJsonBody,
  ApiPaging,
  ApiPemBody,
  CurrentPrincipal,
  listResponse,
  Page,
  parseBody,
  parsePage,
  Principal,
  RequireAdministrator,
  Actor,
  RequestActor,
  readPem,
} from '@app/common';
import { SystemAccountService } from '../system-accounts/system-account.service';
import { AdminPresenter } from './admin.presenter';
import { createAccountSchema, createSecretSchema, patchAccountSchema } from './admin.schemas';

/** System accounts of an organization with their secrets and certificates (DECISIONS 4, 11). */
@ApiTags('administration')
@ApiBearerAuth()
@RequireAdministrator('organization')
@Controller('admin/v1/organizations/:org/system-accounts')
export class SystemAccountsController {
  constructor(
    private readonly accounts: SystemAccountService,
    private readonly presenter: AdminPresenter,
  ) {}

  @Post()
  @Audited('system_account.create')
  @AnswersWithSecrets()
  @ApiOperation({
    summary: 'Create a system account',
    description: 'Answers its Client ID, Token URL and first secret; the secret value is shown only in this answer.',
  })
  @ApiJsonBody(createAccountSchema, { suffix: 'billing', role: 'Issuance', organizationAdministrator: false, description: 'Billing robot' })
  async create(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Body() body: unknown,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const input = parseBody(createAccountSchema, body);
    const { account, secret } = await this.accounts.create(orgId, input, actor);
    const view = this.presenter.systemAccount(account);
    reply.header('Location', view.meta.location);
    return { ...view, secret: this.presenter.issuedSecret(secret) };
  }

  @Get()
  @ApiOperation({ summary: 'List the system accounts of an organization (no secret values)' })
  @ApiPaging()
  @ApiOkResponse({
    description: 'A page of system accounts, each as GET answers it plus nearestCredentialExpiry',
    schema: {
      type: 'object',
      properties: {
        totalResults: { type: 'integer' },
        Resources: {
          type: 'array',
          items: {
            type: 'object',
            required: ['clientId', 'nearestCredentialExpiry'],
            properties: {
              clientId: { type: 'string' },
              nearestCredentialExpiry: {
                type: 'string',
                format: 'date-time',
                nullable: true,
                description:
                  "The earliest expiry among the account's live secrets and certificates (a certificate's registration expiry or its notAfter, whichever is first); null when it has none",
              },
            },
          },
        },
      },
    },
  })
  async list(@Param('org') orgId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    const { rows, total } = await this.accounts.list(orgId, page.startIndex - 1, page.count);
    return listResponse(
      rows.map((r) => this.presenter.listedSystemAccount(r)),
      total,
      page,
    );
  }

  @Get(':clientId')
  @ApiOperation({
    summary: 'Read a system account (no secret values)',
    description: 'oidcClient says whether the account is set up as an OpenID Connect client, whose settings GET .../oidc-client answers (404 without).',
  })
  async get(@Param('org') orgId: string, @Param('clientId') clientId: string) {
    return this.presenter.systemAccount(await this.accounts.get(orgId, clientId));
  }

  @Patch(':clientId')
  @Audited('system_account.update')
  @ApiOperation({
    summary: 'Change role, description, disabled or organizationAdministrator',
    description: "Applies to the account's live tokens at once. Disabling stops them; re-enabling revokes them, so they never come back.",
  })
  @ApiJsonBody(patchAccountSchema, { role: 'Help Desk', disabled: true })
  async patch(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('clientId') clientId: string,
    @Body() body: unknown,
  ) {
    const changes = parseBody(patchAccountSchema, body);
    const account = await this.accounts.update(orgId, clientId, changes, actor);
    return this.presenter.systemAccount(account);
  }

  @Delete(':clientId')
  @Audited('system_account.delete')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a system account', description: 'Its secrets, certificates and tokens go with it; its tokens stop working at once.' })
  async delete(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('clientId') clientId: string,
  ): Promise<void> {
    await this.accounts.delete(orgId, clientId, actor);
  }

  @Post(':clientId/secrets')
  @Audited('client_secret.create')
  @AnswersWithSecrets()
  @ApiOperation({
    summary: 'Add a secret (rotation with overlap)',
    description: 'The value is shown only in this answer; the other secrets keep working until revoked. Default expiry 5 years.',
  })
  @ApiJsonBody(createSecretSchema, { expiresAt: '2030-01-31T00:00:00Z' })
  async createSecret(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('clientId') clientId: string,
    @Body() body: unknown,
  ) {
    const input = parseBody(createSecretSchema, body ?? {});
    const secret = await this.accounts.createSecret(orgId, clientId, input.expiresAt ? new Date(input.expiresAt) : undefined, actor);
    return this.presenter.issuedSecret(secret);
  }

  @Get(':clientId/secrets')
  @ApiOperation({ summary: 'List the secrets of a system account: metadata only (id, created, expiresAt, lastUsed)' })
  @ApiPaging()
  async listSecrets(@Param('org') orgId: string, @Param('clientId') clientId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    const rows = await this.accounts.listSecrets(orgId, clientId);
    return pageOf(
      rows.map((r) => this.presenter.secretMetadata(r)),
      page,
    );
  }

  @Delete(':clientId/secrets/:secretId')
  @Audited('client_secret.revoke')
  @HttpCode(204)
  @ApiOperation({ summary: 'Revoke a secret', description: 'It stops working at once; the other secrets keep working.' })
  async revokeSecret(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('clientId') clientId: string,
    @Param('secretId') secretId: string,
  ): Promise<void> {
    await this.accounts.revokeSecret(orgId, clientId, secretId, actor);
  }

  @Post(':clientId/certificates')
  @Audited('client_certificate.upload')
  @ApiOperation({
    summary: 'Upload a certificate for signed-JWT client authentication (RFC 7523)',
    description: 'Exactly one X.509 certificate, RSA 2048+ or EC P-256/P-384; at most 5 per account.',
  })
  @ApiPemBody()
  async uploadCertificate(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('clientId') clientId: string,
    @Body() body: unknown,
  ) {
    const pem = readPem(body);
    const row = await this.accounts.uploadCertificate(orgId, clientId, pem, actor);
    return this.presenter.certificate(row);
  }

  @Get(':clientId/certificates')
  @ApiOperation({ summary: 'List the certificates of a system account' })
  @ApiPaging()
  async listCertificates(@Param('org') orgId: string, @Param('clientId') clientId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    const rows = await this.accounts.listCertificates(orgId, clientId);
    return pageOf(
      rows.map((r) => this.presenter.certificate(r)),
      page,
    );
  }

  @Delete(':clientId/certificates/:thumbprint')
  @Audited('client_certificate.delete')
  @HttpCode(204)
  @ApiOperation({
    summary: 'Delete a certificate (by its x5t#S256 thumbprint, the certificate id)',
    description: 'Assertions signed with its key stop working at once.',
  })
  async deleteCertificate(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('clientId') clientId: string,
    @Param('thumbprint') thumbprint: string,
  ): Promise<void> {
    await this.accounts.deleteCertificate(orgId, clientId, thumbprint, actor);
  }
}

/** Secrets and certificates of one account are few (certificates at most 5): paged in memory. */
function pageOf<T>(all: T[], page: Page) {
  const start = page.startIndex - 1;
  return listResponse(all.slice(start, start + page.count), all.length, page);
}
