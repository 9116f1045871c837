import { Audited } from '@app/audit';
import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Permission } from '@app/auth';
import {
  CurrentPrincipal,
  IfMatch,
  IfMatchHeader,
  Principal,
  RequirePermission,
  ScimMediaTypes,
  parsePage,
  Actor,
  RequestActor,
  PathFormats,
} from '@app/common';
import { requireTenant } from '../common/request-rules';
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
@PathFormats({ id: 'numericId' })
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
  async get(@CurrentPrincipal() principal: Principal, @Param('tenant') tenant: string, @Param('id') id: string) {
    return this.presenter.policy(await this.policies.get(requireTenant(principal, tenant), id));
  }

  @Post()
  @Audited('authenticatorPolicy.create')
  @RequirePermission(Permission.ReferenceDataRead, Permission.OobAdapterConfigurationManage)
  async create(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('tenant') tenant: string,
    @Body() body: unknown,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const org = requireTenant(principal, tenant);
    const row = await this.policies.create(org, body, actor);
    reply.header('Location', this.presenter.location(org, row.id));
    return this.presenter.policy(row);
  }

  @Put(':id')
  @Audited('authenticatorPolicy.replace')
  @RequirePermission(Permission.ReferenceDataRead, Permission.OobAdapterConfigurationManage)
  async replace(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('tenant') tenant: string,
    @Param('id') id: string,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
    @Body() body: unknown,
  ) {
    const org = requireTenant(principal, tenant);
    return this.presenter.policy(await this.policies.replace(org, id, body, ifMatch, actor));
  }

  @Delete(':id')
  @Audited('authenticatorPolicy.delete')
  @HttpCode(204)
  @RequirePermission(Permission.ReferenceDataRead, Permission.OobAdapterConfigurationManage)
  async delete(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('tenant') tenant: string,
    @Param('id') id: string,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
  ): Promise<void> {
    const org = requireTenant(principal, tenant);
    await this.policies.delete(org, id, ifMatch, actor);
  }
}
