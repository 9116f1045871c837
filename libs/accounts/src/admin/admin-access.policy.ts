import { Injectable } from '@nestjs/common';
import { DomainError, Principal, isOrgId, notFound } from '@app/common';
import { AuditService } from '../audit/audit.service';
import { Organization, OrganizationService } from '../organizations/organization.service';

/**
 * A refusal by the access policy: 403 for a caller that is no administrator, 404 for an organization
 * administrator naming another organization. Answered like any DomainError; the admin controllers'
 * AccessDeniedAuditInterceptor also writes it to the audit log (`admin.access_denied`).
 */
export class AccessDeniedError extends DomainError {}

/**
 * Who may use /admin/v1 (DECISIONS 11): the platform administrator manages organizations and may act
 * in any of them; an organization administrator manages only its own organization, and another
 * organization's id answers 404 as if it did not exist (DECISIONS 2); anyone else gets 403.
 */
@Injectable()
export class AdminAccessPolicy {
  constructor(
    private readonly organizations: OrganizationService,
    private readonly audit: AuditService,
  ) {}

  requirePlatformAdministrator(principal: Principal): void {
    if (!principal.platformAdministrator) {
      this.requireSomeAdministrator(principal);
      throw new AccessDeniedError('FORBIDDEN', 'Only the platform administrator manages organizations.');
    }
  }

  /** Returns the organization the caller may administer, or throws 403/404. */
  async requireOrganizationAccess(principal: Principal, orgId: string): Promise<Organization> {
    this.requireSomeAdministrator(principal);
    if (!principal.platformAdministrator && principal.org !== orgId) {
      // The same answer as for an unknown organization (DECISIONS 2), but audited.
      throw new AccessDeniedError('NOT_FOUND', `Organization "${orgId}" does not exist.`);
    }
    return this.organizations.get(orgId);
  }

  /**
   * Reading an organization's audit events: as requireOrganizationAccess, except that the platform
   * administrator may also read those of an organization that was deleted, since they are kept as
   * the record of the deletion (DECISIONS 11). An organization that never existed is a 404.
   */
  async requireAuditAccess(principal: Principal, orgId: string): Promise<void> {
    if (principal.platformAdministrator) {
      if (!isOrgId(orgId) || !(await this.audit.isKnownOrganization(orgId))) throw notFound(`Organization "${String(orgId).slice(0, 64)}" does not exist.`);
      return;
    }
    await this.requireOrganizationAccess(principal, orgId);
  }

  /** Any administrator: the platform administrator or an organization administrator. */
  requireAdministrator(principal: Principal): void {
    this.requireSomeAdministrator(principal);
  }

  private requireSomeAdministrator(principal: Principal): void {
    if (!principal.platformAdministrator && !principal.organizationAdministrator) {
      throw new AccessDeniedError(
        'FORBIDDEN',
        `The administration API needs an organization administrator; ${principal.name} is not one (set organizationAdministrator: true on the system account).`,
      );
    }
  }
}
