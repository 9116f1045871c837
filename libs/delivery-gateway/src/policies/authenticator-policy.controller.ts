import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Permission } from '@app/auth';
import { CurrentPrincipal, Principal, RequirePermission, ScimMediaTypes, SourceAddress, parsePage } from '@app/common';
import { IfMatch, requireTenant } from '../common/request-rules';
import { etag } from '../gateways/push-gateway.presenter';
import { AuthenticatorPolicyPresenter } from './authenticator-policy.presenter';
import { AuthenticatorPolicyService } from './authenticator-policy.service';

/**
 * `/configuration/{tenant}/v2/Policy/Authenticator[/{id}]`: the delivery-gateway binding of the
 * interface (Push delivery gateways, rule 2), with the gateways' permissions: reads need Read
 * reference data, writes also Manage OOB Adapter Configuration.
 */
@ApiTags('push delivery gateways')
@ApiBearerAuth()
@ScimMediaTypes()
@Controller('configuration/:tenant/v2/Policy/Authenticator')
export class AuthenticatorPolicyController {
  constructor(
    private readonly policies: AuthenticatorPolicyService,
    private readonly presenter: AuthenticatorPolicyPresenter,
  ) {}

  @Get()
  @RequirePermission(Permission.ReferenceDataRead)
  async list(@CurrentPrincipal() principal: Principal, @Param('tenant') tenant: string, @Query() query: Record<string, unknown>) {
    const org = requireTenant(principal, tenant);
    const page = parsePage(query);
    const { rows, total } = await this.policies.list(org, page);
    return this.presenter.list(rows, total, page);
  }

  @Get(':id')
  @RequirePermission(Permission.ReferenceDataRead)
  async get(
    @CurrentPrincipal() principal: Principal,
    @Param('tenant') tenant: string,
    @Param('id') id: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const row = await this.policies.get(requireTenant(principal, tenant), id);
    reply.header('ETag', etag(row.version));
    return this.presenter.policy(row);
  }

  @Post()
  @RequirePermission(Permission.ReferenceDataRead, Permission.OobAdapterConfigurationManage)
  async create(
    @CurrentPrincipal() principal: Principal,
    @SourceAddress() source: string,
    @Param('tenant') tenant: string,
    @Body() body: unknown,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const org = requireTenant(principal, tenant);
    const row = await this.policies.create(org, body, { name: principal.name, sourceAddress: source });
    reply.header('Location', this.presenter.location(org, row.id)).header('ETag', etag(row.version));
    return this.presenter.policy(row);
  }

  @Put(':id')
  @RequirePermission(Permission.ReferenceDataRead, Permission.OobAdapterConfigurationManage)
  async replace(
    @CurrentPrincipal() principal: Principal,
    @SourceAddress() source: string,
    @Param('tenant') tenant: string,
    @Param('id') id: string,
    @Headers('if-match') ifMatch: string | undefined,
    @Body() body: unknown,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const org = requireTenant(principal, tenant);
    const row = await this.policies.replace(org, id, body, IfMatch.parse(ifMatch), { name: principal.name, sourceAddress: source });
    reply.header('ETag', etag(row.version));
    return this.presenter.policy(row);
  }

  @Delete(':id')
  @HttpCode(204)
  @RequirePermission(Permission.ReferenceDataRead, Permission.OobAdapterConfigurationManage)
  async delete(
    @CurrentPrincipal() principal: Principal,
    @SourceAddress() source: string,
    @Param('tenant') tenant: string,
    @Param('id') id: string,
    @Headers('if-match') ifMatch: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<void> {
    const org = requireTenant(principal, tenant);
    await this.policies.delete(org, id, IfMatch.parse(ifMatch), { name: principal.name, sourceAddress: source });
    reply.removeHeader('Content-Type');
  }
}
