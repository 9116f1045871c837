import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createSuiteDatabase, freePort, startService, stopAllServices, waitReady } from '@app/testing';

const ADMIN_SECRET = 'chaos-shutdown-admin-secret-0123456789';

/**
 * Issue 15 item 3 as an operator meets it: SIGTERM to a WORKERS=2 service under token load on
 * loopback. Readiness turns red first, requests in flight finish, a request that still arrives on a
 * kept-alive connection gets a 503 in the OAuth format, never a 500 or Fastify's own body; the
 * workers stop, then the primary, and the exit code is 0. Bounded: about two seconds of load.
 */
describe('SIGTERM under load (chaos, loopback)', () => {
  afterAll(() => stopAllServices());

  it('WORKERS=2: no 500, only 200 or an OAuth 503 while closing, and exit 0', async () => {
    const dataDir = join(process.env.TEST_RUN_DIR!, `shutdown-${randomBytes(4).toString('hex')}`);
    mkdirSync(dataDir, { recursive: true });
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const service = startService({
      NODE_ENV: 'test',
      WORKERS: '2',
      PORT: String(port),
      HOST: '127.0.0.1',
      METRICS_PORT: String(await freePort()),
      DATA_DIR: dataDir,
      DATABASE_URL: await createSuiteDatabase(),
      PUBLIC_BASE_URL: base,
      PKCS11_MODULE: process.env.TEST_PKCS11_MODULE!,
      PKCS11_TOKEN_LABEL: process.env.TEST_PKCS11_TOKEN_LABEL!,
      PKCS11_PIN: process.env.TEST_PKCS11_PIN!,
      SOFTHSM2_CONF: process.env.SOFTHSM2_CONF!,
      SECRET_PEPPER: 'chaos-pepper-0123456789abcdef0123456789abcdef',
      DATA_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 9).toString('base64')}`,
      PLATFORM_ADMIN_SECRET: ADMIN_SECRET,
    });
    await waitReady(base, service);

    const statuses: number[] = [];
    const unexpected: string[] = [];
    let exited = false;
    void service.exited.then(() => (exited = true));
    const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: 'platform-admin', client_secret: ADMIN_SECRET }).toString();
    const loop = async () => {
      while (!exited) {
        try {
          const response = await fetch(`${base}/authentication/customer/platform/token`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
            body,
          });
          const answer = (await response.json()) as { error?: string; access_token?: string };
          statuses.push(response.status);
          const ok = (response.status === 200 && answer.access_token) || (response.status === 503 && answer.error === 'temporarily_unavailable');
          if (!ok) unexpected.push(`${response.status} ${JSON.stringify(answer)}`);
        } catch {
          // Refused or reset once the server stopped accepting: expected, and no answer to judge.
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }
    };
    const loops = Array.from({ length: 8 }, loop);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const before = statuses.length;
    service.process.kill('SIGTERM');
    const code = await service.exited;
    await Promise.all(loops);

    expect(before).toBeGreaterThan(20);
    expect(unexpected).toEqual([]);
    expect(statuses.filter((s) => s >= 500 && s !== 503)).toEqual([]);
    expect({ code, log: service.output().includes('stopping the workers') }).toEqual({ code: 0, log: true });
  }, 60_000);
});
