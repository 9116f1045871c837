import { ChildProcess, spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { serviceArgs } from '../../ops/service-command';

const ROOT = resolve(__dirname, '../..');
export const APPLICATION_HEADERS = { 'Application-ID': 'com.example.start-test', 'Application-Version': '1.0' };

/** The service as a real process, as `npm start` runs it (test/support/global-setup.ts compiles dist/ once per run). */
export interface ServiceProcess {
  process: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** Every service started by this suite, so that none outlives a failed assertion (`stopAllServices`). */
const started: ChildProcess[] = [];

/** Ports this process has handed out: a port closed a moment ago is free again at once. */
const handedOut = new Set<number>();

/**
 * Each jest worker draws from its own band of ports below the kernel's ephemeral range
 * (32768-60999 on Linux), so that two workers never hand out the same port: the kernel's choice
 * for port 0 is shared by every process, and one worker's service was seen answering another's test.
 */
const BAND = 2000;
const FIRST_PORT = 12000;
const WORKER = (Number(process.env.JEST_WORKER_ID ?? '1') - 1) % 10;

/**
 * A loopback port that refuses connections for the whole run, for the tests of "nothing listens".
 * Not a port a test has just closed: other suites run beside it in other workers, whose servers listen
 * on port 0 and can be handed that port at once (an in-process test app answered a health check so).
 * listen(0) hands out ports from the ephemeral range and freePort() from its bands, never port 1.
 */
export const REFUSING_PORT = 1;

/**
 * A loopback port nothing listens on, never one this process handed out before: a test asks for
 * several (service, metrics, embedded PostgreSQL) before any is bound.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 500; attempt++) {
    const port = FIRST_PORT + WORKER * BAND + randomInt(BAND);
    if (handedOut.has(port)) continue;
    const free = await new Promise<boolean>((done) => {
      const server = createServer().once('error', () => done(false));
      server.listen(port, '127.0.0.1', () => server.close(() => done(true)));
    });
    if (free) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`No free port in ${FIRST_PORT + WORKER * BAND}-${FIRST_PORT + (WORKER + 1) * BAND - 1} after 500 attempts.`);
}

export function startService(env: Record<string, string>): ServiceProcess {
  const child = spawn(process.execPath, serviceArgs(), { cwd: ROOT, env: { PATH: process.env.PATH!, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return { process: child, output: () => output, exited };
}

export async function waitReady(base: string, service: ServiceProcess): Promise<void> {
  for (let i = 0; i < 120; i++) {
    if (service.process.exitCode !== null) throw new Error(`service exited: ${service.output()}`);
    try {
      if ((await fetch(`${base}/health/ready`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`service not ready: ${service.output()}`);
}

export async function stopService(service: ServiceProcess): Promise<number | null> {
  service.process.kill('SIGTERM');
  return service.exited;
}

export async function stopAllServices(): Promise<void> {
  for (const child of started.filter((c) => c.exitCode === null && c.signalCode === null)) {
    child.kill('SIGTERM');
    await new Promise((done) => child.once('exit', done));
  }
}
