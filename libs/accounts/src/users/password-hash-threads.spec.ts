import { randomBytes, scryptSync } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { performance } from 'node:perf_hooks';
import { PasswordHashThreads } from './password-hash-threads';

/** The nice value of every thread of this process (Linux: field 19 of /proc/self/task/TID/stat). */
function threadNiceValues(): number[] {
  return readdirSync('/proc/self/task').map((tid) => Number(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ')[16]));
}

/** Keeps the main thread running for `ms`, as a service busy with requests does. */
function keepMainThreadBusy(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until);
}

describe('PasswordHashThreads', () => {
  const job = { password: 'correct horse battery staple', salt: randomBytes(16), keyLength: 32, N: 1024, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
  const expected = scryptSync(job.password, job.salt, job.keyLength, { N: job.N, r: job.r, p: job.p, maxmem: job.maxmem });
  let threads: PasswordHashThreads;
  // The test run may itself be started with nice: the hash threads are compared with the main thread.
  const own = getPriority(0);
  const lowered = () => threadNiceValues().filter((nice) => nice > own);

  afterEach(() => threads.stop());

  it('derives the scrypt key at normal priority while the main thread is idle', async () => {
    // Idle is a precondition this process must meet first: a jest worker reused from other suites can
    // be busy for a while (their timers), which the threads would rightly see. So the window is
    // measured here too, and tried again (up to ten times) until it was idle; never idle fails.
    let idleWindow = false;
    for (let attempt = 0; attempt < 10 && !idleWindow; attempt++) {
      if (attempt > 0) await threads.stop();
      const before = performance.eventLoopUtilization();
      threads = new PasswordHashThreads(10);
      await new Promise((resolve) => setTimeout(resolve, 300));
      idleWindow = performance.eventLoopUtilization(before).utilization < 0.25;
    }
    expect(idleWindow).toBe(true);
    await expect(threads.derive(job)).resolves.toEqual(expected);
    expect(lowered()).toHaveLength(0);
  });

  it('derives it on a thread at the lower priority while the main thread is busy', async () => {
    threads = new PasswordHashThreads(10);
    keepMainThreadBusy(300);
    await expect(threads.derive(job)).resolves.toEqual(expected);
    expect(lowered()).toEqual([Math.min(19, own + 10)]);
  });

  it('never lowers the priority when PASSWORD_HASH_NICE is 0', async () => {
    threads = new PasswordHashThreads(0);
    keepMainThreadBusy(300);
    await expect(threads.derive(job)).resolves.toEqual(expected);
    expect(lowered()).toHaveLength(0);
  });

  it('rejects a job scrypt refuses, and the thread serves the next one', async () => {
    threads = new PasswordHashThreads(0);
    await expect(threads.derive({ ...job, N: 3 })).rejects.toThrow('scrypt failed');
    await expect(threads.derive(job)).resolves.toEqual(expected);
  });
});
