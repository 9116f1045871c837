import { Controller, Get } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { AdminAccessPolicy } from '@app/accounts';
import { AuthorizedBy, CurrentPrincipal, Principal } from '@app/common';
import { RoleCatalog } from './role-catalog';

/** GET /admin/v1/roles: the role -> scopes -> permissions mapping loaded at boot (DECISIONS 5.2). */
@ApiTags('administration')
@ApiBearerAuth()
@AuthorizedBy('administrator')
@Controller('admin/v1/roles')
export class RolesController {
  constructor(
    private readonly roles: RoleCatalog,
    private readonly access: AdminAccessPolicy,
  ) {}

  @Get()
  list(@CurrentPrincipal() principal: Principal) {
    this.access.requireAdministrator(principal);
    return {
      Resources: this.roles.roles().map((role) => ({
        name: role.name,
        scopes: [...role.scopes],
        permissions: role.sortedPermissions,
        operatorDependent: role.operatorDependent,
      })),
    };
  }
}
