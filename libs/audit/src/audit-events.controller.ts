import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { ApiPaging, RequireAdministrator, isoTimestamp, listResponse, parsePage } from '@app/common';
import { parseAuditFilter } from './audit-filter';
import { AuditEventRow, AuditRepository } from './audit.repository';

/**
 * The audit log of one organization (DECISIONS 11), newest first. The platform administrator may
 * read it for any organization, including one that was deleted.
 */
@ApiTags('administration')
@ApiBearerAuth()
@RequireAdministrator('organization-record')
@Controller('admin/v1/organizations/:org/audit-events')
export class AuditEventsController {
  constructor(private readonly events: AuditRepository) {}

  @Get()
  @ApiOperation({
    summary: "Query an organization's audit events, newest first",
    description:
      'Every state change and every security event (token issued, authentication failed, lockout, token revoked, certificate expired in use), each with its numeric code (docs/audit-events.md). from is inclusive, to exclusive; action matches exactly, or as a prefix when it ends in * (e.g. user.*); code matches exactly; q is free text found in the actor, the target or the details.',
  })
  @ApiQuery({ name: 'from', required: false, schema: { type: 'string', format: 'date-time' }, example: '2030-01-01T00:00:00Z' })
  @ApiQuery({ name: 'to', required: false, schema: { type: 'string', format: 'date-time' }, example: '2030-02-01T00:00:00Z' })
  @ApiQuery({ name: 'actor', required: false, schema: { type: 'string' }, example: 'acme-admin' })
  @ApiQuery({ name: 'action', required: false, schema: { type: 'string' }, example: 'system_account.*' })
  @ApiQuery({ name: 'code', required: false, schema: { type: 'integer' }, example: 10000 })
  @ApiQuery({ name: 'target', required: false, schema: { type: 'string' }, example: 'acme-billing' })
  @ApiQuery({ name: 'outcome', required: false, schema: { type: 'string', enum: ['success', 'failure'] } })
  @ApiQuery({
    name: 'q',
    required: false,
    description:
      'Free text (2-100 characters) found anywhere in the actor, the target or the details, in any case. No index serves it: it is tested on every event the other filters select, so narrow a search of a large log with from and to',
    schema: { type: 'string', minLength: 2, maxLength: 100 },
    example: 'billing',
  })
  @ApiPaging()
  async list(@Param('org') orgId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    const filter = parseAuditFilter(query);
    const { rows, total } = await this.events.query(orgId, filter, page.startIndex - 1, page.count);
    return listResponse(rows.map(presentAuditEvent), total, page);
  }
}

/** An audit event (DECISIONS 11): who did what to which target, with what outcome, from where, when, and in which request. */
export function presentAuditEvent(row: AuditEventRow) {
  return {
    id: row.id,
    occurred: isoTimestamp(row.occurred_at),
    org: row.org_id,
    actor: row.actor,
    action: row.action,
    code: row.code,
    target: row.target,
    outcome: row.outcome,
    sourceAddress: row.source_address,
    correlationId: row.correlation_id,
    details: row.details,
  };
}
