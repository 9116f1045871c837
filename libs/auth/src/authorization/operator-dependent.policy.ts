import { Injectable } from '@nestjs/common';
import { Principal, notFound } from '@app/common';
import { RoleCatalog } from './role-catalog';

/**
 * Operator Dependent roles (interface, Authentication 12; DECISIONS 5.2): a caller whose role is
 * marked so reaches only the users and devices of its own groups. Resources call this policy when
 * they read or change a user or device; an object outside the caller's groups answers 404, as if it
 * did not exist (DECISIONS 2).
 */
@Injectable()
export class OperatorDependentPolicy {
  constructor(private readonly roles: RoleCatalog) {}

  /** The groups the caller is limited to, or undefined when its role is not Operator Dependent. */
  groupsOf(principal: Principal): readonly string[] | undefined {
    return this.roles.find(principal.role)?.operatorDependent ? principal.groups : undefined;
  }

  canReach(principal: Principal, target: { groups: readonly string[] }): boolean {
    const groups = this.groupsOf(principal);
    return groups === undefined || target.groups.some((group) => groups.includes(group));
  }

  assertCanReach(principal: Principal, target: { groups: readonly string[] }, description: string): void {
    if (!this.canReach(principal, target)) throw notFound(`${description} does not exist.`);
  }
}
