import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { ADMINISTERED_ORGANIZATION, AdminAccessPolicy } from '@app/accounts';
import { accessRuleOf, Principal, PRINCIPAL_KEY, forbidden, routeFamilyOfRequest } from '@app/common';
import { RoleCatalog } from './role-catalog';

interface GuardedRequest extends Record<string, unknown> {
  method: string;
  url: string;
  ip?: string;
  params?: Record<string, string | undefined>;
  routeOptions?: { url?: string };
}

/**
 * Global guard after the bearer guard: every route declares how it is authorized (deny by default),
 * and this guard enforces the declaration.
 * - permission: the caller's role must grant each one. The role is the live one of the caller's
 *   account or user, and the mapping the one loaded at boot, so a role change or a restart with a
 *   changed file applies to live tokens at once (DECISIONS 3.4).
 *   A route with an organization in its path (the credential-management customer form,
 *   `/credential-management/customer/{org}/...`) also needs that organization to be the caller's:
 *   403 otherwise (DECISIONS 1).
 * - administrator: the administration API's rule (DECISIONS 11), decided and recorded by
 *   AdminAccessPolicy; an `organization` route finds its organization on the request afterwards.
 *   A route under /admin/ that declares anything else is refused, so a new admin route cannot ship
 *   without saying who may call it.
 */
@Injectable()
export class AccessGuard implements CanActivate {
  constructor(
    private readonly roles: RoleCatalog,
    private readonly administrators: AdminAccessPolicy,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const rule = accessRuleOf(context);
    if (!rule) throw forbidden('This entry point declares no permission, so it is closed to everyone (deny by default).');
    const request = context.switchToHttp().getRequest<GuardedRequest>();
    if (routeFamilyOfRequest(request).name === 'admin' && rule.kind !== 'administrator') {
      throw forbidden('This administration entry point declares no administrator rule, so it is closed to everyone (deny by default).');
    }
    if (rule.kind === 'public') return true;
    const principal = request[PRINCIPAL_KEY] as Principal;
    if (rule.kind === 'policy') {
      assertPathOrganization(request, principal);
      return true;
    }
    if (rule.kind === 'administrator') {
      const organization = await this.administrators.authorize(principal, rule.scope, request.params?.org, {
        method: request.method,
        path: request.url.split('?')[0],
        route: request.routeOptions?.url,
        sourceAddress: request.ip,
        correlationId: String(request.id),
      });
      if (organization) request[ADMINISTERED_ORGANIZATION] = organization;
      return true;
    }
    for (const permission of rule.permissions) this.roles.assertAllows(principal.role, permission);
    assertPathOrganization(request, principal);
    return true;
  }
}

/** The customer form of credential management names the organization in its path: it must be the caller's (DECISIONS 1). */
function assertPathOrganization(request: GuardedRequest, principal: Principal): void {
  const pathOrg = request.params?.org;
  if (pathOrg === undefined || routeFamilyOfRequest(request).name !== 'scim' || pathOrg === principal.org) return;
  throw forbidden(`Organization "${pathOrg}" in the path is not your organization; your token is for organization "${principal.org}".`);
}
