import { Audited } from '@app/audit';
import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
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
  ApiJsonBody,
} from '@app/common';
import { parseApiVersion, requireTenant } from '../common/request-rules';
import { PushGatewayPresenter } from './push-gateway.presenter';
import { PushGatewayService } from './push-gateway.service';
import { PUSH_GATEWAY_SCHEMA, createGatewaySchema, replaceGatewaySchema } from './push-gateway.schema';
import { PushTestService, testSendSchema } from '../delivery/push-test.service';

/** The documented example body (api-version=3). */
const GATEWAY_EXAMPLE = {
  schemas: [PUSH_GATEWAY_SCHEMA],
  type: 'CLOUD_GCM_PUSH',
  name: 'Android push',
  hub: 'wallet-hub',
  connectionString: 'Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=...',
  notificationTimeToLive: '3600',
  supportedOperatingSystems: ['Android'],
};

/**
 * `/configuration/{tenant}/v2/DeliveryGateway/Push` (interface, "Push delivery gateways"; DECISIONS
 * 10). Reads need Read reference data; create, replace and delete also Manage OOB Adapter
 * Configuration (interface, Endpoints rule 4). Order of checks: token and permission (global
 * guards), tenant (403), api-version (400), the gateway (404), If-Match (412), then the body.
 */
@ApiTags('push delivery gateways')
@ApiBearerAuth()
@ApiQuery({
  name: 'api-version',
  required: false,
  schema: { type: 'string', enum: ['1', '2', '3'] },
  description: 'Interface version (DECISIONS 10); 1 when absent',
})
@ScimMediaTypes()
@PathFormats({ id: 'numericId' })
@Controller('configuration/:tenant/v2/DeliveryGateway/Push')
export class PushGatewayController {
  constructor(
    private readonly gateways: PushGatewayService,
    private readonly presenter: PushGatewayPresenter,
    private readonly tests: PushTestService,
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
  @ApiJsonBody(createGatewaySchema, GATEWAY_EXAMPLE)
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
  @ApiHeader({ name: 'If-Match', required: false, description: 'W/"<version>" as read: 412 when the gateway changed meanwhile' })
  @ApiJsonBody(replaceGatewaySchema, { ...GATEWAY_EXAMPLE, type: undefined, notes: 'Rotated the key' })
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

  /** DECISIONS 10.7: one notification straight to the hub, its outcome answered; nothing queued or retried. */
  @Post(':id/test')
  @HttpCode(200)
  @Audited('deliveryGateway.test')
  @RequirePermission(Permission.ReferenceDataRead, Permission.OobAdapterConfigurationManage)
  @ApiOperation({
    summary:
      "Test-send: one notification with the gateway's credential template to the device handle given, now; answers sent, refused or unreachable with the reason's class",
  })
  @ApiJsonBody(testSendSchema, { pushHandle: 'fcm-registration-token-of-my-phone' })
  async test(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('tenant') tenant: string,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
    @Body() body: unknown,
  ) {
    const org = requireTenant(principal, tenant);
    parseApiVersion(query);
    return this.tests.send(org, id, body, actor);
  }

  @Delete(':id')
  @Audited('deliveryGateway.delete')
  @ApiHeader({ name: 'If-Match', required: false, description: 'W/"<version>" as read: 412 when the gateway changed meanwhile' })
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
