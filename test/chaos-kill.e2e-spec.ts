import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, startService, stopAllServices, stopService, waitReady } from '@app/testing';

const ADMIN_SECRET = 'chaos-kill-admin-secret-0123456789abcdef';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Issue 15 item 4 on the embedded defaults, on loopback: kill -9 of the service under token load
 * leaves its PostgreSQL running; the next start stops that orphan and serves, and every token
 * answered 200 before the kill is still valid. Then the embedded PostgreSQL itself is killed under
 * the running service: it is started again, and the service answers again without a restart.
 */
describe('kill -9 (chaos, loopback)', () => {
  afterAll(() => stopAllServices());

  it('a killed service leaves no data that blocks the next start; a killed database comes back by itself', async () => {
    const root = join(process.env.TEST_RUN_DIR!, `kill-${randomBytes(4).toString('hex')}`);
    mkdirSync(root, { recursive: true });
    chmodSync(root, 0o755);
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = {
      DATA_DIR: join(root, 'data'),
      PORT: String(port),
      HOST: '127.0.0.1',
      METRICS_PORT: String(await freePort()),
      EMBEDDED_PG_PORT: String(await freePort()),
      EMBEDDED_PG_DIR: process.env.TEST_EMBEDDED_PG_DIR!,
      PUBLIC_BASE_URL: base,
      PLATFORM_ADMIN_SECRET: ADMIN_SECRET,
    };
    const grant = () =>
      fetch(`${base}/authentication/customer/platform/token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'platform-admin', client_secret: ADMIN_SECRET }),
      });
    const whoami = (token: string) => fetch(`${base}/authentication/customer/platform/whoami`, { headers: { Authorization: `Bearer ${token}` } });

    const first = startService(env);
    await waitReady(base, first);
    const tokens: string[] = [];
    let killed = false;
    const load = async () => {
      while (!killed) {
        try {
          const response = await grant();
          if (response.status === 200) tokens.push(((await response.json()) as { access_token: string }).access_token);
        } catch {
          // the kill cut the connection
        }
      }
    };
    const loops = Array.from({ length: 4 }, load);
    await new Promise((resolve) => setTimeout(resolve, 700));
    first.process.kill('SIGKILL');
    killed = true;
    await Promise.all(loops);
    await first.exited;
    expect(tokens.length).toBeGreaterThan(5);

    // The postmaster the killed service started is still running, on the cluster it holds.
    const clusterLink = join(env.DATA_DIR, 'postgres');
    const pidFile = join(clusterLink, 'postmaster.pid');
    expect(existsSync(pidFile)).toBe(true);
    const orphan = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    expect(alive(orphan)).toBe(true);

    const second = startService(env);
    await waitReady(base, second);
    expect(alive(orphan)).toBe(false);
    expect(second.output()).toContain('left running by a service that was killed');
    // Every token answered 200 before the kill was recorded: it works after the restart.
    const checks = await Promise.all(tokens.map(async (token) => (await whoami(token)).status));
    expect(checks.filter((status) => status !== 200)).toEqual([]);

    // The embedded database dies under the running service: started again, and the service answers again.
    const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    process.kill(postmaster, 'SIGKILL');
    let recovered = 0;
    for (let i = 0; i < 100 && recovered !== 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      recovered = await grant().then(
        (r) => r.status,
        () => 0,
      );
    }
    // On failure, the service's own last words say why it did not come back.
    expect({ recovered, output: recovered === 200 ? '' : second.output().slice(-4000) }).toEqual({ recovered: 200, output: '' });
    expect(second.output()).toContain('stopped unexpectedly; starting it again');
    // The service's own output says why, when it does not exit 0.
    const code = await stopService(second);
    expect({ code, output: code === 0 ? '' : second.output() }).toEqual({ code: 0, output: '' });
  }, 90_000);
});
