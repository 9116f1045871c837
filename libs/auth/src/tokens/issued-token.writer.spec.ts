import { IssuedTokenWriter } from './issued-token.writer';
import { IssuedTokenRecord, TokenRepository } from './token.repository';

const record = (jti: string): IssuedTokenRecord => ({
  jti,
  orgId: 'acme',
  accountId: 'a1',
  subjectName: 'acme-svc',
  issuedAt: new Date(0),
  expiresAt: new Date(3600_000),
  sourceAddress: '127.0.0.1',
  method: 'client_secret_post',
});

/** A repository whose writes finish only when the test says so, recording each statement's batch. */
function slowRepository(failing: Set<string> = new Set()) {
  const batches: string[][] = [];
  const finishers: (() => void)[] = [];
  const repository = {
    recordIssued: (tokens: IssuedTokenRecord[]) => {
      batches.push(tokens.map((t) => t.jti));
      return new Promise<void>((resolve, reject) => {
        finishers.push(() => (tokens.some((t) => failing.has(t.jti)) ? reject(new Error(`bad row in ${tokens.length}`)) : resolve()));
      });
    },
  } as unknown as TokenRepository;
  const finishAll = async () => {
    while (finishers.length > 0) {
      finishers.shift()!();
      await new Promise((r) => setImmediate(r));
    }
  };
  return { repository, batches, finishAll };
}

describe('IssuedTokenWriter', () => {
  it('writes a lone token at once, in its own statement', async () => {
    const { repository, batches, finishAll } = slowRepository();
    const written = new IssuedTokenWriter(repository).record(record('t1'));
    expect(batches).toEqual([['t1']]);
    await finishAll();
    await expect(written).resolves.toBeUndefined();
  });

  it('queues tokens while four batches are in flight and writes them together', async () => {
    const { repository, batches, finishAll } = slowRepository();
    const writer = new IssuedTokenWriter(repository);
    const all = Array.from({ length: 20 }, (_, i) => writer.record(record(`t${i}`)));
    // Four single-token batches went out at once; the other sixteen wait for the next statement.
    expect(batches).toEqual([['t0'], ['t1'], ['t2'], ['t3']]);
    await finishAll();
    await Promise.all(all);
    expect(batches.slice(4)).toEqual([Array.from({ length: 16 }, (_, i) => `t${i + 4}`)]);
  });

  it('a failing batch is retried row by row: only the bad token fails', async () => {
    const { repository, finishAll } = slowRepository(new Set(['bad']));
    const writer = new IssuedTokenWriter(repository);
    const first = [0, 1, 2, 3].map((i) => writer.record(record(`warm${i}`)));
    const queued = ['ok1', 'bad', 'ok2'].map((jti) => writer.record(record(jti)).then(() => 'written', (e: Error) => e.message));
    await finishAll();
    await Promise.all(first);
    expect(await Promise.all(queued)).toEqual(['written', 'bad row in 1', 'written']);
  });
});
