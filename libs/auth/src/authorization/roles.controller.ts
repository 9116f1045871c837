import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { RequireAdministrator, listResponse, parsePage } from '@app/common';
import { RoleCatalog } from './role-catalog';

/** GET /admin/v1/roles: the role -> scopes -> permissions mapping loaded at boot (DECISIONS 5.2). */
@ApiTags('administration')
@ApiBearerAuth()
@RequireAdministrator('any')
@Controller('admin/v1/roles')
export class RolesController {
  constructor(private readonly roles: RoleCatalog) {}

  @Get()
  list(@Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    const all = this.roles.roles();
    const shown = all.slice(page.startIndex - 1, page.startIndex - 1 + page.count).map((role) => ({
      name: role.name,
      scopes: [...role.scopes],
      permissions: role.sortedPermissions,
      operatorDependent: role.operatorDependent,
    }));
    // DECISIONS 5.2 names the Resources shape; DECISIONS 7 makes every list a ListResponse.
    return listResponse(shown, all.length, page);
  }
}
