import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';

/** What scrypt is run with: RFC 7914's parameters and the memory bound of node:crypto. */
export interface ScryptJob {
  password: string;
  salt: Buffer;
  keyLength: number;
  N: number;
  r: number;
  p: number;
  maxmem: number;
}

/**
 * The thread's code, given as source so that it runs the same from dist and under jest (no file to
 * resolve). A yielding thread lowers its own scheduling priority once, by `nice` as nice(1) does
 * (a new thread starts at its creator's): on Linux the nice value belongs to a thread, and
 * setpriority(PRIO_PROCESS, 0) from a thread changes only that thread.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { scryptSync } = require('node:crypto');
const { getPriority, setPriority } = require('node:os');
if (workerData.nice > 0) {
  try { setPriority(0, Math.min(19, getPriority(0) + workerData.nice)); } catch {}
}
parentPort.on('message', (job) => {
  try {
    const key = scryptSync(job.password, job.salt, job.keyLength, { N: job.N, r: job.r, p: job.p, maxmem: job.maxmem });
    parentPort.postMessage({ key });
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message) });
  }
});
`;

/** The main thread counts as busy above this share of its time spent running (event loop utilization). */
const BUSY_UTILIZATION = 0.5;
/** How often the utilization is looked at again; between looks the last answer stands. */
const SAMPLE_MS = 200;

class HashThread {
  private readonly worker: Worker;
  private pending?: { resolve: (key: Buffer) => void; reject: (error: Error) => void };

  constructor(nice: number, onExit: (thread: HashThread) => void) {
    this.worker = new Worker(THREAD_SOURCE, { eval: true, workerData: { nice } });
    this.worker.on('message', (answer: { key?: Uint8Array; error?: string }) => {
      const pending = this.pending;
      this.pending = undefined;
      if (!pending) return;
      if (answer.key) pending.resolve(Buffer.from(answer.key.buffer, answer.key.byteOffset, answer.key.byteLength));
      else pending.reject(new Error(`scrypt failed: ${answer.error}`));
    });
    const fail = (error: Error) => {
      this.pending?.reject(error);
      this.pending = undefined;
      onExit(this);
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => fail(new Error(`The password hash thread stopped (exit code ${code}).`)));
    // A thread waiting for work keeps no process (or test run) alive; after the listeners, which ref it again.
    this.worker.unref();
  }

  derive(job: ScryptJob): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.worker.postMessage(job);
    });
  }

  stop(): Promise<number> {
    return this.worker.terminate();
  }
}

/**
 * Threads that run scrypt for password checks (DECISIONS 3.5), outside libuv's small pool that the
 * rest of the service shares. Two kinds: threads at the process's own priority, used while the
 * service has little else to do (a sign-in takes the hash's own time), and threads at a lower
 * priority (nice raised by `yieldingNice`, PASSWORD_HASH_NICE), used while the main thread is busy serving
 * other requests, so that a crowd signing in takes the cores that token issuance leaves free
 * instead of halving it. The number running at once is bounded by the caller (PasswordHashSlots),
 * so there are at most that many threads of each kind; each is started when first needed.
 */
export class PasswordHashThreads {
  private readonly idle = new Map<number, HashThread[]>();
  private readonly all = new Set<HashThread>();
  private utilization: EventLoopUtilization = performance.eventLoopUtilization();
  private sampledAt = performance.now();
  private busy = false;

  private readonly yieldingNice: number;

  constructor(yieldingNice: number) {
    // Only where a nice value belongs to one thread (Linux): elsewhere setpriority from a thread
    // would lower the whole service, token issuance included.
    this.yieldingNice = process.platform === 'linux' ? yieldingNice : 0;
  }

  async derive(job: ScryptJob): Promise<Buffer> {
    const nice = this.yieldingNice > 0 && this.mainThreadBusy() ? this.yieldingNice : 0;
    const thread = this.idle.get(nice)?.pop() ?? this.start(nice);
    try {
      return await thread.derive(job);
    } finally {
      if (this.all.has(thread)) this.idleOf(nice).push(thread);
    }
  }

  /** Stops every thread (the module's shutdown). */
  async stop(): Promise<void> {
    const threads = [...this.all];
    this.all.clear();
    this.idle.clear();
    await Promise.all(threads.map((thread) => thread.stop()));
  }

  private start(nice: number): HashThread {
    const thread = new HashThread(nice, (stopped) => {
      this.all.delete(stopped);
      const list = this.idle.get(nice);
      if (list?.includes(stopped)) list.splice(list.indexOf(stopped), 1);
    });
    this.all.add(thread);
    return thread;
  }

  private idleOf(nice: number): HashThread[] {
    let list = this.idle.get(nice);
    if (!list) this.idle.set(nice, (list = []));
    return list;
  }

  private mainThreadBusy(): boolean {
    const now = performance.now();
    if (now - this.sampledAt >= SAMPLE_MS) {
      const current = performance.eventLoopUtilization();
      this.busy = performance.eventLoopUtilization(current, this.utilization).utilization > BUSY_UTILIZATION;
      this.utilization = current;
      this.sampledAt = now;
    }
    return this.busy;
  }
}
