import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { RequireAdministrator, listResponse, parsePage } from '@app/common';
import { parseAuditFilter } from '../audit/audit-filter';
import { AuditService } from '../audit/audit.service';
import { AdminPresenter } from './admin.presenter';
import { ApiPaging } from './openapi';

/**
 * The audit log of one organization (DECISIONS 11), newest first. The platform administrator may
 * read it for any organization, including one that was deleted.
 */
@ApiTags('administration')
@ApiBearerAuth()
@RequireAdministrator('organization-record')
@Controller('admin/v1/organizations/:org/audit-events')
export class AuditEventsController {
  constructor(
    private readonly audit: AuditService,
    private readonly presenter: AdminPresenter,
  ) {}

  @Get()
  @ApiOperation({
    summary: "Query an organization's audit events, newest first",
    description:
      'Every admin change and every security event (token issued, authentication failed, lockout, token revoked, certificate expired in use). from is inclusive, to exclusive; action matches exactly, or as a prefix when it ends in * (e.g. user.*).',
  })
  @ApiQuery({ name: 'from', required: false, schema: { type: 'string', format: 'date-time' }, example: '2030-01-01T00:00:00Z' })
  @ApiQuery({ name: 'to', required: false, schema: { type: 'string', format: 'date-time' }, example: '2030-02-01T00:00:00Z' })
  @ApiQuery({ name: 'actor', required: false, schema: { type: 'string' }, example: 'acme-admin' })
  @ApiQuery({ name: 'action', required: false, schema: { type: 'string' }, example: 'system_account.*' })
  @ApiQuery({ name: 'target', required: false, schema: { type: 'string' }, example: 'acme-billing' })
  @ApiQuery({ name: 'outcome', required: false, schema: { type: 'string', enum: ['success', 'failure'] } })
  @ApiPaging()
  async list(@Param('org') orgId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    const filter = parseAuditFilter(query);
    const { rows, total } = await this.audit.query(orgId, filter, page.startIndex - 1, page.count);
    return listResponse(
      rows.map((row) => this.presenter.auditEvent(row)),
      total,
      page,
    );
  }
}
