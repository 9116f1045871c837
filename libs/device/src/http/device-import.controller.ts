import { Audited } from '@app/audit';
import { Body, Controller, Headers, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { RequireAdministrator, CurrentPrincipal, Principal, Actor, RequestActor } from '@app/common';
import { importFormat, parseImport } from '../import/device-import.parser';
import { DeviceImportService, ImportReport } from '../import/device-import.service';

/**
 * `POST /admin/v1/organizations/{org}/devices/import` (DECISIONS 11): a JSON array or CSV of
 * {ATR, CUID}, answered 200 with the per-line report, for the platform administrator and the
 * organization's own administrators.
 */
@ApiTags('administration')
@ApiBearerAuth()
@RequireAdministrator('organization')
@Controller('admin/v1/organizations/:org/devices')
export class DeviceImportController {
  constructor(private readonly imports: DeviceImportService) {}

  @Post('import')
  @Audited('device.import', 'device.create')
  @HttpCode(200)
  async import(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Headers('content-type') contentType: string | undefined,
    @Body() body: unknown,
  ): Promise<ImportReport> {
    const entries = parseImport(body, importFormat(contentType));
    return this.imports.import(orgId, entries, actor);
  }
}
