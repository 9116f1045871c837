import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, startService, stopAllServices, stopService, waitReady } from '@app/testing';

const ADMIN_SECRET = 'chaos-restart-admin-secret-0123456789abcdef';
const RESTART_TIMEOUT_S = 4;

/**
 * Issue 27 item 7 on the embedded defaults, on loopback: the embedded PostgreSQL dies and cannot be
 * started again (its data folder has permissions PostgreSQL refuses). The service says why once,
 * not per retry, backs off, and after EMBEDDED_PG_RESTART_TIMEOUT_S turns /health/live red so that
 * a supervisor restarts it; once the cause is gone it starts the database again by itself. With
 * WORKERS=2 the primary runs the database and tells its workers, which answer /health/live.
 */
describe('embedded PostgreSQL that cannot be started again (chaos, loopback)', () => {
  afterAll(() => stopAllServices());

  it.each([1, 2])(
    'WORKERS=%i: logs the reason once, backs off, turns liveness red after the bound, and recovers when the cause is gone',
    async (workers) => {
      const root = join(process.env.TEST_RUN_DIR!, `restart-${randomBytes(4).toString('hex')}`);
      mkdirSync(root, { recursive: true });
      chmodSync(root, 0o755);
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      const env = {
        DATA_DIR: join(root, 'data'),
        PORT: String(port),
        WORKERS: String(workers),
        HOST: '127.0.0.1',
        METRICS_PORT: String(await freePort()),
        EMBEDDED_PG_PORT: String(await freePort()),
        EMBEDDED_PG_DIR: process.env.TEST_EMBEDDED_PG_DIR!,
        EMBEDDED_PG_RESTART_TIMEOUT_S: String(RESTART_TIMEOUT_S),
        PUBLIC_BASE_URL: base,
        PLATFORM_ADMIN_SECRET: ADMIN_SECRET,
      };
      const service = startService(env);
      await waitReady(base, service);
      const live = () => fetch(`${base}/health/live`).then(async (response) => ({ status: response.status, body: (await response.json()) as unknown }));
      const grant = () =>
        fetch(`${base}/authentication/customer/platform/token`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'platform-admin', client_secret: ADMIN_SECRET }),
        });

      // PostgreSQL refuses a data folder that others may write: every restart fails the same way.
      const clusterDir = realpathSync(join(env.DATA_DIR, 'postgres'));
      chmodSync(clusterDir, 0o777);
      const postmaster = Number(readFileSync(join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(postmaster, 'SIGKILL');
      const killedAt = Date.now();

      const answers: Array<{ afterMs: number; status: number; body: unknown }> = [];
      while (Date.now() - killedAt < (RESTART_TIMEOUT_S + 3) * 1000) {
        answers.push({ afterMs: Date.now() - killedAt, ...(await live()) });
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      // Live until the bound, red after it (with a second's slack either side for timers and the poll).
      expect(answers.filter(({ afterMs, status }) => afterMs < (RESTART_TIMEOUT_S - 1) * 1000 && status !== 200)).toEqual([]);
      expect(answers.filter(({ afterMs, status }) => afterMs > (RESTART_TIMEOUT_S + 1) * 1000 && status !== 503)).toEqual([]);
      expect(answers.at(-1)!.body).toEqual({ status: 'unavailable', checks: { embeddedDatabase: 'down' } });

      const lines = service.output().split('\n');
      const count = (pattern: RegExp) => lines.filter((line) => pattern.test(line)).length;
      // Once per change of state, however many retries (at 0.5, 1.5, 3.5 and 7.5 s: at least three by now).
      expect(count(/stopped unexpectedly/)).toBe(1);
      expect(count(/could not be started again: .*invalid permissions/)).toBe(1);
      expect(count(/has not started again for 4 s; \/health\/live answers 503/)).toBe(1);
      expect(count(/could not be started again/)).toBe(1);

      chmodSync(clusterDir, 0o700);
      let recovered = 0;
      for (let i = 0; i < 100 && recovered !== 200; i++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        recovered = await grant().then(
          (response) => response.status,
          () => 0,
        );
      }
      expect(recovered).toBe(200);
      expect(await live()).toEqual({ status: 200, body: { status: 'ok' } });
      expect(
        service
          .output()
          .split('\n')
          .filter((line) => /is running again/.test(line)),
      ).toHaveLength(1);

      const code = await stopService(service);
      expect({ code, output: code === 0 ? '' : service.output() }).toEqual({ code: 0, output: '' });
    },
    90_000,
  );
});
