import { EventEmitter } from 'node:events';
import type { Pool } from 'pg';
import { ChangeFeed } from './change-feed';

/** A pool client that records whether it went back to the pool; LISTEN answers when the test says so. */
class FakeClient extends EventEmitter {
  released: boolean | 'broken' = false;
  private answerListen?: (value: unknown) => void;
  query = jest.fn((text: string) => {
    if (text.startsWith('LISTEN')) return new Promise((resolve) => (this.answerListen = resolve));
    return Promise.resolve({ rows: [] });
  });
  release = jest.fn((broken?: boolean) => {
    if (this.released) throw new Error('Release called on client which has already been released to the pool.');
    this.released = broken ? 'broken' : true;
  });
  listenAnswered(): void {
    this.answerListen!({ rows: [] });
  }
}

function feedOver(connect: () => Promise<FakeClient>): ChangeFeed {
  const pool = { connect } as unknown as Pool;
  return new ChangeFeed(pool);
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('ChangeFeed', () => {
  it('a stop during a connection attempt waits for it and gives its client back, so the pool can end', async () => {
    const client = new FakeClient();
    const feed = feedOver(async () => client);
    const started = feed.start();
    await tick();
    expect(client.query).toHaveBeenCalledWith('LISTEN platform_changes');

    const stopped = feed.stop();
    let stopDone = false;
    void stopped.then(() => (stopDone = true));
    await tick();
    expect(stopDone).toBe(false);

    client.listenAnswered();
    await Promise.all([started, stopped]);
    expect(client.released).toBe('broken');
    expect(feed.live).toBe(false);
  });

  it('a client whose LISTEN fails goes back to the pool, broken, and the feed tries again later', async () => {
    jest.useFakeTimers();
    try {
      const failing = new FakeClient();
      failing.query.mockImplementation(() => Promise.reject(new Error('terminating connection due to administrator command')));
      const healthy = new FakeClient();
      const connect = jest.fn<Promise<FakeClient>, []>().mockResolvedValueOnce(failing).mockResolvedValueOnce(healthy);
      const feed = feedOver(connect);
      await feed.start();
      expect(failing.released).toBe('broken');
      expect(feed.live).toBe(false);

      const resets: string[] = [];
      feed.subscribe((change) => resets.push(change.topic));
      await jest.advanceTimersByTimeAsync(1000);
      healthy.listenAnswered();
      await jest.advanceTimersByTimeAsync(0);
      expect(connect).toHaveBeenCalledTimes(2);
      expect(feed.live).toBe(true);
      expect(resets).toEqual(['reset']);

      await feed.stop();
      expect(healthy.released).toBe(true);
      expect(healthy.query).toHaveBeenCalledWith('UNLISTEN platform_changes');
    } finally {
      jest.useRealTimers();
    }
  });

  it('a stopped feed does not connect again when its connection is lost', async () => {
    jest.useFakeTimers();
    try {
      const client = new FakeClient();
      const connect = jest.fn(async () => client);
      const feed = feedOver(connect);
      const started = feed.start();
      await jest.advanceTimersByTimeAsync(0);
      client.listenAnswered();
      await started;
      expect(feed.live).toBe(true);

      client.emit('error', new Error('connection lost'));
      expect(client.released).toBe('broken');
      await feed.stop();
      await jest.advanceTimersByTimeAsync(5000);
      expect(connect).toHaveBeenCalledTimes(1);
    } finally {
      jest.useRealTimers();
    }
  });
});
