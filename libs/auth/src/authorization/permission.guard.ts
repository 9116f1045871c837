import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ACCESS_RULE, AccessRule, Principal, PRINCIPAL_KEY, forbidden } from '@app/common';
import { RoleCatalog } from './role-catalog';

/**
 * Global guard after the bearer guard: a route reached with a token must declare how it is
 * authorized (deny by default), and a @RequirePermission route needs a role that grants it. The role
 * is the live one of the caller's account or user, and the mapping the one loaded at boot, so a role
 * change or a restart with a changed file applies to live tokens at once (DECISIONS 3.4).
 */
@Injectable()
export class PermissionGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly roles: RoleCatalog,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const rule = this.reflector.getAllAndOverride<AccessRule | undefined>(ACCESS_RULE, [context.getHandler(), context.getClass()]);
    if (!rule) throw forbidden('This entry point declares no permission, so it is closed to everyone (deny by default).');
    if (rule.kind !== 'permission') return true;
    const principal = context.switchToHttp().getRequest<Record<string, unknown>>()[PRINCIPAL_KEY] as Principal;
    const missing = rule.permissions.find((permission) => !this.roles.allows(principal.role, permission));
    if (missing === undefined) return true;
    const known = this.roles.find(principal.role) !== undefined;
    throw forbidden(
      `This entry point needs the permission ${missing}, which the role "${principal.role}" does not grant` +
        (known ? '.' : ' (the role is not in scopeAssignment.properties, so it reaches nothing).'),
    );
  }
}
