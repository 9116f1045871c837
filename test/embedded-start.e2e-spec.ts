import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { request as httpsRequest } from 'node:https';
import type { SecureVersion, TLSSocket } from 'node:tls';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';

const ROOT = resolve(__dirname, '..');
const MAIN = join(ROOT, 'dist/apps/api/src/main.js');
const APPLICATION_HEADERS = { 'Application-ID': 'com.example.start-test', 'Application-Version': '1.0' };
/** Every service started here, so that none outlives a failed assertion. */
const started: ChildProcess[] = [];

interface Service {
  process: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer().once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

function start(env: Record<string, string>): Service {
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: { PATH: process.env.PATH!, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return { process: child, output: () => output, exited };
}

async function waitReady(base: string, service: Service): Promise<void> {
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

async function stop(service: Service): Promise<number | null> {
  service.process.kill('SIGTERM');
  return service.exited;
}

/**
 * The README's start path as a real process: no DATABASE_URL and no PKCS11_MODULE, so the service
 * runs its embedded PostgreSQL and provisions its own SoftHSM2 token under DATA_DIR, bootstraps the
 * platform administrator once, and keeps its data (and its tokens' validity) across a restart.
 */
describe('start on the embedded defaults', () => {
  let env: Record<string, string>;
  let base: string;
  let dataDir: string;

  beforeAll(async () => {
    execFileSync(join(ROOT, 'node_modules/.bin/swc'), ['apps', 'libs', 'migrations', '-d', 'dist', '--quiet'], { cwd: ROOT });
    dataDir = join(process.env.TEST_RUN_DIR!, `embedded-${randomBytes(4).toString('hex')}`);
    mkdirSync(dataDir, { recursive: true });
    chmodSync(dataDir, 0o755);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = {
      DATA_DIR: join(dataDir, 'data'),
      PORT: String(port),
      HOST: '127.0.0.1',
      METRICS_PORT: String(await freePort()),
      EMBEDDED_PG_PORT: String(await freePort()),
      PUBLIC_BASE_URL: base,
    };
  });

  afterAll(async () => {
    for (const child of started.filter((c) => c.exitCode === null && c.signalCode === null)) {
      child.kill('SIGTERM');
      await new Promise((done) => child.once('exit', done));
    }
  });

  it('starts, bootstraps once, serves tokens, stops gracefully, and keeps tokens valid across a restart', async () => {
    const first = start(env);
    await waitReady(base, first);

    const credentialsFile = join(env.DATA_DIR, 'bootstrap-credentials');
    expect(statSync(credentialsFile).mode & 0o777).toBe(0o600);
    expect(statSync(join(env.DATA_DIR, 'secrets.json')).mode & 0o777).toBe(0o600);
    const credentials = readFileSync(credentialsFile, 'utf8');
    const secret = /client_secret=(\S+)/.exec(credentials)![1];
    expect(credentials).toContain('client_id=platform-admin');
    expect(first.output()).toContain(credentialsFile);
    expect(first.output()).not.toContain(secret);

    const tokenResponse = await fetch(`${base}/authentication/customer/platform/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'platform-admin', client_secret: secret }),
    });
    expect(tokenResponse.status).toBe(200);
    const { access_token: token } = (await tokenResponse.json()) as { access_token: string };
    const whoami = () => fetch(`${base}/authentication/customer/platform/whoami`, { headers: { Authorization: `Bearer ${token}` } });
    expect((await whoami()).status).toBe(200);
    const created = await fetch(`${base}/admin/v1/organizations`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', ...APPLICATION_HEADERS },
      body: JSON.stringify({ id: 'kept', name: 'Kept across restarts' }),
    });
    expect(created.status).toBe(201);

    // DECISIONS 1: Prometheus metrics on their own port, never on the public one.
    const metrics = await fetch(`http://127.0.0.1:${env.METRICS_PORT}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
    const exposition = await metrics.text();
    expect(exposition).toMatch(/^tokens_issued_total\{method="client_secret_post"\} 1$/m);
    expect(exposition).toMatch(/^http_request_duration_seconds_count\{method="POST",route="\/admin\/v1\/organizations",status="201"\} 1$/m);
    expect((await fetch(`${base}/metrics`)).status).toBe(404);
    expect(await stop(first)).toBe(0);

    const second = start(env);
    try {
      await waitReady(base, second);
      const again = await whoami();
      expect(again.status).toBe(200);
      expect(await again.json()).toMatchObject({ clientId: 'platform-admin', org: 'platform', role: 'Administration' });
      const kept = await fetch(`${base}/admin/v1/organizations/kept`, { headers: { Authorization: `Bearer ${token}`, ...APPLICATION_HEADERS } });
      expect(kept.status).toBe(200);
      expect(readFileSync(credentialsFile, 'utf8')).toBe(credentials);
    } finally {
      expect(await stop(second)).toBe(0);
    }
  }, 90_000);

  it('WORKERS=2: one primary owns PostgreSQL and the HSM token, two workers share the port, metrics are summed', async () => {
    const clusterEnv: Record<string, string> = {
      ...env,
      DATA_DIR: join(dataDir, 'cluster-data'),
      WORKERS: '2',
      PLATFORM_ADMIN_SECRET: 'cluster-admin-secret-0123456789abcdef',
    };
    const service = start(clusterEnv);
    try {
      await waitReady(base, service);
      // The primary's children: the embedded PostgreSQL's postmaster and the two service workers.
      const children = execFileSync('ps', ['-o', 'args=', '--ppid', String(service.process.pid)], { encoding: 'utf8' })
        .trim()
        .split('\n');
      expect(children.filter((command) => command.includes('dist/apps/api/src/main.js'))).toHaveLength(2);
      const issued = [];
      for (let i = 0; i < 6; i++) {
        const response = await fetch(`${base}/authentication/customer/platform/token`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/x-www-form-urlencoded', Connection: 'close' },
          body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'platform-admin', client_secret: clusterEnv.PLATFORM_ADMIN_SECRET }),
        });
        expect(response.status).toBe(200);
        issued.push(((await response.json()) as { access_token: string }).access_token);
      }
      // A token from one worker works on any (fresh connections spread over the workers).
      for (const token of issued) {
        const whoami = await fetch(`${base}/authentication/customer/platform/whoami`, { headers: { Authorization: `Bearer ${token}`, Connection: 'close' } });
        expect(whoami.status).toBe(200);
      }
      const exposition = await (await fetch(`http://127.0.0.1:${clusterEnv.METRICS_PORT}/metrics`)).text();
      expect(exposition).toMatch(/^tokens_issued_total\{method="client_secret_post"\} 6$/m);
    } finally {
      expect(await stop(service)).toBe(0);
    }
    expect(service.output()).toContain('cluster primary started its workers');
    expect(service.output()).toContain('stopping the workers');
  }, 90_000);

  it('refuses to start, naming what is missing: a PKCS#11 module that does not exist', async () => {
    const service = start({ ...env, PKCS11_MODULE: '/nonexistent/libpkcs11.so', PKCS11_PIN: '1234' });
    expect(await service.exited).toBe(1);
    expect(service.output()).toMatch(/Start-up failed: .*\/nonexistent\/libpkcs11\.so/);
  }, 30_000);

  it('refuses to start with a wrong PIN, without retrying the login', async () => {
    const service = start({
      ...env,
      PKCS11_MODULE: process.env.TEST_PKCS11_MODULE!,
      PKCS11_TOKEN_LABEL: process.env.TEST_PKCS11_TOKEN_LABEL!,
      PKCS11_PIN: 'wrong-pin',
      SOFTHSM2_CONF: process.env.SOFTHSM2_CONF!,
    });
    expect(await service.exited).toBe(1);
    expect(service.output()).toMatch(/Start-up failed: .*PIN/);
  }, 30_000);

  it('refuses to start on a malformed scopeAssignment.properties, naming file and line', async () => {
    const file = join(dataDir, 'broken.properties');
    writeFileSync(file, 'roleWithScope.name.1=Desk\nroleWithScope.scopes.1=Scope.nothing\n');
    const service = start({ ...env, SCOPE_ASSIGNMENT_FILE: file });
    expect(await service.exited).toBe(1);
    expect(service.output()).toContain(`Start-up failed: ${file}:2: unknown scope "Scope.nothing"`);
  }, 30_000);

  it('serves HTTPS itself with TLS_CERT_FILE and TLS_KEY_FILE: TLS 1.2 or above, HSTS on every answer', async () => {
    const key = join(dataDir, 'tls.key');
    const cert = join(dataDir, 'tls.pem');
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1'],
      { stdio: 'ignore' },
    );
    const port = Number(env.PORT);
    const service = start({ ...env, TLS_CERT_FILE: cert, TLS_KEY_FILE: key, PUBLIC_BASE_URL: `https://127.0.0.1:${port}` });
    try {
      const get = (tls: { minVersion?: SecureVersion; maxVersion?: SecureVersion }) =>
        new Promise<{ status: number; hsts: string | undefined; protocol: string | null }>((done, fail) => {
          const request = httpsRequest({ host: '127.0.0.1', port, path: '/health/live', rejectUnauthorized: false, ...tls }, (response) => {
            response.resume();
            done({
              status: response.statusCode!,
              hsts: response.headers['strict-transport-security'] as string | undefined,
              protocol: (response.socket as TLSSocket).getProtocol(),
            });
          });
          request.once('error', fail).end();
        });
      let answer: { status: number; hsts: string | undefined; protocol: string | null } | undefined;
      for (let i = 0; i < 120 && !answer; i++) {
        answer = await get({ minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2' }).catch(async () => {
          if (service.process.exitCode !== null) throw new Error(service.output());
          await new Promise((r) => setTimeout(r, 250));
          return undefined;
        });
      }
      expect(answer).toEqual({ status: 200, hsts: 'max-age=31536000; includeSubDomains', protocol: 'TLSv1.2' });
      expect((await get({ minVersion: 'TLSv1.3' })).protocol).toBe('TLSv1.3');
      await expect(get({ minVersion: 'TLSv1', maxVersion: 'TLSv1.1' })).rejects.toThrow();
    } finally {
      expect(await stop(service)).toBe(0);
    }
  }, 60_000);

  it('refuses to start on invalid configuration, naming the variable', async () => {
    const service = start({ ...env, ACCESS_TOKEN_LIFETIME_S: 'soon', NODE_ENV: 'production' });
    expect(await service.exited).toBe(1);
    expect(service.output()).toMatch(/ACCESS_TOKEN_LIFETIME_S/);
  }, 30_000);
});
