import { ConcurrencyLimit } from './concurrency-limit';

describe('ConcurrencyLimit', () => {
  const busy = () => new Error('busy');

  function held(): { promise: Promise<string>; release: () => void } {
    let release!: () => void;
    const promise = new Promise<string>((resolve) => (release = () => resolve('done')));
    return { promise, release };
  }

  it('runs up to the limit, queues up to the queue size, refuses the rest at once, and hands turns on in order', async () => {
    const limit = new ConcurrencyLimit(1, 1, busy);
    const first = held();
    const started: string[] = [];
    const running = limit.run(() => (started.push('first'), first.promise));
    const queued = limit.run(async () => (started.push('second'), 'second'));
    await expect(limit.run(async () => 'third')).rejects.toThrow('busy');
    expect(started).toEqual(['first']);
    first.release();
    await expect(running).resolves.toBe('done');
    await expect(queued).resolves.toBe('second');
    expect(started).toEqual(['first', 'second']);
    // Every turn was given back: two more run one after the other.
    await expect(Promise.all([limit.run(async () => 1), limit.run(async () => 2)])).resolves.toEqual([1, 2]);
  });

  it('lets a caller that passes a larger maxWaiting wait for its turn', async () => {
    const limit = new ConcurrencyLimit(1, 0, busy);
    const first = held();
    const running = limit.run(() => first.promise);
    await expect(limit.run(async () => 'refused')).rejects.toThrow('busy');
    const waiting = limit.run(async () => 'waited', Infinity);
    first.release();
    await expect(running).resolves.toBe('done');
    await expect(waiting).resolves.toBe('waited');
  });

  it('gives the turn back when a task fails', async () => {
    const limit = new ConcurrencyLimit(1, 0, busy);
    await expect(limit.run(() => Promise.reject(new Error('task failed')))).rejects.toThrow('task failed');
    await expect(limit.run(async () => 'ok')).resolves.toBe('ok');
  });
});
