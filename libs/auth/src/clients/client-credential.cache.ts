import { Injectable } from '@nestjs/common';
import { StoredCertificate, StoredSecret } from '@app/accounts';
import { ChangeFeed } from '@app/persistence';
import { ClientCredentialRepository, ClientCredentials } from './client-credential.repository';

type Found<C> = NonNullable<ClientCredentials<C>['account']>;

/** Bounds memory: entries are an account with at most five secrets or certificates. */
const MAX_ACCOUNTS = 10_000;
const MAX_CLEAN_KEYS = 100_000;

/**
 * What client authentication reads, kept per instance, so that a token request of a known client
 * with no recent failures costs no database read:
 * - an account with its org settings and its secret hashes or certificates, dropped on any change of
 *   a subject (account, its secrets, its certificates) or an organization;
 * - the lockout counter keys known to have no failures, each dropped when any instance counts a
 *   failure for it. A key with failures is always read from the database, so the 429 never comes
 *   from memory.
 * All of it arrives through the ChangeFeed after commit; while the feed is down nothing is served
 * from memory. A read stores its result only if no change arrived while it was in flight
 * (`generation`), so a concurrent eviction cannot be undone by an older read.
 */
@Injectable()
export class ClientCredentialCache {
  private readonly accounts = new Map<string, Found<unknown>>();
  private readonly cleanKeys = new Set<string>();
  private generation = 0;

  constructor(
    private readonly repository: ClientCredentialRepository,
    private readonly changes: ChangeFeed,
  ) {
    changes.subscribe((change) => {
      if (change.topic === 'token' || change.topic === 'device') return;
      this.generation++;
      if (change.topic === 'lockout') this.cleanKeys.delete(change.id);
      else this.accounts.clear();
      if (change.topic === 'reset') this.cleanKeys.clear();
    });
  }

  findWithSecretHashes(clientId: string, failureKeys: string[], windowStart: Date): Promise<ClientCredentials<StoredSecret>> {
    return this.find(`secrets:${clientId}`, failureKeys, () => this.repository.findWithSecretHashes(clientId, failureKeys, windowStart));
  }

  findWithCertificates(clientId: string, failureKeys: string[], windowStart: Date): Promise<ClientCredentials<StoredCertificate>> {
    return this.find(`certificates:${clientId}`, failureKeys, () => this.repository.findWithCertificates(clientId, failureKeys, windowStart));
  }

  private async find<C>(key: string, failureKeys: string[], read: () => Promise<ClientCredentials<C>>): Promise<ClientCredentials<C>> {
    if (this.changes.live && failureKeys.every((k) => this.cleanKeys.has(k))) {
      const account = this.accounts.get(key) as Found<C> | undefined;
      if (account) return { failures: [], account };
    }
    const generation = this.generation;
    const result = await read();
    if (this.changes.live && generation === this.generation) {
      if (result.failures.length === 0) {
        if (this.cleanKeys.size >= MAX_CLEAN_KEYS) this.cleanKeys.clear();
        for (const k of failureKeys) this.cleanKeys.add(k);
      }
      if (result.account) {
        if (this.accounts.size >= MAX_ACCOUNTS) this.accounts.delete(this.accounts.keys().next().value!);
        this.accounts.set(key, result.account);
      }
    }
    return result;
  }
}
