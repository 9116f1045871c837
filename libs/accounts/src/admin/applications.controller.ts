import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { AuthorizedBy, CurrentPrincipal, Principal, SourceAddress, listResponse, parseBody, z } from '@app/common';
import { CertifiedApplicationService } from '../applications/certified-application.service';
import { AdminAccessPolicy } from './admin-access.policy';

const APPLICATION_ID = /^[A-Za-z0-9._-]{1,128}$/;
const addSchema = z
  .object({
    applicationId: z.string().regex(APPLICATION_ID, 'must be 1-128 characters of A-Z, a-z, 0-9, ".", "_" and "-"'),
    name: z.string().trim().min(1).max(200).optional(),
  })
  .strict();

/** Certified Application-IDs of an organization (DECISIONS 6 and 11). */
@ApiTags('administration')
@ApiBearerAuth()
@AuthorizedBy('administrator')
@Controller('admin/v1/organizations/:org/applications')
export class ApplicationsController {
  constructor(
    private readonly applications: CertifiedApplicationService,
    private readonly access: AdminAccessPolicy,
  ) {}

  @Post()
  async add(@CurrentPrincipal() principal: Principal, @SourceAddress() source: string, @Param('org') orgId: string, @Body() body: unknown) {
    await this.access.requireOrganizationAccess(principal, orgId);
    const input = parseBody(addSchema, body);
    return this.applications.add(orgId, input.applicationId, input.name, { name: principal.name, sourceAddress: source });
  }

  @Get()
  async list(@CurrentPrincipal() principal: Principal, @Param('org') orgId: string) {
    await this.access.requireOrganizationAccess(principal, orgId);
    const rows = await this.applications.list(orgId);
    return listResponse(rows, rows.length, { startIndex: 1, count: rows.length });
  }

  @Delete(':applicationId')
  @HttpCode(204)
  async remove(@CurrentPrincipal() principal: Principal, @SourceAddress() source: string, @Param('org') orgId: string, @Param('applicationId') applicationId: string) {
    await this.access.requireOrganizationAccess(principal, orgId);
    await this.applications.remove(orgId, applicationId, { name: principal.name, sourceAddress: source });
  }
}
