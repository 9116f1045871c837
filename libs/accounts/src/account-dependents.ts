import { Injectable } from '@nestjs/common';
import { Actor } from '@app/common';
import { Transaction } from '@app/persistence';
import type { OrganizationSettings } from './organizations/organization-settings';
import type { UserRow } from './users/user.repository';

/** What an organization holds in another library's tables, named in the 409 of a delete without force. */
export interface Holding {
  /** Key in the delete's answer and audit details, e.g. `devices`. */
  key: string;
  singular: string;
  plural: string;
  count(orgId: string, tx: Transaction): Promise<number>;
}

/** What a user holds in another library (devices), named in the 409 of a delete without force. */
export interface UserHolding {
  /** A phrase naming what the user holds (e.g. `devices a, b (ISSUED, ON_HOLD)`), or undefined when nothing. */
  describe(orgId: string, userId: string, tx: Transaction): Promise<string | undefined>;
  /** Gives it up before a forced delete (devices are terminated, their credentials revoked), audited by its owner. */
  release(orgId: string, userId: string, actor: Actor, tx: Transaction): Promise<void>;
}

/** Told of every user created or changed, in the transaction of the change, with who changed it (for the listener's own audit events). */
export type UserWriteListener = (user: UserRow, change: 'created' | 'updated', actor: Actor, tx: Transaction) => Promise<void>;

/** Told when a user's password is set or replaced, in the transaction of the change. */
export type PasswordChangeListener = (user: UserRow, actor: Actor, tx: Transaction) => Promise<void>;

/** Told of an organization's settings (defaults filled in) after each change of them, in the transaction of the change. */
export type SettingsChangeListener = (orgId: string, settings: OrganizationSettings, actor: Actor, tx: Transaction) => Promise<void>;

/** When each of the given users last signed in (absent: no sign-in on record). */
export type LastSignInReader = (orgId: string, userIds: readonly string[]) => Promise<Map<string, Date>>;

/**
 * The ports through which accounts asks other libraries about data they own (each library owns its
 * tables; docs/decisions.md "Table ownership"). A library registers its side when its module starts
 * (DeviceStoreModule, AuthStoreModule); the service and the command line load those modules, so a
 * deletion always sees every holding.
 */
@Injectable()
export class AccountDependents {
  private readonly holdings: Holding[] = [];
  private readonly removers: ((orgId: string, tx: Transaction) => Promise<void>)[] = [];
  private readonly tokenRevokers: ((subject: TokenSubject, at: Date, tx: Transaction) => Promise<number>)[] = [];
  private readonly userHoldings: UserHolding[] = [];
  private readonly userWriteListeners: UserWriteListener[] = [];
  private readonly passwordChangeListeners: PasswordChangeListener[] = [];
  private readonly settingsChangeListeners: SettingsChangeListener[] = [];
  private lastSignInReader?: LastSignInReader;

  /** Counted before a delete without force; its rows go with the organization (ON DELETE CASCADE). */
  registerHolding(holding: Holding): void {
    this.holdings.push(holding);
  }

  /** Removes what references the organization without a foreign key (e.g. lockout counters keyed by name). */
  registerRemover(remove: (orgId: string, tx: Transaction) => Promise<void>): void {
    this.removers.push(remove);
  }

  /** Revokes the live tokens of a system account or user (at re-enable); answers how many. */
  registerTokenRevoker(revoke: (subject: TokenSubject, at: Date, tx: Transaction) => Promise<number>): void {
    this.tokenRevokers.push(revoke);
  }

  /** A user's holding in another library: a user delete without force is refused while it holds any. */
  registerUserHolding(holding: UserHolding): void {
    this.userHoldings.push(holding);
  }

  /**
   * Credential management keeps each user's wallet and the rows of the group names users carry;
   * delivery-gateway removes a disabled user's authenticators.
   */
  registerUserWriteListener(listener: UserWriteListener): void {
    this.userWriteListeners.push(listener);
  }

  /** libs/auth ends the person's browser sessions when their password is set, changed or replaced (DECISIONS 14.2). */
  registerPasswordChangeListener(listener: PasswordChangeListener): void {
    this.passwordChangeListeners.push(listener);
  }

  /** libs/auth ends the sessions of people who signed in with a password alone when the organization no longer allows it (DECISIONS 14.2). */
  registerSettingsChangeListener(listener: SettingsChangeListener): void {
    this.settingsChangeListeners.push(listener);
  }

  /** libs/auth answers when each person last signed in (from its record of sessions). */
  registerLastSignInReader(reader: LastSignInReader): void {
    this.lastSignInReader = reader;
  }

  /** Each user's last sign-in, by id; empty when no session store is loaded (the command line). */
  lastSignIns(orgId: string, userIds: readonly string[]): Promise<Map<string, Date>> {
    return this.lastSignInReader ? this.lastSignInReader(orgId, userIds) : Promise.resolve(new Map());
  }

  async settingsChanged(orgId: string, settings: OrganizationSettings, actor: Actor, tx: Transaction): Promise<void> {
    for (const listener of this.settingsChangeListeners) await listener(orgId, settings, actor, tx);
  }

  async passwordChanged(user: UserRow, actor: Actor, tx: Transaction): Promise<void> {
    for (const listener of this.passwordChangeListeners) await listener(user, actor, tx);
  }

  async describeUserHoldings(orgId: string, userId: string, tx: Transaction): Promise<string[]> {
    const held: string[] = [];
    for (const holding of this.userHoldings) {
      const description = await holding.describe(orgId, userId, tx);
      if (description !== undefined) held.push(description);
    }
    return held;
  }

  async releaseUserHoldings(orgId: string, userId: string, actor: Actor, tx: Transaction): Promise<void> {
    for (const holding of this.userHoldings) await holding.release(orgId, userId, actor, tx);
  }

  async userWritten(user: UserRow, change: 'created' | 'updated', actor: Actor, tx: Transaction): Promise<void> {
    for (const listener of this.userWriteListeners) await listener(user, change, actor, tx);
  }

  registeredHoldings(): readonly Holding[] {
    return this.holdings;
  }

  async removeOrganization(orgId: string, tx: Transaction): Promise<void> {
    for (const remove of this.removers) await remove(orgId, tx);
  }

  async revokeTokens(subject: TokenSubject, at: Date, tx: Transaction): Promise<number> {
    if (this.tokenRevokers.length === 0) throw new Error('No token store is registered: load AuthStoreModule with AccountsModule.');
    let revoked = 0;
    for (const revoke of this.tokenRevokers) revoked += await revoke(subject, at, tx);
    return revoked;
  }
}

export type TokenSubject = { accountId: string } | { userId: string };
