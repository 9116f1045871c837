import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { EmbeddedPostgresError, PostgresUser, placeEmbeddedPostgres } from './embedded-postgres-placement';

export interface EmbeddedPostgresHandle {
  /** Over the Unix socket in the data folder: what the service itself uses. */
  connection: PostgresConnection;
  /** Over loopback TCP: for tools and tests that take a URL. */
  url: string;
  /** Over the Unix socket, as a URL (pg reads a socket directory from `?host=`): for other processes of the service. */
  socketUrl: string;
  /**
   * False once the server died and has not started again within `restartTimeoutMs`: the service's
   * liveness turns red, so that a supervisor restarts it. True again if a later restart succeeds.
   */
  isLive(): boolean;
  stop(): Promise<void>;
}

const DATABASE = 'platform';
/** sun_path holds 108 bytes on Linux, the last one a NUL. */
const MAX_SOCKET_PATH_BYTES = 107;
/** A server that died is started again after 0.5 s, then with the wait doubling to 10 s between attempts. */
const RESTART_FIRST_DELAY_MS = 500;
const RESTART_MAX_DELAY_MS = 10_000;
const DEFAULT_RESTART_TIMEOUT_MS = 60_000;

/** Connection parameters; `host` may be a Unix socket directory. */
export interface PostgresConnection {
  host: string;
  port: number;
  username: string;
  password: string;
  database: string;
}

/**
 * Runs PostgreSQL from the binaries the `embedded-postgres` package installs, for the
 * zero-configuration start: the cluster in `<dataDir>/postgres`, or, as root when the `postgres`
 * user cannot reach DATA_DIR, under `placementDir` (EMBEDDED_PG_DIR) with a link from
 * `<dataDir>/postgres` (embedded-postgres-placement.ts). Data persists across restarts; the first
 * start runs initdb. As root the server runs as `postgres` (PostgreSQL refuses to run as root).
 * The server is this process's child; it installs no signal handlers: its owner stops it, in order.
 */
export async function startEmbeddedPostgres(options: {
  dataDir: string;
  placementDir: string;
  port: number;
  password: string;
  /** How long a server that died may stay down before `isLive()` turns false; default 60 s. */
  restartTimeoutMs?: number;
  onLog?: (message: string) => void;
  onWarning?: (message: string) => void;
  onError?: (message: string) => void;
  /** Told when `isLive()` changes: false past `restartTimeoutMs`, true when a later restart succeeds. */
  onLivenessChange?: (live: boolean) => void;
}): Promise<EmbeddedPostgresHandle> {
  const placement = placeEmbeddedPostgres({ dataDir: options.dataDir, placementDir: options.placementDir });
  for (const warning of placement.warnings) options.onWarning?.(warning);
  const { binDir, clusterDir, runAs } = placement;
  const socket = join(clusterDir, `.s.PGSQL.${options.port}`);
  if (Buffer.byteLength(socket) > MAX_SOCKET_PATH_BYTES) {
    throw new EmbeddedPostgresError(
      `The embedded PostgreSQL's Unix socket ${socket} is longer than the ${MAX_SOCKET_PATH_BYTES} bytes a socket path may have: ` +
        `use a shorter ${placement.relocated ? 'EMBEDDED_PG_DIR' : 'DATA_DIR'}, or set DATABASE_URL.`,
    );
  }
  const locale = messageLocale();
  if (!existsSync(join(clusterDir, 'PG_VERSION'))) await initdb({ binDir, clusterDir, runAs, locale, password: options.password, onLog: options.onLog });
  await stopStaleServer(clusterDir, options.onWarning);
  const serverOptions = {
    binDir,
    clusterDir,
    runAs,
    locale,
    onLog: options.onLog,
    // Private to this service: loopback TCP, and a Unix socket in the cluster's directory, which the service
    // uses because a round trip over it costs far less CPU than over loopback TCP (measured).
    args: ['-p', String(options.port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${clusterDir}`, '-c', 'max_connections=200'],
  };
  let server: RunningServer;
  const stopping = new AbortController();
  const restartTimeoutMs = options.restartTimeoutMs ?? DEFAULT_RESTART_TIMEOUT_MS;
  let live = true;
  const setLive = (value: boolean): void => {
    live = value;
    options.onLivenessChange?.(value);
  };
  // A server that dies under the service (killed, crashed) is started again, so that the service
  // recovers by itself: requests answer 503 meanwhile (DatabaseUnavailableError), never a 500. Each
  // change of state is logged once, never each retry: died, why a restart failed (again only when
  // the reason changes), down longer than the bound (liveness red), running again.
  const restart = async (exit: string): Promise<void> => {
    const since = Date.now();
    options.onWarning?.(`The embedded PostgreSQL in ${clusterDir} stopped unexpectedly; starting it again (it ended with ${exit}).`);
    const bound = setTimeout(() => {
      setLive(false);
      options.onError?.(
        `The embedded PostgreSQL in ${clusterDir} has not started again for ${restartTimeoutMs / 1000} s; /health/live answers 503 so that a supervisor restarts the service.`,
      );
    }, restartTimeoutMs).unref();
    let lastReason: string | undefined;
    try {
      for (let attempt = 1, delayMs = RESTART_FIRST_DELAY_MS; ; attempt += 1, delayMs = Math.min(delayMs * 2, RESTART_MAX_DELAY_MS)) {
        try {
          await sleep(delayMs, undefined, { signal: stopping.signal });
        } catch {
          return; // stop() came in: it stops the server, whichever is running.
        }
        try {
          server = supervise(await startServer(serverOptions));
          if (!live) setLive(true);
          options.onWarning?.(`The embedded PostgreSQL in ${clusterDir} is running again (attempt ${attempt}, down for ${Date.now() - since} ms).`);
          return;
        } catch (error) {
          const reason = (error as Error).message;
          if (reason !== lastReason) {
            options.onWarning?.(
              `The embedded PostgreSQL in ${clusterDir} could not be started again: ${reason.replace(/\.?$/, '.')} Retrying with a growing delay (up to ${RESTART_MAX_DELAY_MS / 1000} s); this is logged again only if the reason changes.`,
            );
          }
          lastReason = reason;
        }
      }
    } finally {
      clearTimeout(bound);
    }
  };
  // A stop waits for a restart under way, so that the server it starts is stopped too, not orphaned.
  let restarting: Promise<void> | undefined;
  const supervise = (running: RunningServer): RunningServer => {
    void running.died.then((exit) => {
      restarting = restart(exit).finally(() => (restarting = undefined));
    });
    return running;
  };
  try {
    server = supervise(await startServer(serverOptions));
  } catch (error) {
    throw new Error(
      `Embedded PostgreSQL did not start on 127.0.0.1:${options.port} with data in ${clusterDir}: ${(error as Error).message}. ` +
        'Is another instance using this DATA_DIR or port? Set EMBEDDED_PG_PORT, or DATABASE_URL for an external database.',
      { cause: error },
    );
  }
  const admin = new Client({ host: '127.0.0.1', port: options.port, user: 'postgres', password: options.password, database: 'postgres' });
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await admin.end();
  }
  const password = encodeURIComponent(options.password);
  return {
    connection: { host: clusterDir, port: options.port, username: 'postgres', password: options.password, database: DATABASE },
    url: `postgresql://postgres:${password}@127.0.0.1:${options.port}/${DATABASE}`,
    socketUrl: `postgresql://postgres:${password}@localhost:${options.port}/${DATABASE}?host=${encodeURIComponent(clusterDir)}`,
    isLive: () => live,
    stop: async () => {
      stopping.abort();
      await restarting;
      await server.stop();
    },
  };
}

/**
 * A postmaster left running by a service that was killed (kill -9 leaves its child behind, orphaned)
 * holds the cluster's postmaster.pid, and the next start would fail. Such an orphan (its parent is
 * gone: reparented to init or a subreaper that is not this service) is stopped with a fast shutdown
 * and the start goes on; a postmaster still owned by a running service means another instance uses
 * this DATA_DIR, and the start stops with one sentence saying so.
 */
async function stopStaleServer(clusterDir: string, onWarning?: (message: string) => void): Promise<void> {
  const pidFile = join(clusterDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  const command = (target: number) => {
    try {
      return readFileSync(`/proc/${target}/cmdline`, 'utf8').split('\0').join(' ');
    } catch {
      return undefined;
    }
  };
  const cmdline = Number.isInteger(pid) && pid > 0 ? command(pid) : undefined;
  // No such process, or not a postgres of this cluster: the file is stale and postgres itself ignores it.
  if (!cmdline?.includes('postgres') || !cmdline.includes(clusterDir)) return;
  const parent = Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]);
  const parentCommand = command(parent) ?? '';
  if (parent !== 1 && parentCommand.includes('main.js')) {
    throw new EmbeddedPostgresError(
      `The embedded PostgreSQL in ${clusterDir} belongs to a service that is still running (process ${parent}): ` +
        'another instance uses this DATA_DIR. Stop it first, or give this one its own DATA_DIR.',
    );
  }
  onWarning?.(`A PostgreSQL (process ${pid}) left running by a service that was killed holds ${clusterDir}; stopping it before starting.`);
  process.kill(pid, 'SIGINT');
  for (let i = 0; i < 100; i++) {
    if (command(pid) === undefined) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new EmbeddedPostgresError(
    `The PostgreSQL (process ${pid}) left running on ${clusterDir} by a killed service did not stop within 10 s; stop it (kill ${pid}) and start again.`,
  );
}

interface ServerOptions {
  binDir: string;
  clusterDir: string;
  runAs?: PostgresUser;
  locale: string;
  onLog?: (message: string) => void;
}

/** initdb as embedded-postgres ran it (password authentication, user postgres), with the password file beside the cluster. */
async function initdb(options: ServerOptions & { password: string }): Promise<void> {
  const { binDir, clusterDir, runAs, locale } = options;
  mkdirSync(clusterDir, { recursive: true });
  if (runAs) chownSync(clusterDir, runAs.uid, runAs.gid);
  const passwordFile = join(dirname(clusterDir), `.pg-password-${randomBytes(6).toString('hex')}`);
  writeFileSync(passwordFile, `${options.password}\n`, { mode: 0o600, flag: 'wx' });
  try {
    if (runAs) chownSync(passwordFile, runAs.uid, runAs.gid);
    const initdbBinary = executable(join(binDir, 'initdb'));
    const args = [`--pgdata=${clusterDir}`, '--auth=password', '--username=postgres', `--pwfile=${passwordFile}`, `--lc-messages=${locale}`];
    const child = spawn(initdbBinary, args, { ...runAs, cwd: '/', env: serverEnvironment(locale), stdio: ['ignore', 'pipe', 'pipe'] });
    let errors = '';
    child.stdout!.on('data', (chunk: Buffer) => options.onLog?.(chunk.toString('utf8')));
    child.stderr!.on('data', (chunk: Buffer) => {
      errors += chunk.toString('utf8');
      options.onLog?.(chunk.toString('utf8'));
    });
    await new Promise<void>((done, fail) => {
      child.once('error', fail);
      child.once('close', (code, signal) => (code === 0 ? done() : fail(new Error(`initdb failed (${code ?? signal}): ${errors.trim()}`))));
    });
  } finally {
    unlinkSync(passwordFile);
  }
}

interface RunningServer {
  stop(): Promise<void>;
  /** Settles, with how it exited, when the server exits without being asked to stop. */
  died: Promise<string>;
}

/** The postmaster as a child process; answers once it accepts connections. */
function startServer(options: ServerOptions & { args: string[] }): Promise<RunningServer> {
  const { binDir, clusterDir, runAs, locale } = options;
  const child: ChildProcess = spawn(executable(join(binDir, 'postgres')), ['-D', clusterDir, ...options.args], {
    ...runAs,
    cwd: '/',
    env: serverEnvironment(locale),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<string>((done) => child.once('exit', (code, signal) => done(signal === null ? `exit code ${code}` : `signal ${signal}`)));
  let asked = false;
  // A process that exits without stopping its server (process.exit after a failed start) still stops it.
  const stopOnExit = () => child.kill('SIGINT');
  process.once('exit', stopOnExit);
  const server: RunningServer = {
    async stop() {
      asked = true;
      process.removeListener('exit', stopOnExit);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
      await exited;
    },
    died: exited.then((exit) => {
      if (asked) return new Promise<string>(() => undefined);
      process.removeListener('exit', stopOnExit);
      return exit;
    }),
  };
  return new Promise((done, fail) => {
    let output = '';
    let ready = false;
    // Read for as long as the server runs: a full pipe would block its logging.
    child.stderr!.on('data', (chunk: Buffer) => {
      const message = chunk.toString('utf8');
      options.onLog?.(message);
      if (ready) return;
      output = (output + message).slice(-4000);
      if (output.includes('database system is ready to accept connections')) {
        ready = true;
        done(server);
      }
    });
    child.once('error', (error) => {
      process.removeListener('exit', stopOnExit);
      fail(error);
    });
    child.once('exit', (code, signal) => {
      process.removeListener('exit', stopOnExit);
      if (!ready) fail(new Error(`postgres exited (${code ?? signal}) before accepting connections: ${lastLines(output)}`));
    });
  });
}

/** What the server needs of this process's environment (locale, time zone), and nothing else: no secret reaches its environment. */
function serverEnvironment(locale: string): NodeJS.ProcessEnv {
  // eslint-disable-next-line no-restricted-properties -- not configuration: the locale and time zone the server inherits, filtered.
  const kept = Object.entries(process.env).filter(([name]) => /^(PATH|LANG|LANGUAGE|LC_[A-Z]+|TZ|TZDIR)$/.test(name));
  return { ...Object.fromEntries(kept), LC_MESSAGES: locale };
}

/**
 * An English locale for the server's messages, as embedded-postgres chose it: readiness is read from
 * the server's log line, so it must be in a known language.
 */
function messageLocale(): string {
  try {
    const available = new Set(
      execFileSync('locale', ['-a'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
        .split(/\r?\n/)
        .map((l) => l.trim()),
    );
    return ['en_US.UTF-8', 'C.UTF-8', 'en_US.utf8'].find((l) => available.has(l)) ?? 'C';
  } catch {
    return 'C';
  }
}

/** Packaged binaries occasionally lose their execute bits; put them back (harmless when present, skipped when read-only). */
function executable(path: string): string {
  const mode = statSync(path).mode;
  if ((mode & 0o555) !== 0o555) {
    try {
      chmodSync(path, mode | 0o555);
    } catch {
      // A read-only install: the spawn reports what is wrong.
    }
  }
  return path;
}

/** The server's last lines, without the log line prefix (time and process id), so that one cause reads the same each time. */
function lastLines(text: string): string {
  const lines = text
    .trim()
    .split('\n')
    .slice(-3)
    .map((line) => line.replace(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? \S+ \[\d+\] /, '').trim());
  return lines.join(' ').trim() || '(no output)';
}
