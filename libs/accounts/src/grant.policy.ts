import { Injectable } from '@nestjs/common';
import { Actor, DomainError, Principal } from '@app/common';
import { AuditLog } from '@app/audit';

/** What the grant rules need to know of a role, from the mapping loaded at boot (DECISIONS 5.1). */
export interface RoleFacts {
  scopes: readonly string[];
  operatorDependent: boolean;
}

/** Finds a role in the loaded mapping; undefined for a role the mapping does not name. */
export type RoleLookup = (role: string) => RoleFacts | undefined;

/**
 * The scope that reaches only its holder's own user (Self): giving it widens nobody's reach over
 * others, so it is not compared (DECISIONS 5.3).
 */
const SELF_SCOPE = 'Scope.device';

/** The rules of DECISIONS 5.3, each named in the 403 and in the audit event of a refusal. */
export type GrantRule = 'role-beyond-own' | 'account-above-own' | 'own-role-or-groups' | 'group-not-own' | 'platform-administrator';

/** A refusal by the grant rules: 403, recorded in the audit log once the change has rolled back. */
export class GrantDenied extends DomainError {
  constructor(
    readonly rule: GrantRule,
    detail: string,
    readonly details: Record<string, unknown>,
  ) {
    super('FORBIDDEN', `${detail} (DECISIONS 5.3, rule "${rule}")`);
  }
}

/** A user or system account as it is before the change, read under its row lock. */
export interface GrantTarget {
  /** Row id: compared with the caller's own to recognise a change of oneself. */
  id: string;
  role: string;
  /** Users only; system accounts have no groups. */
  groups?: readonly string[];
  /** Users only: the one person who is the platform administrator (DECISIONS 11). */
  platformAdministrator?: boolean;
}

/** The role, groups and administrator flag a write would give; undefined where it leaves them. */
export interface GrantChange {
  role?: string;
  groups?: readonly string[];
  organizationAdministrator?: boolean;
  /** Users only: designating (or removing) the platform administrator person. */
  platformAdministrator?: boolean;
}

/**
 * What a caller may grant (DECISIONS 5.3): nobody gives a role whose operator scopes it does not
 * hold, nobody changes, deletes or sets a credential of an account whose role is above its own,
 * nobody changes its own role, groups or administrator flag, and an Operator Dependent caller adds
 * and removes only its own groups, and only the platform administrator designates the platform
 * administrator person or touches them; the platform administrator is bound only by the rule on itself.
 * Users and system accounts call it for every write an HTTP caller makes (the Actor carries its
 * principal); the command line and the service itself act without a principal and are not limited
 * (whoever runs them holds the database).
 */
@Injectable()
export class GrantPolicy {
  private lookup?: RoleLookup;

  constructor(private readonly audit: AuditLog) {}

  /** libs/auth hands over the mapping it loads at boot (it depends on this library, not the reverse). */
  useRoles(lookup: RoleLookup): void {
    this.lookup = lookup;
  }

  /**
   * Throws GrantDenied unless the caller may make `change` to `target` (undefined: a new account).
   * `kind` says whether target and caller ids are comparable (a user's id is never an account's).
   */
  check(actor: Actor, kind: Principal['kind'], target: GrantTarget | undefined, change: GrantChange): void {
    const principal = actor.principal;
    if (!principal) return;
    const own = this.facts(principal.role);
    const self = target !== undefined && principal.kind === kind && principal.subjectId === target.id;
    const roleChanges = change.role !== undefined && change.role !== target?.role;
    const groupsChange = change.groups !== undefined && !sameSet(change.groups, target?.groups ?? []);
    const flagChanges =
      self &&
      ((change.organizationAdministrator !== undefined && change.organizationAdministrator !== principal.organizationAdministrator) ||
        (change.platformAdministrator !== undefined && change.platformAdministrator !== principal.platformAdministrator));
    if (self && (roleChanges || groupsChange || flagChanges)) {
      throw new GrantDenied('own-role-or-groups', 'Nobody changes their own role, groups or administrator flag; another administrator must.', {
        ...(roleChanges ? { role: change.role } : {}),
        ...(groupsChange ? { groups: change.groups } : {}),
        ...(flagChanges ? { administratorFlag: true } : {}),
      });
    }
    // The platform administrator is where every grant starts (it creates the organizations and
    // their first administrators): beyond its own role and flag it may give anything.
    if (principal.platformAdministrator) return;
    const designates = change.platformAdministrator !== undefined && change.platformAdministrator !== (target?.platformAdministrator ?? false);
    if (designates || target?.platformAdministrator) {
      throw new GrantDenied(
        'platform-administrator',
        designates
          ? 'Only the platform administrator designates the platform administrator person.'
          : 'This user is the platform administrator: only the platform administrator changes them, their credentials or their sign-in.',
        designates ? { platformAdministrator: change.platformAdministrator } : {},
      );
    }
    if (target && !this.mayGive(own, target.role)) {
      throw new GrantDenied(
        'account-above-own',
        `This account has the role "${target.role}", which grants scopes your role "${principal.role}" does not hold, so you cannot change it; ask an administrator whose role holds them.`,
        { targetRole: target.role },
      );
    }
    if (roleChanges && !this.mayGive(own, change.role!)) {
      throw new GrantDenied(
        'role-beyond-own',
        `The role "${change.role}" grants scopes your role "${principal.role}" does not hold${own?.operatorDependent ? ' or reaches beyond your groups' : ''}; you may give only roles within your own.`,
        { role: change.role },
      );
    }
    if (own?.operatorDependent && change.groups !== undefined) this.checkGroups(principal, target?.groups, change.groups);
  }

  /**
   * Whether `to` grants a scope `from` does not, or reaches beyond Operator Dependent limits `from`
   * had. Without the mapping (the command line does not load it) any change counts as one.
   */
  widens(from: string, to: string): boolean {
    if (!this.lookup) return true;
    const before = this.lookup(from);
    const after = this.lookup(to);
    if (!after) return true;
    if (!before) return after.scopes.length > 0;
    return after.scopes.some((scope) => !before.scopes.includes(scope)) || (before.operatorDependent && !after.operatorDependent);
  }

  /**
   * Runs a write that calls `check`; a refusal is recorded in the audit log after the write's
   * transaction has rolled back (so the record survives it), then rethrown.
   */
  async audited<T>(orgId: string, actor: Actor, target: string, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (error instanceof GrantDenied) {
        await this.audit.record({
          org: orgId,
          actor: actor.name,
          action: 'authorization.grant_denied',
          target,
          outcome: 'failure',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
          details: { rule: error.rule, ...error.details },
        });
      }
      throw error;
    }
  }

  /** An Operator Dependent caller adds and removes only its own groups, and creates users inside them. */
  private checkGroups(principal: Principal, before: readonly string[] | undefined, after: readonly string[]): void {
    const previous = before ?? [];
    const changed = [...after.filter((g) => !previous.includes(g)), ...previous.filter((g) => !after.includes(g))];
    const foreign = [...new Set(changed.filter((group) => !principal.groups.includes(group)))];
    if (foreign.length > 0) {
      throw new GrantDenied(
        'group-not-own',
        `Your role is Operator Dependent: you may add or remove only your own groups (${principal.groups.join(', ') || 'none'}), not ${foreign.join(', ')}.`,
        { groups: foreign },
      );
    }
    if (before === undefined && !after.some((group) => principal.groups.includes(group))) {
      throw new GrantDenied(
        'group-not-own',
        `Your role is Operator Dependent: a user you create must be in one of your groups (${principal.groups.join(', ') || 'none'}).`,
        { groups: after },
      );
    }
  }

  /**
   * A caller may give `role` when every scope of it but Scope.device is one of its own, and, when the
   * caller is Operator Dependent, when the role is too or reaches nobody else (Scope.device alone).
   * A role the mapping does not name reaches nothing today, but would reach whatever a later mapping
   * gives it, so only a caller holding every operator scope may give it.
   */
  private mayGive(own: RoleFacts | undefined, role: string): boolean {
    const given = this.facts(role);
    const reach = given ? given.scopes.filter((scope) => scope !== SELF_SCOPE) : OPERATOR_SCOPES;
    if (reach.length === 0) return true;
    if (!own || (own.operatorDependent && !given?.operatorDependent)) return false;
    return reach.every((scope) => own.scopes.includes(scope));
  }

  private facts(role: string): RoleFacts | undefined {
    if (!this.lookup) throw new Error('GrantPolicy has no role mapping: the module that loads it (AuthModule) must call useRoles at start.');
    return this.lookup(role);
  }
}

/** The scopes that reach other users and devices (DECISIONS 5.2). */
const OPERATOR_SCOPES = ['Scope.device_management', 'Scope.helpdesk', 'Scope.configuration_operator'];

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const left = new Set(a);
  const right = new Set(b);
  return left.size === right.size && [...left].every((item) => right.has(item));
}
