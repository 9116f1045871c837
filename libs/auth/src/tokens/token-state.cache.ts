import { Injectable } from '@nestjs/common';
import { ChangeFeed, FeedCache } from '@app/persistence';
import { TokenState } from './token.repository';

/**
 * Token states (token row + live subject + org policy) kept in memory, so that a known token costs
 * no database round trip. A revoked token is dropped, and any change of a subject or an
 * organization (rare, administrative) drops everything.
 */
@Injectable()
export class TokenStateCache extends FeedCache<TokenState> {
  constructor(changes: ChangeFeed) {
    super(changes, {
      evicts: (change) => {
        if (change.topic === 'token') return { key: change.id };
        return change.topic === 'subject' || change.topic === 'organization' ? 'all' : undefined;
      },
      // Entries are small (one row), so 100k is a few tens of MiB at most.
      maxEntries: 100_000,
      // A safety net behind the change feed: no entry is older than this.
      maxAgeMs: 60_000,
    });
  }
}
