import type { Change, ChangeFeed } from './change-feed';

/** A change other than the feed's own `reset`. */
export type TopicChange = Exclude<Change, { topic: 'reset' }>;

export interface FeedCacheOptions {
  /**
   * What a change does to this cache: drop the entry under `key`, drop everything (`'all'`), or
   * nothing (undefined). A `reset` of the feed (its connection came or went) always drops everything.
   */
  evicts(change: TopicChange): { key: string } | 'all' | undefined;
  /** Bounds memory: when full, the oldest entry makes room. */
  maxEntries: number;
  /** A safety net behind the feed: an entry older than this is not served. */
  maxAgeMs?: number;
}

/**
 * A per-instance cache of database reads, correct across instances because every write that
 * affects an entry publishes on the ChangeFeed with its commit, which evicts on every instance.
 * While the feed is not live nothing is served from memory or stored. A read stores its result only
 * if no eviction arrived while it was in flight (a generation counter), so a concurrent change
 * cannot be undone by an older read.
 */
export class FeedCache<V> {
  private readonly entries = new Map<string, { value: V; storedAt: number }>();
  private generation = 0;

  constructor(
    private readonly changes: ChangeFeed,
    private readonly options: FeedCacheOptions,
  ) {
    changes.subscribe((change) => {
      const eviction = change.topic === 'reset' ? 'all' : options.evicts(change);
      if (eviction === undefined) return;
      this.generation++;
      if (eviction === 'all') this.entries.clear();
      else this.entries.delete(eviction.key);
    });
  }

  get(key: string): V | undefined {
    if (!this.changes.live) return undefined;
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (this.options.maxAgeMs !== undefined && Date.now() - entry.storedAt > this.options.maxAgeMs) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /** Take a mark before reading the database; set() stores the read only if nothing was evicted since. */
  mark(): number {
    return this.generation;
  }

  set(key: string, value: V, mark: number): void {
    if (!this.changes.live || mark !== this.generation) return;
    if (this.entries.size >= this.options.maxEntries && !this.entries.has(key)) {
      this.entries.delete(this.entries.keys().next().value!);
    }
    this.entries.set(key, { value, storedAt: Date.now() });
  }

  /** The cached value, or `load()`'s, stored when defined. */
  async read(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const cached = this.get(key);
    if (cached !== undefined) return cached;
    const mark = this.mark();
    const value = await load();
    if (value !== undefined) this.set(key, value, mark);
    return value;
  }
}
