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
    const waiting = limit.run(async () => 'waited', { maxWaiting: Infinity });
    first.release();
    await expect(running).resolves.toBe('done');
    await expect(waiting).resolves.toBe('waited');
  });

  it('a free turn goes to the waiting party with the fewest running; among equals, the one served longest ago', async () => {
    const limit = new ConcurrencyLimit(1, 10, busy);
    const first = held();
    const started: string[] = [];
    const task = (name: string) => async () => {
      started.push(name);
      await Promise.resolve();
      return name;
    };
    const running = limit.run(() => (started.push('flood-0'), first.promise), { party: 'flood' });
    const all = [
      ...['flood-1', 'flood-2', 'flood-3'].map((name) => limit.run(task(name), { party: 'flood' })),
      ...['other-1', 'other-2'].map((name) => limit.run(task(name), { party: 'other' })),
      limit.run(task('person'), { party: 'person' }),
    ];
    expect(limit.waitingTasks).toBe(6);
    first.release();
    await running;
    await Promise.all(all);
    // FIFO would have run the three other flood tasks first.
    expect(started).toEqual(['flood-0', 'flood-1', 'other-1', 'person', 'flood-2', 'other-2', 'flood-3']);
  });

  it('the party that holds a turn waits behind a party that holds none', async () => {
    const limit = new ConcurrencyLimit(2, 10, busy);
    const [a, b] = [held(), held()];
    const started: string[] = [];
    const runningA = limit.run(() => (started.push('flood-a'), a.promise), { party: 'flood' });
    const runningB = limit.run(() => (started.push('other-b'), b.promise), { party: 'other' });
    const floodNext = limit.run(async () => started.push('flood-next'), { party: 'flood' });
    const personNext = limit.run(async () => started.push('person'), { party: 'person' });
    b.release();
    await Promise.all([runningB, personNext, floodNext]);
    // The flood asked first, but runs a task already: the free turn is the person's (FIFO: flood-next first).
    expect(started).toEqual(['flood-a', 'other-b', 'person', 'flood-next']);
    a.release();
    await runningA;
  });

  it('a full queue makes room for a party with two places fewer than the one holding most: that one’s newest place is refused', async () => {
    const limit = new ConcurrencyLimit(1, 3, busy);
    const first = held();
    const running = limit.run(() => first.promise, { party: 'flood' });
    const flood = [1, 2, 3].map((i) => limit.run(async () => `flood-${i}`, { party: 'flood' }));
    const settled = flood.map((p) =>
      p.then(
        (v) => v,
        (e: Error) => e.message,
      ),
    );
    // The flood holds every place: more of it is refused at once.
    await expect(limit.run(async () => 'flood-4', { party: 'flood' })).rejects.toThrow('busy');
    // Another address takes the flood's newest place.
    const person = limit.run(async () => 'person', { party: 'person' });
    expect(await settled[2]).toBe('busy');
    expect(limit.waitingTasks).toBe(3);
    // Now the flood holds 2 places and the person 1: a second of the person's is refused, as the flood's would be.
    await expect(limit.run(async () => 'person-2', { party: 'person' })).rejects.toThrow('busy');
    // A waiter with no bound (an administrator) is never pushed out, and waits beyond the queue.
    const admin = limit.run(async () => 'admin', { maxWaiting: Infinity });
    first.release();
    await running;
    await expect(Promise.all([settled[0], settled[1], person, admin])).resolves.toEqual(['flood-1', 'flood-2', 'person', 'admin']);
    expect(limit.waitingTasks).toBe(0);
  });

  it('gives the turn back when a task fails', async () => {
    const limit = new ConcurrencyLimit(1, 0, busy);
    await expect(limit.run(() => Promise.reject(new Error('task failed')))).rejects.toThrow('task failed');
    await expect(limit.run(async () => 'ok')).resolves.toBe('ok');
  });
});
