import { Injectable } from '@nestjs/common';
import { OidcClient, OidcClientService } from '@app/accounts';
import { ChangeFeed, FeedCache } from '@app/persistence';

/**
 * The clients of the authorization code flow, kept per instance so that a code exchange or refresh
 * of a known client costs no database read for it: dropped on any change of a subject (the account,
 * its client settings) or an organization, on every instance, as client credentials are
 * (ClientCredentialCache). Unknown clients are not kept.
 */
@Injectable()
export class OidcClientCache {
  private readonly clients: FeedCache<OidcClient>;

  constructor(
    private readonly service: OidcClientService,
    changes: ChangeFeed,
  ) {
    this.clients = new FeedCache(changes, {
      evicts: (change) => (change.topic === 'subject' || change.topic === 'organization' ? 'all' : undefined),
      maxEntries: 10_000,
    });
  }

  async find(org: string, clientId: string): Promise<OidcClient | undefined> {
    const key = `${org}/${clientId}`;
    const cached = this.clients.get(key);
    if (cached) return cached;
    const mark = this.clients.mark();
    const found = await this.service.find(org, clientId);
    if (found) this.clients.set(key, found, mark);
    return found;
  }
}
