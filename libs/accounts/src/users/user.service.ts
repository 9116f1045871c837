import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Clock, DomainError, IfMatch, ScimSearch, invalidValue, notFound, preconditionFailed, uniqueness, isUuid } from '@app/common';
import { AppConfig } from '@app/config';
import { ChangeFeed, Database, Transaction } from '@app/persistence';
import { Actor, AuditLog } from '@app/audit';
import { AccountDependents } from '../account-dependents';
import { PLATFORM_ORG } from '../organizations/organization.service';
import { GrantChange, GrantPolicy, GrantTarget } from '../grant.policy';
import { parseCertificateUpload } from '../system-accounts/certificate-parser';
import { CertificateRow } from '../certificates/certificate-store';
import { PasswordHasher } from './password-hasher';
import {
  LockedUser,
  platformAdministratorConflict,
  UserChanges,
  UserEmail,
  UserNameParts,
  UserProfile,
  UserRepository,
  UserRow,
  UserSearchColumns,
  UserType,
} from './user.repository';

/** userName: 1-128 characters of A-Z, a-z, 0-9, ".", "_", "@" and "-" (DECISIONS 11). */
export const USER_NAME_PATTERN = /^[A-Za-z0-9._@-]{1,128}$/;

export interface CreateUserInput {
  userName: string;
  role: string;
  /** Default `cardholder`. */
  userType?: UserType;
  groups?: string[] | null;
  /** Cardholders only (DECISIONS 3.5); hashed here and never stored or logged as it is. */
  password?: string;
  name?: UserNameParts | null;
  displayName?: string | null;
  emails?: UserEmail[] | null;
  externalId?: string | null;
  profile?: UserProfile;
  /** Created disabled (a SCIM client may provision a user with `active: false`). */
  disabled?: boolean;
  /** The organization's administrator (DECISIONS 11). */
  organizationAdministrator?: boolean;
  /** The platform administrator person: a user of the `platform` organization, and only one (DECISIONS 11). */
  platformAdministrator?: boolean;
}

/**
 * PATCH and PUT input: the changes, plus userName and userType, which may be sent back unchanged but
 * never changed, and a new password (cardholders only; hashed here, never stored or logged as it is).
 */
export type UpdateUserInput = Omit<UserChanges, 'passwordHash'> & { userName?: string; userType?: UserType; password?: string };

const DAY_MS = 86_400_000;

/**
 * Users of the credential-management API, operators and cardholders (DECISIONS 3.5, 11): creation,
 * changes, certificate enrollment and passwords, each change audited. Audit details carry what
 * decides access (role, groups, disabled, type) and the names of other changed attributes, never a
 * password or its hash, and no personal data (names, e-mail addresses) in the append-only log.
 */
@Injectable()
export class UserService {
  constructor(
    private readonly users: UserRepository,
    private readonly hasher: PasswordHasher,
    private readonly audit: AuditLog,
    private readonly dependents: AccountDependents,
    private readonly db: Database,
    private readonly changes: ChangeFeed,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    private readonly grants: GrantPolicy,
  ) {}

  /** Creates the user; a userName taken in the organization is a 409 decided by the unique index. */
  async create(orgId: string, input: CreateUserInput, actor: Actor): Promise<UserRow> {
    if (!USER_NAME_PATTERN.test(input.userName)) {
      throw invalidValue('userName must be 1-128 characters of A-Z, a-z, 0-9, ".", "_", "@" and "-".');
    }
    const userType = input.userType ?? 'cardholder';
    if (input.password !== undefined && userType === 'operator') throw operatorPassword();
    if (input.platformAdministrator) requirePlatformOrganization(orgId);
    await this.grants.audited(orgId, actor, input.userName, async () =>
      this.grants.check(actor, 'user', undefined, {
        role: input.role,
        groups: input.groups ?? [],
        organizationAdministrator: input.organizationAdministrator,
        platformAdministrator: input.platformAdministrator,
      }),
    );
    // Hashed before the transaction: scrypt takes a while and must not hold a database connection.
    const passwordHash = input.password === undefined ? null : await this.hasher.hash(input.password);
    return this.db.transaction(async (tx) => {
      const user = await this.users.create(
        {
          id: randomUUID(),
          orgId,
          userName: input.userName,
          userType,
          role: input.role,
          groups: input.groups ?? [],
          name: input.name ?? null,
          displayName: input.displayName ?? null,
          emails: input.emails ?? [],
          externalId: input.externalId ?? null,
          profile: input.profile ?? {},
          disabled: input.disabled ?? false,
          organizationAdministrator: input.organizationAdministrator ?? false,
          platformAdministrator: input.platformAdministrator ?? false,
          passwordHash,
          now: this.clock.now(),
        },
        tx,
      );
      // The user's wallet and the rows of its group names (libs/credential-management), in this transaction.
      await this.dependents.userWritten(user, 'created', actor, tx);
      await this.audit.record(
        {
          org: orgId,
          actor: actor.name,
          action: 'user.create',
          target: user.id,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
          details: {
            userName: user.user_name,
            userType: user.user_type,
            role: user.role,
            groups: user.groups,
            hasPassword: user.has_password,
            ...(user.disabled ? { disabled: true } : {}),
            ...(user.organization_administrator ? { organizationAdministrator: true } : {}),
            ...(user.platform_administrator ? { platformAdministrator: true } : {}),
          },
        },
        tx,
      );
      return user;
    });
  }

  async get(orgId: string, id: string): Promise<UserRow> {
    const user = await this.find(orgId, id);
    if (!user) throw userNotFound(orgId, id);
    return user;
  }

  /** The user, or undefined when the organization has none with this id; within `tx` when given. */
  async find(orgId: string, id: string, tx?: Transaction): Promise<UserRow | undefined> {
    return isUuid(id) ? this.users.findInOrg(orgId, id, tx) : undefined;
  }

  list(orgId: string, offset: number, limit: number): Promise<{ rows: UserRow[]; total: number }> {
    return this.users.listInOrg(orgId, offset, limit);
  }

  /**
   * SCIM lists and `.search` (USER_SEARCH_DEFINITION); `groups` limits an Operator Dependent caller;
   * `related` adds another library's columns to each row (UserSearchColumns).
   */
  search<Related extends object = object>(
    orgId: string,
    search: ScimSearch,
    groups?: readonly string[],
    related?: UserSearchColumns,
  ): Promise<{ rows: (UserRow & Related)[]; total: number }> {
    return this.users.search<Related>(orgId, search, groups, related);
  }

  /** `ifMatch` (SCIM PUT and PATCH): the change applies only to that version, checked under the row lock (else 412). */
  /** Cardholders and operators (Stats); `groups` limits an Operator Dependent caller. */
  countByType(orgId: string, groups?: readonly string[]): Promise<Record<UserType, number>> {
    return this.users.countByType(orgId, groups);
  }

  async update(orgId: string, id: string, input: UpdateUserInput, actor: Actor, ifMatch?: IfMatch): Promise<UserRow> {
    const { userName, userType, password, ...changes } = input;
    const current = await this.get(orgId, id);
    if (userName !== undefined && userName !== current.user_name) {
      throw new DomainError('MUTABILITY', `userName cannot be changed (it is "${current.user_name}"); create a new user instead.`);
    }
    if (userType !== undefined && userType !== current.user_type) {
      throw new DomainError('MUTABILITY', `userType cannot be changed (it is "${current.user_type}"); create a new user instead.`);
    }
    if (password !== undefined && current.user_type === 'operator') throw operatorPassword();
    if (changes.platformAdministrator) requirePlatformOrganization(orgId);
    // Hashed before the transaction: scrypt takes a while and must not hold a database connection.
    const passwordHash = password === undefined ? undefined : await this.hasher.hash(password);
    const updated = await this.grants.audited(orgId, actor, id, () =>
      this.db.transaction(async (tx) => {
        await this.checkGrant(
          orgId,
          id,
          actor,
          {
            role: changes.role,
            groups: changes.groups === undefined ? undefined : (changes.groups ?? []),
            organizationAdministrator: changes.organizationAdministrator,
            platformAdministrator: changes.platformAdministrator,
          },
          tx,
        );
        if (changes.platformAdministrator) await this.refuseSecondPlatformAdministrator(id, tx);
        const result = await this.users.update(orgId, id, { ...changes, passwordHash }, this.clock.now(), tx).catch(platformAdministratorConflict);
        if (!result) throw userNotFound(orgId, id);
        const { reenabled, previousVersion, previousRole, promotedToAdministrator, ...user } = result;
        if (ifMatch && !ifMatch.matches(previousVersion)) throw preconditionFailed(`User ${id}`, previousVersion);
        await this.dependents.userWritten(user, 'updated', actor, tx);
        if (password !== undefined) await this.dependents.passwordChanged(user, actor, tx);
        // A promotion takes effect at the next sign-in (DECISIONS 3.4): a live token was got with the
        // factors the old role needed (a cardholder's password alone), never enough for the new one.
        // Becoming an administrator is a promotion too (administrators sign in with stronger factors, 3.5).
        const promoted = (user.role !== previousRole && this.grants.widens(previousRole, user.role)) || promotedToAdministrator;
        const revokedTokens = reenabled || promoted ? await this.dependents.revokeTokens({ userId: user.id }, this.clock.now(), tx) : 0;
        const details: Record<string, unknown> = {
          userName: user.user_name,
          changed: [...Object.keys(changes), ...(password === undefined ? [] : ['password'])],
        };
        if (changes.role !== undefined) details.role = user.role;
        if (changes.groups !== undefined) details.groups = user.groups;
        if (changes.disabled !== undefined) details.disabled = user.disabled;
        if (changes.organizationAdministrator !== undefined) details.organizationAdministrator = user.organization_administrator;
        if (changes.platformAdministrator !== undefined) details.platformAdministrator = user.platform_administrator;
        if (revokedTokens > 0) details.revokedTokens = revokedTokens;
        await this.audit.record(
          {
            org: orgId,
            actor: actor.name,
            action: 'user.update',
            target: id,
            outcome: 'success',
            sourceAddress: actor.sourceAddress,
            correlationId: actor.correlationId,
            details,
          },
          tx,
        );
        // Role, groups and the disabled flag apply to the user's live tokens at once, on every instance;
        // re-enabling revoked the tokens the user had while disabled (see the repository).
        this.changes.publishOnCommit(tx, 'subject', [id]);
        return user;
      }),
    );
    return updated;
  }

  /**
   * Deletes the user; its certificates, tokens, assertion jtis and wallet go with it. While the user
   * holds something in another library (devices that are not TERMINATED) the delete is a 409 naming
   * it, unless `force`, which first has the owners release it (devices terminated, audited there),
   * all in one transaction under the user's row lock (CREDENTIAL-MANAGEMENT.md "Users").
   */
  async delete(orgId: string, id: string, actor: Actor, options: { force?: boolean } = {}): Promise<void> {
    if (!isUuid(id)) throw userNotFound(orgId, id);
    await this.grants.audited(orgId, actor, id, () =>
      this.db.transaction(async (tx) => {
        const locked = await this.users.lockInOrg(orgId, id, tx);
        if (!locked) throw userNotFound(orgId, id);
        this.grants.check(actor, 'user', grantTarget(locked), {});
        const held = await this.dependents.describeUserHoldings(orgId, id, tx);
        if (held.length > 0 && !options.force) {
          throw new DomainError(
            'CONFLICT',
            `User "${locked.user_name}" holds ${held.join('; ')}. Terminate them first, or delete with ?force=true, which terminates them and revokes their credentials.`,
          );
        }
        if (held.length > 0) await this.dependents.releaseUserHoldings(orgId, id, actor, tx);
        const user = await this.users.delete(orgId, id, tx);
        if (!user) throw userNotFound(orgId, id);
        await this.audit.record(
          {
            org: orgId,
            actor: actor.name,
            action: 'user.delete',
            target: id,
            outcome: 'success',
            sourceAddress: actor.sourceAddress,
            correlationId: actor.correlationId,
            details: { userName: user.user_name, ...(held.length > 0 ? { forced: true } : {}) },
          },
          tx,
        );
        this.changes.publishOnCommit(tx, 'subject', [id]);
      }),
    );
  }

  /**
   * Group membership, for the Groups resource (libs/credential-management owns the groups; the
   * names live on the users, where tokens and Operator Dependent reach read them). The writes run in
   * the caller's transaction and answer the ids of the users that changed: the caller publishes
   * 'subject' for them after its commit, so their live tokens see the new groups.
   */
  groupMembers(orgId: string, names: readonly string[]): Promise<Map<string, { id: string; userName: string }[]>> {
    return this.users.groupMembers(orgId, names);
  }

  async setGroupMembers(orgId: string, name: string, userIds: readonly string[], now: Date, tx: Transaction): Promise<string[]> {
    const unknown = userIds.length === 0 ? [] : await this.users.unknownIds(orgId, userIds, tx);
    if (unknown.length > 0) {
      throw invalidValue(
        `Invalid group: members names ${unknown.slice(0, 5).join(', ')}, which ${unknown.length === 1 ? 'is not a user' : 'are not users'} of organization "${orgId}".`,
      );
    }
    return this.users.setGroupMembers(orgId, name, userIds, now, tx);
  }

  renameGroup(orgId: string, from: string, to: string, now: Date, tx: Transaction): Promise<string[]> {
    return this.users.renameGroup(orgId, from, to, now, tx);
  }

  removeGroup(orgId: string, name: string, now: Date, tx: Transaction): Promise<string[]> {
    return this.users.removeGroup(orgId, name, now, tx);
  }

  /** Enrolls a certificate for jwt-bearer sign-in (DECISIONS 3.5), with the upload rules of DECISIONS 4. */
  async enrollCertificate(orgId: string, id: string, pem: string, actor: Actor): Promise<CertificateRow> {
    const user = await this.get(orgId, id);
    const now = this.clock.now();
    const parsed = parseCertificateUpload(pem, now);
    const expiresAt = new Date(now.getTime() + this.config.certificateLifetimeDays * DAY_MS);
    const enrolled = await this.withCredentialLock(orgId, id, actor, async (_user, tx) => {
      const row = await this.users.addCertificate(user.id, parsed, now, expiresAt, tx);
      await this.audit.record(
        {
          org: orgId,
          actor: actor.name,
          action: 'user.certificate.enroll',
          target: id,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
          details: { userName: user.user_name, thumbprint: row.thumbprint, subject: row.subject },
        },
        tx,
      );
      // The user's answers list its certificates; every instance drops what it kept of the user.
      this.changes.publishOnCommit(tx, 'subject', [id]);
      return row;
    });
    return enrolled;
  }

  /** Sets or replaces a cardholder's password (at least 12 characters, DECISIONS 3.5). */
  async setPassword(orgId: string, id: string, password: string, actor: Actor): Promise<UserRow> {
    const user = await this.get(orgId, id);
    if (user.user_type === 'operator') throw operatorPassword();
    const passwordHash = await this.hasher.hash(password);
    return this.withCredentialLock(orgId, id, actor, (_user, tx) => this.writePasswordHash(orgId, id, passwordHash, actor, tx));
  }

  /**
   * Stores a password hash (PasswordHasher.hash) in the caller's transaction, which holds the user's
   * row lock: the person's sessions end (AccountDependents), audited `user.password.set`. The
   * enrolment page (DECISIONS 14.4) sets it in the transaction that uses the link.
   */
  async writePasswordHash(orgId: string, id: string, passwordHash: string, actor: Actor, tx: Transaction): Promise<UserRow> {
    const updated = await this.users.setPasswordHash(orgId, id, passwordHash, this.clock.now(), tx);
    if (!updated) throw userNotFound(orgId, id);
    await this.dependents.passwordChanged(updated, actor, tx);
    await this.audit.record(
      {
        org: orgId,
        actor: actor.name,
        action: 'user.password.set',
        target: id,
        outcome: 'success',
        sourceAddress: actor.sourceAddress,
        correlationId: actor.correlationId,
        details: { userName: updated.user_name },
      },
      tx,
    );
    this.changes.publishOnCommit(tx, 'subject', [id]);
    return updated;
  }

  /**
   * An administrator's "must enrol a second factor" mark (DECISIONS 14.5): at their next sign-in, after
   * a right password, a person with the mark and no second factor enrols one before any session opens.
   * Under the grant rules of a change of the person's credential (5.3), audited `user.factors.require`.
   * Answers whether the person was not marked already.
   */
  async requireSecondFactor(orgId: string, id: string, actor: Actor): Promise<{ id: string; userName: string; changed: boolean }> {
    return this.withCredentialLock(orgId, id, actor, async (user, tx) => {
      const changed = await this.users.setMustEnrolSecondFactor(orgId, id, true, this.clock.now(), tx);
      await this.audit.record(
        {
          org: orgId,
          actor: actor.name,
          action: 'user.factors.require',
          target: id,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
          details: { userName: user.user_name, alreadyMarked: !changed },
        },
        tx,
      );
      return { id, userName: user.user_name, changed };
    });
  }

  /** Clears the mark in the caller's transaction (the person enrolled a second factor, DECISIONS 14.5). */
  clearSecondFactorMark(orgId: string, id: string, tx: Transaction): Promise<boolean> {
    return this.users.setMustEnrolSecondFactor(orgId, id, false, this.clock.now(), tx);
  }

  /**
   * Runs `work` in a transaction that holds the user's row lock, for a change of a credential of the
   * user (a certificate, a password, or an authenticator that libs/delivery-gateway keeps): the grant rules apply
   * (DECISIONS 5.3, `account-above-own`; a refusal is audited), and
   * a disable or delete of the user either waits for the change (and its listeners see it) or comes
   * first (and `work` sees `disabled`, or the user is gone: 404).
   */
  async withCredentialLock<T>(orgId: string, id: string, actor: Actor, work: (user: LockedUser, tx: Transaction) => Promise<T>): Promise<T> {
    if (!isUuid(id)) throw userNotFound(orgId, id);
    return this.grants.audited(orgId, actor, id, () =>
      this.db.transaction(async (tx) => {
        const locked = await this.users.lockInOrg(orgId, id, tx);
        if (!locked) throw userNotFound(orgId, id);
        this.grants.check(actor, 'user', grantTarget(locked), {});
        return work(locked, tx);
      }),
    );
  }

  /**
   * The grant rules (DECISIONS 5.3) for a change of an existing user by a request's caller, under
   * the user's row lock so that a concurrent change of its role cannot slip between check and write.
   */
  private async checkGrant(orgId: string, id: string, actor: Actor, change: GrantChange, tx: Transaction): Promise<void> {
    if (!actor.principal) return;
    const locked = await this.users.lockInOrg(orgId, id, tx);
    if (!locked) throw userNotFound(orgId, id);
    this.grants.check(actor, 'user', grantTarget(locked), change);
  }

  /**
   * Makes the `platform` organization's user `id` the platform administrator person, taking the role
   * from whoever held it, in one transaction (the command line's break-glass hand-over, DECISIONS 11).
   * Like every promotion it revokes the new holder's live tokens; the former holder's demotion
   * applies to their live tokens at once.
   */
  async designatePlatformAdministrator(id: string, actor: Actor): Promise<UserRow> {
    if (!isUuid(id)) throw userNotFound(PLATFORM_ORG, id);
    return this.db.transaction(async (tx) => {
      const now = this.clock.now();
      const { user, previous } = await this.users.designatePlatformAdministrator(PLATFORM_ORG, id, now, tx).catch(platformAdministratorConflict);
      if (!user) throw userNotFound(PLATFORM_ORG, id);
      const revokedTokens = previous.includes(id) ? 0 : await this.dependents.revokeTokens({ userId: id }, now, tx);
      const record = (target: string, details: Record<string, unknown>) =>
        this.audit.record(
          {
            org: PLATFORM_ORG,
            actor: actor.name,
            action: 'user.update',
            target,
            outcome: 'success',
            sourceAddress: actor.sourceAddress,
            correlationId: actor.correlationId,
            details,
          },
          tx,
        );
      for (const former of previous) await record(former, { changed: ['platformAdministrator'], platformAdministrator: false });
      await record(id, {
        userName: user.user_name,
        changed: ['platformAdministrator'],
        platformAdministrator: true,
        ...(revokedTokens > 0 ? { revokedTokens } : {}),
      });
      this.changes.publishOnCommit(tx, 'subject', [id, ...previous]);
      return user;
    });
  }

  /** A clear 409 naming who holds the role; the unique index still decides between concurrent writes. */
  private async refuseSecondPlatformAdministrator(id: string, tx: Transaction): Promise<void> {
    const holder = await this.users.findPlatformAdministrator(tx);
    if (holder && holder.id !== id) {
      throw uniqueness(
        `"${holder.user_name}" is the platform administrator, and there is only one: remove it from them first (PATCH platformAdministrator: false), or hand it over with the command line (user platform-administrator).`,
      );
    }
  }
}

function requirePlatformOrganization(orgId: string): void {
  if (orgId !== PLATFORM_ORG) {
    throw invalidValue(
      `platformAdministrator is only for a user of the platform organization ("${PLATFORM_ORG}"), not of "${orgId}"; make this user organizationAdministrator instead.`,
    );
  }
}

/** What the grant rules compare of a user, read under its row lock. */
function grantTarget(locked: LockedUser): GrantTarget {
  return { id: locked.id, role: locked.role, groups: locked.groups, platformAdministrator: locked.platform_administrator };
}

function operatorPassword(): DomainError {
  return invalidValue('password is for cardholders only: an operator signs in with an enrolled certificate (POST .../users/{id}/certificates).');
}

function userNotFound(orgId: string, id: string): DomainError {
  return notFound(`User "${id.slice(0, 64)}" does not exist in organization "${orgId}".`);
}
