import { Audited } from '@app/audit';
import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Permission } from '@app/auth';
import {
  Actor,
  ApiSchemaResponse,
  META_RESPONSE_SCHEMA,
  CANONICAL_PREFIX,
  CurrentPrincipal,
  PathFormats,
  Principal,
  RequestActor,
  RequirePermission,
  ScimMediaTypes,
  credentialManagementPaths,
  isoTimestamp,
} from '@app/common';
import { AppConfig } from '@app/config';
import { ENROLLMENT_DATA_SCHEMA } from './enrollment-data.schema';
import { EnrollmentDataService } from './enrollment-data.service';

/** POST /Users/{uid}/EnrollmentData (DECISIONS 5.2: user.enrollmentData.write). */
@ApiTags('credential management: users')
@ApiBearerAuth()
@ScimMediaTypes()
@PathFormats({ id: 'uuid' })
@Controller(credentialManagementPaths('Users'))
export class EnrollmentDataController {
  constructor(
    private readonly enrollment: EnrollmentDataService,
    private readonly config: AppConfig,
  ) {}

  @Post(':id/EnrollmentData')
  @Audited('user.enrollment_data.replace')
  @HttpCode(200)
  @RequirePermission(Permission.UserEnrollmentDataWrite)
  @ApiOperation({ summary: "Replace a user's enrollment data (at most 50 {name, value}; photo: base64 JPEG or PNG up to 512 KiB)" })
  @ApiBody({
    schema: {
      type: 'object',
      required: ['attributes'],
      properties: {
        schemas: { type: 'array', items: { type: 'string', enum: [ENROLLMENT_DATA_SCHEMA] } },
        attributes: {
          type: 'array',
          maxItems: 50,
          items: { type: 'object', required: ['name', 'value'], properties: { name: { type: 'string' }, value: { type: 'string' } } },
        },
      },
      example: {
        schemas: [ENROLLMENT_DATA_SCHEMA],
        attributes: [
          { name: 'employeeId', value: '4711' },
          { name: 'userPrincipalName', value: 'jane@corp.example' },
        ],
      },
    },
  })
  @ApiSchemaResponse({
    type: 'object',
    properties: {
      schemas: { type: 'array', items: { type: 'string' } },
      id: { type: 'string', description: "the user's id" },
      attributes: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, value: { type: 'string' } } } },
      meta: META_RESPONSE_SCHEMA,
    },
  })
  async replace(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    const row = await this.enrollment.replace(principal, id, body, actor);
    return {
      schemas: [ENROLLMENT_DATA_SCHEMA],
      id: row.user_id,
      attributes: row.attributes,
      meta: {
        resourceType: 'EnrollmentData',
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        location: `${this.config.publicBaseUrl}${CANONICAL_PREFIX}/Users/${row.user_id}/EnrollmentData`,
        version: String(row.version),
      },
    };
  }
}
