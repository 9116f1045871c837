import { ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');
/** The built service (test/support/global-setup.ts compiles dist/ once per run). */
export const SERVICE_MAIN = join(ROOT, 'dist/apps/api/src/main.js');
export const APPLICATION_HEADERS = { 'Application-ID': 'com.example.start-test', 'Application-Version': '1.0' };

/** The service as a real process, as `npm start` runs it. */
export interface ServiceProcess {
  process: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** Every service started by this suite, so that none outlives a failed assertion (`stopAllServices`). */
const started: ChildProcess[] = [];

/** Ports this process has handed out: the kernel may offer a closed one again at once. */
const handedOut = new Set<number>();

/**
 * A loopback port nothing listens on, never one this process handed out before: a test asks for
 * several (service, metrics, embedded PostgreSQL) before any is bound, and the kernel can return a
 * port it just gave back (seen: PostgreSQL and the service on one port, EADDRINUSE).
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((done, fail) => {
      const server = createServer().once('error', fail);
      server.listen(0, '127.0.0.1', () => {
        const { port: bound } = server.address() as { port: number };
        server.close(() => done(bound));
      });
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}

export function startService(env: Record<string, string>): ServiceProcess {
  const child = spawn(process.execPath, [SERVICE_MAIN], { cwd: ROOT, env: { PATH: process.env.PATH!, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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
