import { Injectable } from '@nestjs/common';
import { Transaction } from '@app/persistence';

/** What an organization holds in another library's tables, named in the 409 of a delete without force. */
export interface Holding {
  /** Key in the delete's answer and audit details, e.g. `devices`. */
  key: string;
  singular: string;
  plural: string;
  count(orgId: string, tx: Transaction): Promise<number>;
}

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
