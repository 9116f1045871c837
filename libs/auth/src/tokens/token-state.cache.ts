import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '@app/persistence';
import { TokenState } from './token.repository';

/** Bounds memory; entries are small (one row), so 100k is a few tens of MiB at most. */
const MAX_ENTRIES = 100_000;
/** A safety net behind the change feed: no entry is older than this. */
const MAX_AGE_MS = 60_000;

/**
 * Token states (token row + live subject + org policy) kept in memory, so that a known token costs
 * no database round trip. Correct across instances because every change that affects a token's
 * validity is published on the ChangeFeed after commit: a revoked token is dropped, and any change
 * of a subject or an organization (rare, administrative) drops everything. While the feed is not
 * live nothing is served from memory.
 */
@Injectable()
export class TokenStateCache {
  private readonly entries = new Map<string, { state: TokenState; cachedAt: number }>();
  /** Counts evictions, so that a read that overlapped one does not store an older state. */
  private generation = 0;

  constructor(private readonly changes: ChangeFeed) {
    changes.subscribe((change) => {
      if (change.topic === 'device' || change.topic === 'lockout') return;
      this.generation++;
      if (change.topic === 'token') this.entries.delete(change.id);
      else this.entries.clear();
    });
  }

  /** Call before reading a state from the database; pass the result to set(). */
  mark(): number {
    return this.generation;
  }

  get(jti: string): TokenState | undefined {
    if (!this.changes.live) return undefined;
    const entry = this.entries.get(jti);
    if (!entry) return undefined;
    if (Date.now() - entry.cachedAt > MAX_AGE_MS) {
      this.entries.delete(jti);
      return undefined;
    }
    return entry.state;
  }

  set(jti: string, state: TokenState, readAt: number): void {
    if (!this.changes.live || readAt !== this.generation) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(jti, { state, cachedAt: Date.now() });
  }
}
