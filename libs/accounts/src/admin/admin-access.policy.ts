import { createParamDecorator, ExecutionContext, Injectable } from '@nestjs/common';
import { AdministratorScope, DomainError, Principal, isOrgId, notFound } from '@app/common';
import { AuditLog, AuditRepository } from '@app/audit';
import { Organization, OrganizationService } from '../organizations/organization.service';

/**
 * A refusal by the access policy: 403 for a caller that is no administrator, 404 for an organization
 * administrator naming another organization. Answered like any DomainError, after it is written to
 * the audit log (`admin.access_denied`).
 */
export class AccessDeniedError extends DomainError {}

/** What the audit record of a refusal says about the request. */
export interface AdminRequest {
  method: string;
  /** The path as requested (the event's target), without its query. */
  path: string;
  /** The route pattern, e.g. /admin/v1/organizations/:org. */
  route?: string;
  sourceAddress?: string;
  correlationId?: string;
}

/** The request key under which the access guard leaves the organization an `organization` route acts in. */
export const ADMINISTERED_ORGANIZATION = 'administeredOrganization';

/** The organization an `organization`-scoped admin route acts in, as the access guard resolved it. */
export const AdministeredOrganization = createParamDecorator((_: unknown, ctx: ExecutionContext): Organization => {
  const organization = (ctx.switchToHttp().getRequest() as Record<string, unknown>)[ADMINISTERED_ORGANIZATION] as Organization | undefined;
  if (!organization) throw new Error('@AdministeredOrganization() is only available on routes declared @RequireAdministrator("organization").');
  return organization;
});

/** The request path without its query, at most this long, as the refusal's target. */
const MAX_TARGET = 256;

/**
 * Who may use /admin/v1 (DECISIONS 11): the platform administrator manages organizations and may act
 * in any of them; an organization administrator manages only its own organization, and another
 * organization's id answers 404 as if it did not exist (DECISIONS 2); anyone else gets 403. Routes
 * declare their scope with @RequireAdministrator and the global access guard calls `authorize`;
 * every refusal is recorded as a security event for the caller's organization, whose
 * administrators can see what its accounts attempted, while the refused organization learns nothing.
 */
@Injectable()
export class AdminAccessPolicy {
  constructor(
    private readonly organizations: OrganizationService,
    private readonly audit: AuditLog,
    private readonly auditEvents: AuditRepository,
  ) {}

  /** Throws 403/404 (recorded) unless `principal` may call a route of `scope`; answers the organization an `organization` route acts in. */
  async authorize(principal: Principal, scope: AdministratorScope, orgId: string | undefined, request: AdminRequest): Promise<Organization | undefined> {
    try {
      return await this.decide(principal, scope, orgId);
    } catch (error) {
      if (error instanceof AccessDeniedError) await this.recordDenied(principal, error, request);
      throw error;
    }
  }

  private async decide(principal: Principal, scope: AdministratorScope, orgId: string | undefined): Promise<Organization | undefined> {
    this.requireSomeAdministrator(principal);
    switch (scope) {
      case 'any':
        return undefined;
      case 'platform':
        if (!principal.platformAdministrator) throw new AccessDeniedError('FORBIDDEN', 'Only the platform administrator manages organizations.');
        return undefined;
      case 'organization-record':
        // The platform administrator may read the record of an organization that was deleted; one
        // that never existed is a 404.
        if (principal.platformAdministrator) {
          if (!isOrgId(orgId) || !(await this.isKnownOrganization(orgId))) throw notFound(`Organization "${String(orgId).slice(0, 64)}" does not exist.`);
          return undefined;
        }
        return this.organizationOf(principal, orgId);
      case 'organization':
        return this.organizationOf(principal, orgId);
    }
  }

  /** An organization that exists, or existed: a deleted organization keeps its audit events. */
  private async isKnownOrganization(orgId: string): Promise<boolean> {
    return (await this.organizations.findSettings(orgId)) !== undefined || (await this.auditEvents.hasEventsOf(orgId));
  }

  private async organizationOf(principal: Principal, orgId: string | undefined): Promise<Organization> {
    if (orgId === undefined) throw new Error('An organization-scoped admin route needs an :org path parameter.');
    if (!principal.platformAdministrator && principal.org !== orgId) {
      // The same answer as for an unknown organization (DECISIONS 2), but recorded.
      throw new AccessDeniedError('NOT_FOUND', `Organization "${orgId.slice(0, 64)}" does not exist.`);
    }
    return this.organizations.get(orgId);
  }

  private requireSomeAdministrator(principal: Principal): void {
    if (!principal.platformAdministrator && !principal.organizationAdministrator) {
      throw new AccessDeniedError(
        'FORBIDDEN',
        `The administration API needs an organization administrator; ${principal.name} is not one (an administrator sets organizationAdministrator: true on the ${principal.kind === 'user' ? 'user' : 'system account'}).`,
      );
    }
  }

  private async recordDenied(principal: Principal, error: AccessDeniedError, request: AdminRequest): Promise<void> {
    await this.audit.record({
      org: principal.org,
      actor: principal.name,
      action: 'admin.access_denied',
      target: request.path.slice(0, MAX_TARGET),
      outcome: 'failure',
      sourceAddress: request.sourceAddress,
      correlationId: request.correlationId,
      details: { method: request.method, route: request.route, status: error.code === 'FORBIDDEN' ? 403 : 404 },
    });
  }
}
