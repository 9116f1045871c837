import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freePort, startService, stopAllServices, stopService, waitReady } from '@app/testing';

const ADMIN_SECRET = 'walkthrough-admin-secret-0123456789abcdef';

/** The README's "Issue a card end to end" block, as it is written there. */
function walkthrough(): string {
  const readme = readFileSync(resolve(__dirname, '../README.md'), 'utf8');
  const marker = readme.indexOf('<!-- walkthrough -->');
  expect(marker).toBeGreaterThan(0);
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(marker));
  return block![1];
}

/**
 * Issue 14: the README's walk-through, pasted into bash against the service started as `npm start`
 * starts it (embedded PostgreSQL, its own SoftHSM2 token): the certificate the sync session answers
 * verifies with openssl against the chain, and after a revoke its serial is on the CRL.
 */
describe('README walk-through (Issue 14)', () => {
  afterAll(() => stopAllServices());

  it('issues a card end to end: openssl verify says OK and the revoked serial is on the CRL', async () => {
    const root = join(process.env.TEST_RUN_DIR!, `walkthrough-${randomBytes(4).toString('hex')}`);
    mkdirSync(root, { recursive: true });
    chmodSync(root, 0o755);
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const service = startService({
      DATA_DIR: join(root, 'data'),
      PORT: String(port),
      HOST: '127.0.0.1',
      METRICS_PORT: String(await freePort()),
      EMBEDDED_PG_PORT: String(await freePort()),
      EMBEDDED_PG_DIR: process.env.TEST_EMBEDDED_PG_DIR!,
      PUBLIC_BASE_URL: base,
      PLATFORM_ADMIN_SECRET: ADMIN_SECRET,
    });
    await waitReady(base, service);
    // The first lines of the README's first block, with the administrator's secret this test set.
    const prelude = [
      // A failing call stops the block with its answer on stderr (the README's calls use plain curl -s).
      'curl() { command curl -sS --fail-with-body "$@"; }',
      `B=${base}`,
      `ADMIN=$(curl -s $B/authentication/customer/platform/token -d grant_type=client_credentials -d client_id=platform-admin --data-urlencode client_secret=${ADMIN_SECRET} | sed 's/.*"access_token":"\\([^"]*\\)".*/\\1/')`,
      "APP=(-H 'Application-ID: com.example.quickstart' -H 'Application-Version: 1.0')",
    ].join('\n');
    const run = spawnSync('bash', ['-eo', 'pipefail', '-c', `${prelude}\n${walkthrough()}`], { cwd: root, encoding: 'utf8', timeout: 60_000 });
    const output = `${run.stdout}\n${run.stderr}`;
    expect({ status: run.status, output, service: run.status === 0 ? '' : service.output() }).toEqual({
      status: 0,
      output: expect.stringContaining('card.pem: OK'),
      service: '',
    });
    expect(run.stdout).toContain('approved\n');
    expect(run.stdout).toContain('REVOKED\n');
    const serial = spawnSync('openssl', ['x509', '-in', join(root, 'card.pem'), '-noout', '-serial'], { encoding: 'utf8' })
      .stdout.trim()
      .split('=')[1];
    expect(serial).toMatch(/^[0-9A-F]{30,40}$/);
    expect(run.stdout).toContain(`Serial Number: ${serial}`);
    expect(run.stdout).toMatch(/Key Compromise/);
    expect(await stopService(service)).toBe(0);
  }, 120_000);
});
