import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { HsmConfigurationError } from './hsm.errors';
import { withProvisioningLock } from './provisioning-lock';

let directory: string;
let lockPath: string;

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'provisioning-lock-'));
  lockPath = join(directory, 'provisioning.lock');
});

afterEach(() => rmSync(directory, { recursive: true, force: true }));

function holder(pid: number): string {
  return JSON.stringify({ pid, host: hostname(), since: new Date().toISOString(), nonce: 'other' });
}

it('holds a lock file naming this process while the action runs, and removes it after', () => {
  const seen = withProvisioningLock(lockPath, () => JSON.parse(readFileSync(lockPath, 'utf8')) as Record<string, unknown>);
  expect(seen).toMatchObject({ pid: process.pid, host: hostname() });
  expect(existsSync(lockPath)).toBe(false);
});

it('removes the lock when the action throws', () => {
  expect(() =>
    withProvisioningLock(lockPath, () => {
      throw new Error('provisioning failed');
    }),
  ).toThrow('provisioning failed');
  expect(existsSync(lockPath)).toBe(false);
});

it('recovers a lock whose holder on this host is gone', () => {
  const dead = spawnSync(process.execPath, ['-e', 'process.pid']).pid!;
  writeFileSync(lockPath, holder(dead));
  expect(withProvisioningLock(lockPath, () => 'ran')).toBe('ran');
  expect(existsSync(lockPath)).toBe(false);
});

it('recovers a lock older than the stale limit even when its pid runs (a holder on another host cannot be asked)', () => {
  writeFileSync(lockPath, holder(process.ppid));
  const old = new Date(Date.now() - 10 * 60_000);
  utimesSync(lockPath, old, old);
  expect(withProvisioningLock(lockPath, () => 'ran', { staleAfterMs: 60_000 })).toBe('ran');
});

it('waits for a live holder, then says who holds it and which file to remove if it is gone', async () => {
  const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => undefined, 30000)']);
  try {
    const held = holder(sleeper.pid!);
    writeFileSync(lockPath, held);
    let error: unknown;
    try {
      withProvisioningLock(lockPath, () => 'ran', { timeoutMs: 300 });
    } catch (refused) {
      error = refused;
    }
    expect(error).toBeInstanceOf(HsmConfigurationError);
    expect(error).toMatchObject({ code: 'HSM_SOFTHSM_LOCKED' });
    expect((error as Error).message).toMatch(
      new RegExp(
        `^the SoftHSM2 provisioning lock ${lockPath} is held by pid ${sleeper.pid} on host ${hostname()} since .*; waited 0 s\\. If that process is gone, remove the file$`,
      ),
    );
    expect(readFileSync(lockPath, 'utf8')).toBe(held);
  } finally {
    sleeper.kill();
  }
});

it('takes the lock as soon as the live holder releases it', async () => {
  writeFileSync(lockPath, holder(process.ppid));
  // The wait is synchronous, so the release comes from another process.
  const releaser = spawn(process.execPath, ['-e', `setTimeout(() => require('node:fs').rmSync(${JSON.stringify(lockPath)}), 200)`]);
  const started = Date.now();
  expect(withProvisioningLock(lockPath, () => 'ran', { timeoutMs: 5_000 })).toBe('ran');
  expect(Date.now() - started).toBeLessThan(3_000);
  await new Promise((resolve) => releaser.once('exit', resolve));
});
