import type { Change, ChangeFeed } from './change-feed';
import { FeedCache } from './feed-cache';

/** The two things a FeedCache uses of the feed: `live` and `subscribe`; `emit` plays a change. */
function fakeFeed() {
  const handlers: ((change: Change) => void)[] = [];
  const feed = { live: true, subscribe: (handler: (change: Change) => void) => handlers.push(handler) };
  return { feed, changes: feed as unknown as ChangeFeed, emit: (change: Change) => handlers.forEach((handler) => handler(change)) };
}

const deviceCache = (changes: ChangeFeed, options: { maxEntries?: number; maxAgeMs?: number } = {}) =>
  new FeedCache<string>(changes, {
    maxEntries: options.maxEntries ?? 100,
    maxAgeMs: options.maxAgeMs,
    evicts: (change) => (change.topic === 'device' ? { key: change.id } : change.topic === 'organization' ? 'all' : undefined),
  });

describe('FeedCache', () => {
  it('reads through once, then serves from memory', async () => {
    const { changes } = fakeFeed();
    const cache = deviceCache(changes);
    let loads = 0;
    const load = () => Promise.resolve(`row${++loads}`);
    expect(await cache.read('d1', load)).toBe('row1');
    expect(await cache.read('d1', load)).toBe('row1');
    expect(loads).toBe(1);
  });

  it('evicts one key, everything, or nothing, as the options say; a reset always empties it', async () => {
    const { changes, emit } = fakeFeed();
    const cache = deviceCache(changes);
    for (const key of ['d1', 'd2']) cache.set(key, key, cache.mark());
    emit({ topic: 'token', id: 'd2' });
    expect([cache.get('d1'), cache.get('d2')]).toEqual(['d1', 'd2']);
    emit({ topic: 'device', id: 'd1' });
    expect([cache.get('d1'), cache.get('d2')]).toEqual([undefined, 'd2']);
    emit({ topic: 'organization', id: 'acme' });
    expect(cache.get('d2')).toBeUndefined();
    cache.set('d3', 'd3', cache.mark());
    emit({ topic: 'reset' });
    expect(cache.get('d3')).toBeUndefined();
  });

  it('does not store a read that overlapped an eviction, nor one the cache ignores', async () => {
    const { changes, emit } = fakeFeed();
    const cache = deviceCache(changes);
    const mark = cache.mark();
    emit({ topic: 'device', id: 'other' });
    cache.set('d1', 'stale', mark);
    expect(cache.get('d1')).toBeUndefined();
    const ignoredMark = cache.mark();
    emit({ topic: 'lockout', id: 'k' });
    cache.set('d1', 'fresh', ignoredMark);
    expect(cache.get('d1')).toBe('fresh');
  });

  it('serves and stores nothing while the feed is not live', async () => {
    const { feed, changes } = fakeFeed();
    const cache = deviceCache(changes);
    cache.set('d1', 'd1', cache.mark());
    feed.live = false;
    expect(cache.get('d1')).toBeUndefined();
    cache.set('d2', 'd2', cache.mark());
    feed.live = true;
    expect([cache.get('d1'), cache.get('d2')]).toEqual(['d1', undefined]);
  });

  it('makes room by dropping the oldest entry, and does not serve entries past maxAgeMs', async () => {
    const { changes } = fakeFeed();
    const bounded = deviceCache(changes, { maxEntries: 2 });
    for (const key of ['d1', 'd2', 'd3']) bounded.set(key, key, bounded.mark());
    expect([bounded.get('d1'), bounded.get('d2'), bounded.get('d3')]).toEqual([undefined, 'd2', 'd3']);

    const aging = deviceCache(changes, { maxAgeMs: 1_000 });
    const now = jest.spyOn(Date, 'now').mockReturnValue(10_000);
    try {
      aging.set('d1', 'd1', aging.mark());
      now.mockReturnValue(11_000);
      expect(aging.get('d1')).toBe('d1');
      now.mockReturnValue(11_001);
      expect(aging.get('d1')).toBeUndefined();
    } finally {
      now.mockRestore();
    }
  });
});
