import { Controller, Get } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiSchemaResponse, RequireAdministrator, listResponse, scimListSchema } from '@app/common';
import { AUDIT_CATALOGUE } from './audit-catalogue';

const AUDIT_ACTION_SCHEMA = {
  type: 'object' as const,
  required: ['action', 'code', 'group', 'description'],
  properties: {
    action: { type: 'string' as const, example: 'device.suspend' },
    code: { type: 'integer' as const, example: 10009 },
    group: { type: 'string' as const, description: 'The part of the action before its first dot', example: 'device' },
    description: { type: 'string' as const, example: 'Device suspended' },
  },
};

/**
 * GET /admin/v1/audit-actions: the catalogue of audit actions (the same for every organization),
 * so that a client picks actions by name and never guesses codes (DECISIONS 11, 17).
 */
@ApiTags('administration')
@ApiBearerAuth()
@RequireAdministrator('any')
@Controller('admin/v1/audit-actions')
export class AuditActionsController {
  @Get()
  @ApiOperation({ summary: 'Every action the audit log records, in code order, with its code, group and meaning (docs/audit-events.md is the same table)' })
  @ApiSchemaResponse(scimListSchema(AUDIT_ACTION_SCHEMA))
  list() {
    const actions = Object.entries(AUDIT_CATALOGUE)
      .sort(([, a], [, b]) => a.code - b.code)
      .map(([action, { code, description }]) => ({ action, code, group: action.split('.')[0], description }));
    // Every action in one page: the catalogue is a few hundred rows that never change at run time.
    return listResponse(actions, actions.length, { startIndex: 1, count: actions.length });
  }
}
