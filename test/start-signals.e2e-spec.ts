import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SERVICE_ENTRY } from '../ops/service-command';
import { freePort } from '@app/testing';

const ROOT = resolve(__dirname, '..');
/** The service's own deadline for a graceful shutdown (apps/api/src/main.ts SHUTDOWN_DEADLINE_MS). */
const SHUTDOWN_TIMEOUT_MS = 15_000;

interface ProcessEntry {
  ppid: number;
  state: string;
  argv: string[];
}

/** Every process of the machine, from /proc: parent, state (Z: a zombie, gone but not reaped) and arguments. */
function processTable(): Map<number, ProcessEntry> {
  const table = new Map<number, ProcessEntry>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ')'.
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').filter(Boolean);
      table.set(Number(name), { ppid: Number(ppid), state, argv });
    } catch {
      // Ended while being read.
    }
  }
  return table;
}

/** `root` and every process below it. */
function tree(root: number): Map<number, ProcessEntry> {
  const table = processTable();
  const found = new Map<number, ProcessEntry>();
  const visit = (pid: number) => {
    const entry = table.get(pid);
    if (entry === undefined) return;
    found.set(pid, entry);
    for (const [child, { ppid }] of table) if (ppid === pid) visit(child);
  };
  visit(root);
  return found;
}

const running = (pid: number): boolean => {
  const state = processTable().get(pid)?.state;
  return state !== undefined && state !== 'Z';
};

/** PostgreSQL's pg_control: DBState at offset 16 (after system identifier, control and catalog versions); 1 is DB_SHUTDOWNED. */
function clusterState(clusterDir: string): number {
  const file = openSync(join(clusterDir, 'global', 'pg_control'), 'r');
  try {
    const header = Buffer.alloc(20);
    readSync(file, header, 0, 20, 0);
    return header.readInt32LE(16);
  } finally {
    closeSync(file);
  }
}
const DB_SHUTDOWNED = 1;

/**
 * Issue 34 item 7: `npm start` under a supervisor that signals one PID. npm forwards SIGTERM and
 * SIGINT to its child, but the child was a shell (dash) that died of them without passing them on,
 * so ops/start.js, the service and its PostgreSQL ran on. Here the test is the supervisor: it runs
 * the real `npm start` (built by the global set-up, hence `--no-build`) with a fresh data folder,
 * signals one process of the tree, and expects every process of it gone within the service's
 * shutdown deadline, PostgreSQL stopped by a clean (fast) shutdown, and no crash recovery at the
 * next start. Each start after the first reuses the data folder.
 */
describe('npm start stops as a whole, whichever of its processes is signalled', () => {
  let env: Record<string, string>;
  let base: string;
  const started: ChildProcess[] = [];
  let starts = 0;

  beforeAll(async () => {
    const dataDir = join(process.env.TEST_RUN_DIR!, `start-signals-${randomBytes(4).toString('hex')}`);
    mkdirSync(dataDir, { recursive: true });
    chmodSync(dataDir, 0o755);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = {
      PATH: process.env.PATH!,
      HOME: process.env.HOME ?? '/root',
      npm_config_update_notifier: 'false',
      DATA_DIR: join(dataDir, 'data'),
      PORT: String(port),
      HOST: '127.0.0.1',
      METRICS_PORT: String(await freePort()),
      EMBEDDED_PG_PORT: String(await freePort()),
      EMBEDDED_PG_DIR: process.env.TEST_EMBEDDED_PG_DIR!,
      PUBLIC_BASE_URL: base,
      // PostgreSQL's own log lines (its shutdown, a recovery at start) come at debug.
      LOG_LEVEL: 'debug',
    };
  });

  // Whatever a failed case left behind, so that the next case starts afresh: each npm ran in its own
  // process group, which its descendants share.
  afterEach(() => {
    for (const npm of started.splice(0)) {
      try {
        process.kill(-npm.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  });

  it.each([
    ['npm', 'SIGTERM'],
    ['npm', 'SIGINT'],
    ['ops/start.js', 'SIGTERM'],
    ['ops/start.js', 'SIGKILL'],
    ['the service', 'SIGINT'],
  ] as const)(
    '%s sent %s: every process gone within the shutdown deadline, PostgreSQL shut down cleanly',
    async (target, signal) => {
      starts += 1;
      const npm = spawn('npm', ['start', '--', '--no-build'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      started.push(npm);
      let output = '';
      npm.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      npm.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      for (let ready = false; !ready;) {
        if (npm.exitCode !== null) throw new Error(`npm start exited: ${output}`);
        ready = await fetch(`${base}/health/ready`).then(
          (response) => response.status === 200,
          () => false,
        );
        if (!ready) await new Promise((done) => setTimeout(done, 250));
      }

      const processes = tree(npm.pid!);
      const find = (test: (argv: string[]) => boolean) => [...processes].find(([, { argv }]) => test(argv));
      const startJs = find((argv) => argv.some((arg) => arg.endsWith('ops/start.js')));
      const service = find((argv) => argv.some((arg) => arg.endsWith(SERVICE_ENTRY)));
      const postmaster = find((argv) => /(^|\/)postgres$/.test(argv[0] ?? '') && argv.includes('-D'));
      expect(startJs).toBeDefined();
      expect(service).toBeDefined();
      expect(postmaster).toBeDefined();
      const clusterDir = postmaster![1].argv[postmaster![1].argv.indexOf('-D') + 1];
      expect(existsSync(join(clusterDir, 'postmaster.pid'))).toBe(true);

      const signalled = { npm: npm.pid!, 'ops/start.js': startJs![0], 'the service': service![0] }[target];
      const signalledAt = Date.now();
      process.kill(signalled, signal);
      let left = [...processes.keys()].filter(running);
      while (left.length > 0 && Date.now() - signalledAt < SHUTDOWN_TIMEOUT_MS + 5_000) {
        await new Promise((done) => setTimeout(done, 100));
        left = left.filter(running);
      }
      const tookMs = Date.now() - signalledAt;
      expect(left.map((pid) => `${pid} ${processes.get(pid)!.argv.join(' ')}`)).toEqual([]);
      expect(tookMs).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
      // npm's child is ops/start.js itself (package.json execs it): no shell in between to swallow a signal.
      expect(startJs![1].ppid).toBe(npm.pid);
      expect(service![1].ppid).toBe(startJs![0]);

      // A fast shutdown, not a kill: PostgreSQL said so, removed its pid file and left its control file "shut down".
      expect(output).toContain('database system is shut down');
      expect(existsSync(join(clusterDir, 'postmaster.pid'))).toBe(false);
      expect(clusterState(clusterDir)).toBe(DB_SHUTDOWNED);
      if (starts > 1) {
        // This start found the cluster as the previous case's shutdown left it: no crash recovery.
        expect(output).not.toMatch(/not properly shut down|automatic recovery in progress|database system was interrupted/);
        expect(output).toMatch(/database system was shut down at/);
      }
    },
    240_000,
  );
});
