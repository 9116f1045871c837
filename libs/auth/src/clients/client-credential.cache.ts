import { Injectable } from '@nestjs/common';
import { StoredCertificate, StoredSecret } from '@app/accounts';
import { ChangeFeed, FeedCache } from '@app/persistence';
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
 * Both are FeedCaches: filled only by reads that no eviction overlapped, and not served while the
 * change feed is down.
 */
@Injectable()
export class ClientCredentialCache {
  private readonly accounts: FeedCache<Found<unknown>>;
  /** A member means "no failures counted for this key"; the value carries nothing. */
  private readonly cleanKeys: FeedCache<true>;

  constructor(
    private readonly repository: ClientCredentialRepository,
    changes: ChangeFeed,
  ) {
    this.accounts = new FeedCache(changes, {
      evicts: (change) => (change.topic === 'subject' || change.topic === 'organization' ? 'all' : undefined),
      maxEntries: MAX_ACCOUNTS,
    });
    this.cleanKeys = new FeedCache(changes, {
      evicts: (change) => (change.topic === 'lockout' ? { key: change.id } : undefined),
      maxEntries: MAX_CLEAN_KEYS,
    });
  }

  findWithSecretHashes(clientId: string, failureKeys: string[], windowStart: Date): Promise<ClientCredentials<StoredSecret>> {
    return this.find(`secrets:${clientId}`, failureKeys, () => this.repository.findWithSecretHashes(clientId, failureKeys, windowStart));
  }

  findWithCertificates(clientId: string, failureKeys: string[], windowStart: Date): Promise<ClientCredentials<StoredCertificate>> {
    return this.find(`certificates:${clientId}`, failureKeys, () => this.repository.findWithCertificates(clientId, failureKeys, windowStart));
  }

  private async find<C>(key: string, failureKeys: string[], read: () => Promise<ClientCredentials<C>>): Promise<ClientCredentials<C>> {
    if (failureKeys.every((k) => this.cleanKeys.get(k))) {
      const account = this.accounts.get(key) as Found<C> | undefined;
      if (account) return { failures: [], account };
    }
    const accountsMark = this.accounts.mark();
    const keysMark = this.cleanKeys.mark();
    const result = await read();
    if (result.failures.length === 0) {
      for (const k of failureKeys) this.cleanKeys.set(k, true, keysMark);
    }
    if (result.account) this.accounts.set(key, result.account, accountsMark);
    return result;
  }
}
