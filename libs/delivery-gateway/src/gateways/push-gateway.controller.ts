import { Audited } from '@app/audit';
import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Permission } from '@app/auth';
import {
  AnswersWithSecrets,
  CurrentPrincipal,
  IfMatch,
  IfMatchHeader,
  Principal,
  RequirePermission,
  ScimMediaTypes,
  Actor,
  RequestActor,
  PathFormats,
  serializedOnce,
} from '@app/common';
import { parseApiVersion, requireTenant } from '../common/request-rules';
import { PushGatewayPresenter } from './push-gateway.presenter';
import { PushGatewayService } from './push-gateway.service';

/**
 * `/configuration/{tenant}/v2/DeliveryGateway/Push` (interface, "Push delivery gateways"; DECISIONS
 * 10). Reads need Read reference data; create, replace and delete also Manage OOB Adapter
 * Configuration (interface, Endpoints rule 4). Order of checks: token and permission (global
 * guards), tenant (403), api-version (400), the gateway (404), If-Match (412), then the body.
 */
@ApiTags('push delivery gateways')
@ApiBearerAuth()
@ScimMediaTypes()
@PathFormats({ id: 'numericId' })
@Controller('configuration/:tenant/v2/DeliveryGateway/Push')
export class PushGatewayController {
  constructor(
    private readonly gateways: PushGatewayService,
    private readonly presenter: PushGatewayPresenter,
  ) {}

  @Get()
  @RequirePermission(Permission.ReferenceDataRead)
  async list(@CurrentPrincipal() principal: Principal, @Param('tenant') tenant: string, @Query() query: Record<string, unknown>) {
    const org = requireTenant(principal, tenant);
    const version = parseApiVersion(query);
    // The organization's cached list is serialised once per API version (issue 35).
    const rows = await this.gateways.list(org);
    return serializedOnce(rows, String(version), () => this.presenter.list(rows, version));
  }

  @Get(':id')
  @RequirePermission(Permission.ReferenceDataRead)
  async get(@CurrentPrincipal() principal: Principal, @Param('tenant') tenant: string, @Param('id') id: string, @Query() query: Record<string, unknown>) {
    const org = requireTenant(principal, tenant);
    const version = parseApiVersion(query);
    const row = await this.gateways.get(org, id);
    return serializedOnce(row, `${version} ${row.version}`, () => this.presenter.gateway(row, version));
  }

  @Post()
  @Audited('deliveryGateway.create')
  @AnswersWithSecrets()
  @RequirePermission(Permission.ReferenceDataRead, Permission.OobAdapterConfigurationManage)
  async create(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('tenant') tenant: string,
    @Query() query: Record<string, unknown>,
    @Body() body: unknown,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const org = requireTenant(principal, tenant);
    const version = parseApiVersion(query);
    const written = await this.gateways.create(org, body, version, actor);
    reply.header('Location', this.presenter.location(org, written.row.id));
    // Create and replace echo the connection string (interface), hence @AnswersWithSecrets (DECISIONS 10).
    return this.presenter.gateway(written.row, version, written.connectionString);
  }

  @Put(':id')
  @Audited('deliveryGateway.replace')
  @AnswersWithSecrets()
  @RequirePermission(Permission.ReferenceDataRead, Permission.OobAdapterConfigurationManage)
  async replace(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('tenant') tenant: string,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
    @Body() body: unknown,
  ) {
    const org = requireTenant(principal, tenant);
    const version = parseApiVersion(query);
    const written = await this.gateways.replace(org, id, body, version, ifMatch, actor);
    return this.presenter.gateway(written.row, version, written.connectionString);
  }

  @Delete(':id')
  @Audited('deliveryGateway.delete')
  @HttpCode(204)
  @RequirePermission(Permission.ReferenceDataRead, Permission.OobAdapterConfigurationManage)
  async delete(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('tenant') tenant: string,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
  ): Promise<void> {
    const org = requireTenant(principal, tenant);
    parseApiVersion(query);
    await this.gateways.delete(org, id, ifMatch, actor);
  }
}
