import { Body, Controller, Get, Header, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AuthorizedBy, CurrentPrincipal, DomainError, Principal, SourceAddress, listResponse, parseBody, parsePage, z } from '@app/common';
import { SystemAccountService } from '../system-accounts/system-account.service';
import { AdminAccessPolicy } from './admin-access.policy';
import { AdminPresenter } from './admin.presenter';

const role = z.string().trim().min(1, 'must name a role of scopeAssignment.properties').max(64, 'must be at most 64 characters');
const description = z.string().max(500, 'must be at most 500 characters').nullable();

const createAccountSchema = z
  .object({
    suffix: z.string().regex(/^[A-Za-z0-9]{1,64}$/, 'must be 1-64 letters or digits (A-Z, a-z, 0-9)').optional(),
    role,
    organizationAdministrator: z.boolean().optional(),
    description: description.optional(),
  })
  .strict();

const patchAccountSchema = z
  .object({ role: role.optional(), description: description.optional(), disabled: z.boolean().optional(), organizationAdministrator: z.boolean().optional() })
  .strict();

const createSecretSchema = z.object({ expiresAt: z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time, e.g. 2030-01-31T00:00:00Z' }).optional() }).strict();

@ApiTags('administration')
@ApiBearerAuth()
@AuthorizedBy('administrator')
@Controller('admin/v1/organizations/:org/system-accounts')
export class SystemAccountsController {
  constructor(
    private readonly accounts: SystemAccountService,
    private readonly access: AdminAccessPolicy,
    private readonly presenter: AdminPresenter,
  ) {}

  @Post()
  @Header('Cache-Control', 'no-store')
  async create(
    @CurrentPrincipal() principal: Principal,
    @SourceAddress() source: string,
    @Param('org') orgId: string,
    @Body() body: unknown,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    await this.access.requireOrganizationAccess(principal, orgId);
    const input = parseBody(createAccountSchema, body);
    const { account, secret } = await this.accounts.create(orgId, input, { name: principal.name, sourceAddress: source });
    const view = this.presenter.systemAccount(account);
    reply.header('Location', view.meta.location);
    return { ...view, secret: this.presenter.issuedSecret(secret) };
  }

  @Get()
  async list(@CurrentPrincipal() principal: Principal, @Param('org') orgId: string, @Query() query: Record<string, unknown>) {
    await this.access.requireOrganizationAccess(principal, orgId);
    const page = parsePage(query);
    const { rows, total } = await this.accounts.list(orgId, page.startIndex - 1, page.count);
    return listResponse(rows.map((r) => this.presenter.systemAccount(r)), total, page);
  }

  @Get(':clientId')
  async get(@CurrentPrincipal() principal: Principal, @Param('org') orgId: string, @Param('clientId') clientId: string) {
    await this.access.requireOrganizationAccess(principal, orgId);
    return this.presenter.systemAccount(await this.accounts.get(orgId, clientId));
  }

  @Patch(':clientId')
  async patch(@CurrentPrincipal() principal: Principal, @SourceAddress() source: string, @Param('org') orgId: string, @Param('clientId') clientId: string, @Body() body: unknown) {
    await this.access.requireOrganizationAccess(principal, orgId);
    const changes = parseBody(patchAccountSchema, body);
    const account = await this.accounts.update(orgId, clientId, changes, { name: principal.name, sourceAddress: source });
    return this.presenter.systemAccount(account);
  }

  @Post(':clientId/secrets')
  @Header('Cache-Control', 'no-store')
  async createSecret(@CurrentPrincipal() principal: Principal, @SourceAddress() source: string, @Param('org') orgId: string, @Param('clientId') clientId: string, @Body() body: unknown) {
    await this.access.requireOrganizationAccess(principal, orgId);
    const input = parseBody(createSecretSchema, body ?? {});
    const secret = await this.accounts.createSecret(orgId, clientId, input.expiresAt ? new Date(input.expiresAt) : undefined, { name: principal.name, sourceAddress: source });
    return this.presenter.issuedSecret(secret);
  }

  @Get(':clientId/secrets')
  async listSecrets(@CurrentPrincipal() principal: Principal, @Param('org') orgId: string, @Param('clientId') clientId: string) {
    await this.access.requireOrganizationAccess(principal, orgId);
    const rows = await this.accounts.listSecrets(orgId, clientId);
    return listResponse(rows.map((r) => this.presenter.secretMetadata(r)), rows.length, { startIndex: 1, count: rows.length });
  }

  /** PEM as application/x-pem-file or text/plain, or JSON {pem} (DECISIONS 11). */
  @Post(':clientId/certificates')
  async uploadCertificate(@CurrentPrincipal() principal: Principal, @SourceAddress() source: string, @Param('org') orgId: string, @Param('clientId') clientId: string, @Body() body: unknown) {
    await this.access.requireOrganizationAccess(principal, orgId);
    const pem = readPem(body);
    const row = await this.accounts.uploadCertificate(orgId, clientId, pem, { name: principal.name, sourceAddress: source });
    return this.presenter.certificate(row);
  }

  @Get(':clientId/certificates')
  async listCertificates(@CurrentPrincipal() principal: Principal, @Param('org') orgId: string, @Param('clientId') clientId: string) {
    await this.access.requireOrganizationAccess(principal, orgId);
    const rows = await this.accounts.listCertificates(orgId, clientId);
    return listResponse(rows.map((r) => this.presenter.certificate(r)), rows.length, { startIndex: 1, count: rows.length });
  }
}

function readPem(body: unknown): string {
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body)) return body.toString('utf8');
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    return parseBody(z.object({ pem: z.string({ message: 'must be the certificate in PEM form, as a string' }) }).strict(), body).pem;
  }
  throw new DomainError('INVALID_SYNTAX', 'Send the certificate as PEM (Content-Type application/x-pem-file or text/plain) or as JSON {"pem": "..."}.');
}
