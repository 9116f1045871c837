import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { MIGRATIONS } from '../migrations';
import { serviceArgs } from '../ops/service-command';
import { ROOT, yamlDocuments } from './support/deploy-files';
import { freePort } from './support/service-process';

/**
 * docker-compose.yml's service configuration, executed without a container engine: the secrets from
 * make-secrets.sh, the demo token from init-demo-hsm.sh, and two built service processes started
 * together with the instances' environment (NODE_ENV=production as in the image) on one empty
 * database and the one shared token. What the containers, HAProxy and Docker's networking add is
 * not executed here (deploy/README.md).
 */

const SOFTHSM_MODULE = '/usr/lib/softhsm/libsofthsm2.so';
const started: ChildProcess[] = [];

interface Instance {
  base: string;
  port: number;
  process: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function startInstance(env: Record<string, string>): Promise<Instance> {
  const port = await freePort();
  const metricsPort = await freePort();
  const child = spawn(process.execPath, serviceArgs(), {
    cwd: ROOT,
    env: { PATH: process.env.PATH!, ...env, PORT: String(port), METRICS_PORT: String(metricsPort), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return { base: `http://127.0.0.1:${port}`, port, process: child, output: () => output, exited };
}

async function waitReady(instance: Instance): Promise<void> {
  for (let i = 0; i < 160; i++) {
    if (instance.process.exitCode !== null) throw new Error(`service exited: ${instance.output()}`);
    try {
      if ((await fetch(`${instance.base}/health/ready`)).status === 200) return;
    } catch {
      // not listening yet: migrations and the HSM login come first
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`service not ready: ${instance.output()}`);
}

const healthcheck = (port: number) =>
  new Promise<number | null>((done) => {
    const child = spawn(process.execPath, [join(ROOT, 'ops/healthcheck.js')], { env: { PATH: process.env.PATH!, PORT: String(port) }, stdio: 'ignore' });
    child.once('exit', (code) => done(code));
  });

describe('docker-compose.yml configuration, run as processes', () => {
  const [compose] = yamlDocuments('docker-compose.yml', 'compose');
  const services = compose.services as Record<string, { environment?: Record<string, string> }>;
  const instanceEnv = services['platform-1'].environment!;
  const work = mkdtempSync(join(tmpdir(), 'compose-topology-'));
  const secrets = join(work, 'secrets');
  const hsmDir = join(work, 'softhsm');
  const dataDir = join(work, 'data');
  const database = `cp_compose_${process.pid}`;
  const adminUrl = process.env.TEST_PG_ADMIN_URL!;
  const module = existsSync(SOFTHSM_MODULE) ? SOFTHSM_MODULE : process.env.TEST_PKCS11_MODULE!;
  const initEnv = {
    PATH: process.env.PATH!,
    DEMO_HSM_DIR: hsmDir,
    PKCS11_MODULE: module,
    PKCS11_TOKEN_LABEL: services['hsm-init'].environment!.PKCS11_TOKEN_LABEL,
    PKCS11_PIN_FILE: join(secrets, 'pkcs11_pin'),
    PKCS11_SO_PIN_FILE: join(secrets, 'pkcs11_so_pin'),
  };

  beforeAll(async () => {
    execFileSync('sh', [join(ROOT, 'deploy/compose/make-secrets.sh'), secrets]);
    mkdirSync(dataDir);
    const admin = new Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database}`);
    await admin.query(`CREATE DATABASE ${database}`);
    await admin.end();
  });

  afterAll(async () => {
    for (const child of started) if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(work, { recursive: true, force: true });
    const admin = new Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  });

  it('init-demo-hsm.sh provisions one token with one key, and a second run changes nothing', () => {
    const first = execFileSync('sh', [join(ROOT, 'deploy/compose/init-demo-hsm.sh')], { env: initEnv, encoding: 'utf8' });
    expect(first).toMatch(/provisioned in/);
    const marker = readFileSync(join(hsmDir, 'provisioned'), 'utf8');
    const second = execFileSync('sh', [join(ROOT, 'deploy/compose/init-demo-hsm.sh')], { env: initEnv, encoding: 'utf8' });
    expect(second).toMatch(/already provisioned; nothing to do/);
    expect(readFileSync(join(hsmDir, 'provisioned'), 'utf8')).toBe(marker);
    const conf = join(hsmDir, 'softhsm2.conf');
    const slots = execFileSync('softhsm2-util', ['--show-slots'], { env: { PATH: process.env.PATH!, SOFTHSM2_CONF: conf }, encoding: 'utf8' });
    expect([...slots.matchAll(/^\s*Label:\s*platform\s*$/gm)]).toHaveLength(1);
    const pin = readFileSync(initEnv.PKCS11_PIN_FILE, 'utf8').trim();
    const keys = execFileSync(
      'pkcs11-tool',
      ['--module', module, '--token-label', 'platform', '--login', '--pin', pin, '--list-objects', '--type', 'privkey'],
      {
        env: { PATH: process.env.PATH!, SOFTHSM2_CONF: conf },
        encoding: 'utf8',
      },
    );
    expect([...keys.matchAll(/label:\s*JWT_KEY$/gm)]).toHaveLength(1);
    // The PINs never reach the output.
    expect(first + second).not.toContain(pin);
  });

  it('two production instances start together on an empty database and the shared token, and act as one service', async () => {
    const platformEnv = Object.fromEntries(
      readFileSync(join(secrets, 'platform.env'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    const env = {
      ...instanceEnv,
      ...platformEnv,
      // The image's ENV, and the paths of this machine instead of the containers'.
      NODE_ENV: 'production',
      DATA_DIR: dataDir,
      DATABASE_URL: withDatabase(adminUrl, database),
      PKCS11_MODULE: module,
      PKCS11_PIN_FILE: join(secrets, 'pkcs11_pin'),
      SOFTHSM2_CONF: join(hsmDir, 'softhsm2.conf'),
    };
    const [one, two] = await Promise.all([startInstance(env), startInstance(env)]);
    await Promise.all([waitReady(one), waitReady(two)]);

    // Both ran the migrations at start; the advisory lock let one apply each migration once.
    const db = new Client({ connectionString: env.DATABASE_URL });
    await db.connect();
    const { rows } = await db.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY id');
    await db.end();
    expect(rows.map((r) => r.name)).toEqual(MIGRATIONS.map((m) => m.name));

    // The platform administrator's secret comes from platform.env; a token from one instance is
    // accepted by the other, because both sign with the one key on the shared token.
    const tokenResponse = await fetch(`${one.base}/authentication/customer/platform/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'platform-admin', client_secret: platformEnv.PLATFORM_ADMIN_SECRET }),
    });
    expect(tokenResponse.status).toBe(200);
    const { access_token: token } = (await tokenResponse.json()) as { access_token: string };
    const whoami = await fetch(`${two.base}/authentication/customer/platform/whoami`, { headers: { Authorization: `Bearer ${token}` } });
    expect(whoami.status).toBe(200);
    expect(((await whoami.json()) as { clientId: string }).clientId).toBe('platform-admin');
    const jwks = await Promise.all([one, two].map(async (i) => (await fetch(`${i.base}/authentication/customer/platform/.well-known/jwks.json`)).json()));
    expect(jwks[0]).toEqual(jwks[1]);

    // With every secret configured nothing is written to DATA_DIR, so a read-only root file system holds.
    expect(readdirSync(dataDir)).toEqual([]);
    // The platform administrator person gets no link written: the log says which command gives it.
    expect(one.output() + two.output()).toContain('npm run cli -- user enrolment-link platform admin');
    expect(one.output() + two.output()).not.toMatch(/\/enrol\/[A-Za-z0-9_-]{20,}/);
    // No secret reaches the logs.
    for (const secret of [platformEnv.PLATFORM_ADMIN_SECRET, platformEnv.SECRET_PEPPER, readFileSync(env.PKCS11_PIN_FILE, 'utf8').trim()]) {
      expect(one.output() + two.output()).not.toContain(secret);
    }

    expect(await healthcheck(one.port)).toBe(0);
    expect(await healthcheck(two.port)).toBe(0);
    two.process.kill('SIGTERM');
    expect(await two.exited).toBe(0);
    expect(await healthcheck(two.port)).toBe(1);
    // The remaining instance still serves the token.
    expect((await fetch(`${one.base}/authentication/customer/platform/whoami`, { headers: { Authorization: `Bearer ${token}` } })).status).toBe(200);
    one.process.kill('SIGTERM');
    expect(await one.exited).toBe(0);
  }, 90_000);
});
