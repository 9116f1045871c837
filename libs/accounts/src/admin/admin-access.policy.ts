import { Injectable } from '@nestjs/common';
import { Principal, forbidden, notFound } from '@app/common';
import { Organization, OrganizationService } from '../organizations/organization.service';

/**
 * Who may use /admin/v1 (DECISIONS 11): the platform administrator manages organizations and may act
 * in any of them; an organization administrator manages only its own organization, and another
 * organization's id answers 404 as if it did not exist (DECISIONS 2); anyone else gets 403.
 */
@Injectable()
export class AdminAccessPolicy {
  constructor(private readonly organizations: OrganizationService) {}

  requirePlatformAdministrator(principal: Principal): void {
    if (!principal.platformAdministrator) {
      this.requireSomeAdministrator(principal);
      throw forbidden('Only the platform administrator manages organizations.');
    }
  }

  /** Returns the organization the caller may administer, or throws 403/404. */
  async requireOrganizationAccess(principal: Principal, orgId: string): Promise<Organization> {
    this.requireSomeAdministrator(principal);
    if (!principal.platformAdministrator && principal.org !== orgId) {
      throw notFound(`Organization "${orgId}" does not exist.`);
    }
    return this.organizations.get(orgId);
  }

  /** Any administrator: the platform administrator or an organization administrator. */
  requireAdministrator(principal: Principal): void {
    this.requireSomeAdministrator(principal);
  }

  private requireSomeAdministrator(principal: Principal): void {
    if (!principal.platformAdministrator && !principal.organizationAdministrator) {
      throw forbidden(
        `The administration API needs an organization administrator; ${principal.name} is not one (set organizationAdministrator: true on the system account).`,
      );
    }
  }
}
