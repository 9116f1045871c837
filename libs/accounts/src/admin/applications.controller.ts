import { Audited } from '@app/audit';
import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  ApiJsonBody,
  ApiPaging,
  CurrentPrincipal,
  listResponse,
  parseBody,
  parsePage,
  Principal,
  RequireAdministrator,
  Actor,
  RequestActor,
} from '@app/common';
import { CertifiedApplicationService } from '../applications/certified-application.service';
import { addApplicationSchema } from './admin.schemas';

/** Certified Application-IDs of an organization (DECISIONS 6 and 11). */
@ApiTags('administration')
@ApiBearerAuth()
@RequireAdministrator('organization')
@Controller('admin/v1/organizations/:org/applications')
export class ApplicationsController {
  constructor(private readonly applications: CertifiedApplicationService) {}

  @Post()
  @Audited('application.certify')
  @ApiOperation({
    summary: 'Certify an Application-ID',
    description: 'Under applicationIdPolicy "certified" only certified Application-IDs may call the API (DECISIONS 6).',
  })
  @ApiJsonBody(addApplicationSchema, { applicationId: 'com.partner.app', name: 'Partner app' })
  async add(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('org') orgId: string, @Body() body: unknown) {
    const input = parseBody(addApplicationSchema, body);
    return this.applications.add(orgId, input.applicationId, input.name, actor);
  }

  @Get()
  @ApiOperation({ summary: 'List the certified Application-IDs of an organization' })
  @ApiPaging()
  async list(@Param('org') orgId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    const { rows, total } = await this.applications.list(orgId, page.startIndex - 1, page.count);
    return listResponse(rows, total, page);
  }

  @Delete(':applicationId')
  @Audited('application.uncertify')
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove a certified Application-ID' })
  async remove(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('applicationId') applicationId: string,
  ) {
    await this.applications.remove(orgId, applicationId, actor);
  }
}
