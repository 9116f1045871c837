import { DatabaseUnavailableError } from './database-unavailable';
import { GroupCommit } from './group-commit';

/** A batch writer whose statements finish only when the test says so, recording each batch. */
function slowRepository(failing: Set<string> = new Set()) {
  const batches: string[][] = [];
  const finishers: (() => void)[] = [];
  const repository = (items: string[]) => {
    batches.push([...items]);
    return new Promise<void>((resolve, reject) => {
      finishers.push(() => (items.some((item) => failing.has(item)) ? reject(new Error(`bad row in ${items.length}`)) : resolve()));
    });
  };
  const finishAll = async () => {
    while (finishers.length > 0) {
      finishers.shift()!();
      await new Promise((r) => setImmediate(r));
    }
  };
  return { repository, batches, finishAll };
}

describe('GroupCommit', () => {
  it('writes a lone item at once, in its own statement', async () => {
    const { repository, batches, finishAll } = slowRepository();
    const written = new GroupCommit(repository).write('t1');
    expect(batches).toEqual([['t1']]);
    await finishAll();
    await expect(written).resolves.toBeUndefined();
  });

  it('queues items while a batch is in flight and writes them together in the next statement', async () => {
    const { repository, batches, finishAll } = slowRepository();
    const writer = new GroupCommit(repository);
    const all = Array.from({ length: 20 }, (_, i) => writer.write(`t${i}`));
    // The first went out alone at once; the other nineteen wait for the next statement.
    expect(batches).toEqual([['t0']]);
    await finishAll();
    await Promise.all(all);
    expect(batches.slice(1)).toEqual([Array.from({ length: 19 }, (_, i) => `t${i + 1}`)]);
  });

  it('fails every caller of a batch at once when the database is unavailable, without retrying item by item', async () => {
    const batches: string[][] = [];
    let release!: () => void;
    const writer = new GroupCommit<string>((items) => {
      batches.push([...items]);
      if (items[0] === 'first') return new Promise<void>((resolve) => (release = resolve));
      return Promise.reject(new DatabaseUnavailableError('ECONNREFUSED'));
    });
    const first = writer.write('first');
    const queued = ['a', 'b', 'c'].map((item) => writer.write(item).catch((error: Error) => error.name));
    release();
    await first;
    expect(await Promise.all(queued)).toEqual(['DatabaseUnavailableError', 'DatabaseUnavailableError', 'DatabaseUnavailableError']);
    expect(batches).toEqual([['first'], ['a', 'b', 'c']]);
  });

  it('a failing batch is retried item by item: only the bad item fails, with its own error', async () => {
    const { repository, finishAll } = slowRepository(new Set(['bad']));
    const writer = new GroupCommit(repository);
    const first = [0, 1, 2, 3].map((i) => writer.write(`warm${i}`));
    const queued = ['ok1', 'bad', 'ok2'].map((jti) =>
      writer.write(jti).then(
        () => 'written',
        (e: Error) => e.message,
      ),
    );
    await finishAll();
    await Promise.all(first);
    expect(await Promise.all(queued)).toEqual(['written', 'bad row in 1', 'written']);
  });

  it('answers each caller its own result, in item order, also after a batch is retried item by item', async () => {
    // "Was it new?" per item, as INSERT ... ON CONFLICT DO NOTHING RETURNING answers it; a batch
    // holding "bad" fails as a whole.
    const seen = new Set<string>();
    const { repository, finishAll } = slowRepository(new Set(['bad']));
    const writer = new GroupCommit<string, boolean>(async (items) => {
      await repository(items);
      return items.map((item) => !seen.has(item) && Boolean(seen.add(item)));
    });

    const first = ['a', 'b', 'c', 'd'].map((item) => writer.write(item));
    const queued = ['e', 'a', 'e', 'f'].map((item) => writer.write(item));
    await finishAll();
    expect(await Promise.all(first)).toEqual([true, true, true, true]);
    expect(await Promise.all(queued)).toEqual([true, false, false, true]);

    const filling = ['w', 'x', 'y', 'z'].map((item) => writer.write(item));
    const retried = ['g', 'bad', 'g'].map((item) => writer.write(item).catch((error: Error) => error.message));
    await finishAll();
    await Promise.all(filling);
    expect(await Promise.all(retried)).toEqual([true, 'bad row in 1', false]);
  });

  it('fails every caller of a batch whose writer answers the wrong number of results', async () => {
    const writer = new GroupCommit<string, boolean>(() => Promise.resolve([true]));
    await expect(writer.write('only')).resolves.toBe(true);
    const writerOfTwo = new GroupCommit<string, boolean>((items) => Promise.resolve(items.length === 1 ? [] : [true]));
    await expect(writerOfTwo.write('x')).rejects.toThrow('answered 0 results for 1 items');
  });
});
