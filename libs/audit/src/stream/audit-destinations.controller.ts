import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import {
  Actor,
  AnswersWithSecrets,
  ApiJsonBody,
  ApiPaging,
  IfMatch,
  IfMatchHeader,
  PathFormats,
  RequestActor,
  RequireAdministrator,
  isoTimestamp,
  listResponse,
  parsePage,
} from '@app/common';
import { AppConfig } from '@app/config';
import { Audited } from '../audited.decorator';
import { DestinationRow } from './audit-destination.repository';
import { createDestinationSchema, updateDestinationSchema } from './audit-destination.schema';
import { AuditDestinationService } from './audit-destination.service';
import { DeliveryRow } from './audit-outbox.repository';

export const AUDIT_DESTINATION_RESOURCE_TYPE = 'AuditDestination';

/** A destination as administrators read it (DECISIONS 11.4): never its webhook secret or client key, only whether it has one. */
export function presentDestination(baseUrl: string, row: DestinationRow, secret?: string | null) {
  return {
    id: row.id,
    name: row.name,
    type: row.type,
    ...(row.type === 'webhook' ? { url: row.url } : { host: row.host, port: row.port }),
    enabled: row.enabled,
    caCertificate: row.ca_certificate,
    clientCertificate: row.client_certificate,
    // The secret is answered once, by the create; afterwards only that it exists.
    ...(secret ? { secret } : {}),
    meta: {
      resourceType: AUDIT_DESTINATION_RESOURCE_TYPE,
      created: isoTimestamp(row.created_at),
      lastModified: isoTimestamp(row.updated_at),
      location: `${baseUrl}${destinationsPath(row.org_id)}/${row.id}`,
      version: String(row.version),
    },
  };
}

/** One event's delivery at one destination: its state and the coarse class of its last failure. */
export function presentDelivery(row: DeliveryRow) {
  return {
    eventId: row.event_id,
    action: row.action,
    code: row.code,
    state: row.state,
    attempts: row.attempts,
    nextAttemptAt: row.state === 'pending' ? isoTimestamp(row.due_at) : null,
    lastError: row.last_error,
    created: isoTimestamp(row.created_at),
    lastModified: isoTimestamp(row.updated_at),
    deliveredAt: row.delivered_at ? isoTimestamp(row.delivered_at) : null,
  };
}

export function destinationsPath(orgId: string | null): string {
  return orgId === null ? '/admin/v1/audit-destinations' : `/admin/v1/organizations/${orgId}/audit-destinations`;
}

const CREATE_EXAMPLE = { name: 'SIEM', type: 'webhook', url: 'https://siem.example.com/hooks/audit' };

/**
 * The routes of one set of destinations, for an organization or for the platform; each controller
 * below names its set (the organization in the path, or the platform) and its access rule.
 */
class DestinationRoutes {
  constructor(
    protected readonly destinations: AuditDestinationService,
    protected readonly baseUrl: string,
  ) {}

  protected async createIn(orgId: string | null, body: unknown, actor: Actor, reply: FastifyReply) {
    const { row, secret } = await this.destinations.create(orgId, body, actor);
    const view = presentDestination(this.baseUrl, row, secret);
    reply.header('Location', view.meta.location);
    return view;
  }

  protected async listIn(orgId: string | null, query: Record<string, unknown>) {
    const page = parsePage(query);
    const { rows, total } = await this.destinations.list(orgId, page);
    return listResponse(
      rows.map((row) => presentDestination(this.baseUrl, row)),
      total,
      page,
    );
  }

  protected async getIn(orgId: string | null, id: string) {
    return presentDestination(this.baseUrl, await this.destinations.get(orgId, id));
  }

  protected async updateIn(orgId: string | null, id: string, body: unknown, ifMatch: IfMatch | undefined, actor: Actor) {
    return presentDestination(this.baseUrl, await this.destinations.update(orgId, id, body, ifMatch, actor));
  }

  protected async deliveriesIn(orgId: string | null, id: string, query: Record<string, unknown>) {
    const { rows, total, page } = await this.destinations.deliveries(orgId, id, query);
    return listResponse(rows.map(presentDelivery), total, page);
  }
}

/** `/admin/v1/organizations/{org}/audit-destinations` (DECISIONS 11.4): the organization's administrators. */
@ApiTags('administration')
@ApiBearerAuth()
@RequireAdministrator('organization')
@PathFormats({ id: 'numericId', eventId: 'numericId' })
@Controller('admin/v1/organizations/:org/audit-destinations')
export class OrganizationAuditDestinationsController extends DestinationRoutes {
  constructor(destinations: AuditDestinationService, config: AppConfig) {
    super(destinations, config.publicBaseUrl);
  }

  @Post()
  @Audited('audit_destination.create')
  @AnswersWithSecrets()
  @ApiOperation({ summary: "Add a destination for the organization's audit events (syslog over TLS or a signed webhook); a webhook's secret is answered once" })
  @ApiJsonBody(createDestinationSchema, CREATE_EXAMPLE)
  create(@RequestActor() actor: Actor, @Param('org') org: string, @Body() body: unknown, @Res({ passthrough: true }) reply: FastifyReply) {
    return this.createIn(org, body, actor, reply);
  }

  @Get()
  @ApiOperation({ summary: "List the organization's audit event destinations" })
  @ApiPaging()
  list(@Param('org') org: string, @Query() query: Record<string, unknown>) {
    return this.listIn(org, query);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Read an audit event destination' })
  get(@Param('org') org: string, @Param('id') id: string) {
    return this.getIn(org, id);
  }

  @Patch(':id')
  @Audited('audit_destination.update')
  @ApiOperation({ summary: 'Change an audit event destination (If-Match optional); null removes a certificate' })
  @ApiJsonBody(updateDestinationSchema, { enabled: false })
  update(
    @RequestActor() actor: Actor,
    @Param('org') org: string,
    @Param('id') id: string,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
    @Body() body: unknown,
  ) {
    return this.updateIn(org, id, body, ifMatch, actor);
  }

  @Delete(':id')
  @Audited('audit_destination.delete')
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove an audit event destination and its pending deliveries (If-Match optional)' })
  async remove(@RequestActor() actor: Actor, @Param('org') org: string, @Param('id') id: string, @IfMatchHeader() ifMatch: IfMatch | undefined): Promise<void> {
    await this.destinations.delete(org, id, ifMatch, actor);
  }

  @Post(':id/test')
  @Audited('audit_destination.test')
  @HttpCode(200)
  @ApiOperation({ summary: 'Send one test event (type audit.test) to the destination now and answer whether it was delivered' })
  test(@RequestActor() actor: Actor, @Param('org') org: string, @Param('id') id: string) {
    return this.destinations.testSend(org, id, actor);
  }

  @Get(':id/deliveries')
  @ApiOperation({
    summary: "The destination's deliveries, newest event first: pending (with the next attempt), delivered, deadLettered; errors as coarse classes",
  })
  @ApiQuery({ name: 'state', required: false, schema: { type: 'string', enum: ['pending', 'delivered', 'deadLettered'] } })
  @ApiPaging()
  deliveries(@Param('org') org: string, @Param('id') id: string, @Query() query: Record<string, unknown>) {
    return this.deliveriesIn(org, id, query);
  }

  @Post(':id/deliveries/:eventId/redrive')
  @Audited('audit_destination.redrive')
  @HttpCode(204)
  @ApiOperation({ summary: 'Put a dead-lettered delivery back in the queue, its attempts counted afresh' })
  async redrive(@RequestActor() actor: Actor, @Param('org') org: string, @Param('id') id: string, @Param('eventId') eventId: string): Promise<void> {
    await this.destinations.redrive(org, id, eventId, actor);
  }
}

/** `/admin/v1/audit-destinations` (DECISIONS 11.4): the platform's destinations, which receive every event; the platform administrator. */
@ApiTags('administration')
@ApiBearerAuth()
@RequireAdministrator('platform')
@PathFormats({ id: 'numericId', eventId: 'numericId' })
@Controller('admin/v1/audit-destinations')
export class PlatformAuditDestinationsController extends DestinationRoutes {
  constructor(destinations: AuditDestinationService, config: AppConfig) {
    super(destinations, config.publicBaseUrl);
  }

  @Post()
  @Audited('audit_destination.create')
  @AnswersWithSecrets()
  @ApiOperation({ summary: "Add a platform destination for every organization's audit events; a webhook's secret is answered once" })
  @ApiJsonBody(createDestinationSchema, CREATE_EXAMPLE)
  create(@RequestActor() actor: Actor, @Body() body: unknown, @Res({ passthrough: true }) reply: FastifyReply) {
    return this.createIn(null, body, actor, reply);
  }

  @Get()
  @ApiOperation({ summary: "List the platform's audit event destinations" })
  @ApiPaging()
  list(@Query() query: Record<string, unknown>) {
    return this.listIn(null, query);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Read a platform audit event destination' })
  get(@Param('id') id: string) {
    return this.getIn(null, id);
  }

  @Patch(':id')
  @Audited('audit_destination.update')
  @ApiOperation({ summary: 'Change a platform audit event destination (If-Match optional)' })
  @ApiJsonBody(updateDestinationSchema, { enabled: false })
  update(@RequestActor() actor: Actor, @Param('id') id: string, @IfMatchHeader() ifMatch: IfMatch | undefined, @Body() body: unknown) {
    return this.updateIn(null, id, body, ifMatch, actor);
  }

  @Delete(':id')
  @Audited('audit_destination.delete')
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove a platform audit event destination and its pending deliveries' })
  async remove(@RequestActor() actor: Actor, @Param('id') id: string, @IfMatchHeader() ifMatch: IfMatch | undefined): Promise<void> {
    await this.destinations.delete(null, id, ifMatch, actor);
  }

  @Post(':id/test')
  @Audited('audit_destination.test')
  @HttpCode(200)
  @ApiOperation({ summary: 'Send one test event to the platform destination now' })
  test(@RequestActor() actor: Actor, @Param('id') id: string) {
    return this.destinations.testSend(null, id, actor);
  }

  @Get(':id/deliveries')
  @ApiOperation({ summary: "The platform destination's deliveries, newest event first" })
  @ApiQuery({ name: 'state', required: false, schema: { type: 'string', enum: ['pending', 'delivered', 'deadLettered'] } })
  @ApiPaging()
  deliveries(@Param('id') id: string, @Query() query: Record<string, unknown>) {
    return this.deliveriesIn(null, id, query);
  }

  @Post(':id/deliveries/:eventId/redrive')
  @Audited('audit_destination.redrive')
  @HttpCode(204)
  @ApiOperation({ summary: 'Put a dead-lettered delivery of the platform destination back in the queue' })
  async redrive(@RequestActor() actor: Actor, @Param('id') id: string, @Param('eventId') eventId: string): Promise<void> {
    await this.destinations.redrive(null, id, eventId, actor);
  }
}
