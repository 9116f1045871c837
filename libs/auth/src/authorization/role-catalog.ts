import { forbidden } from '@app/common';
import { ALL_SCOPES, Permission, SCOPE_PERMISSIONS, Scope } from './permissions';

export interface Role {
  name: string;
  scopes: readonly Scope[];
  permissions: ReadonlySet<Permission>;
  /** The same permissions, sorted, as answers list them. */
  sortedPermissions: readonly Permission[];
  /** Limits the role's users to the users and devices of their own groups (DECISIONS 5.2). */
  operatorDependent: boolean;
}

/**
 * The role -> scopes -> permissions mapping loaded once at boot. A role not in the mapping reaches
 * nothing; a role with no scopes reaches nothing.
 */
export class RoleCatalog {
  private readonly byName: ReadonlyMap<string, Role>;

  constructor(roles: { name: string; scopes: Scope[]; operatorDependent: boolean }[]) {
    this.byName = new Map(
      roles.map((r) => {
        const permissions = permissionsOf(r.scopes);
        return [r.name, { name: r.name, scopes: r.scopes, operatorDependent: r.operatorDependent, permissions, sortedPermissions: [...permissions].sort() }];
      }),
    );
  }

  roles(): Role[] {
    return [...this.byName.values()];
  }

  find(name: string): Role | undefined {
    return this.byName.get(name);
  }

  allows(roleName: string, permission: Permission | string): boolean {
    return this.byName.get(roleName)?.permissions.has(permission as Permission) ?? false;
  }

  /**
   * The 403 of a missing permission, naming it (DECISIONS 5.2): the access guard's, and a service's
   * where the permission depends on the body (a content request's type).
   */
  assertAllows(roleName: string, permission: Permission | string): void {
    if (this.allows(roleName, permission)) return;
    throw forbidden(
      `This entry point needs the permission ${permission}, which the role "${roleName}" does not grant` +
        (this.byName.has(roleName) ? '.' : ' (the role is not in scopeAssignment.properties, so it reaches nothing).'),
    );
  }
}

function permissionsOf(scopes: Scope[]): ReadonlySet<Permission> {
  return new Set(scopes.flatMap((scope) => [...SCOPE_PERMISSIONS[scope]]));
}

export function isScope(token: string): token is Scope {
  return (ALL_SCOPES as readonly string[]).includes(token);
}
