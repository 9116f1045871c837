import { randomBytes } from 'node:crypto';
import { closeSync, linkSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { HsmConfigurationError } from './hsm.errors';
import { sleepSync } from './pkcs11-token';

/** Who holds the lock; written into the lock file. */
interface LockOwner {
  pid: number;
  host: string;
  since: string;
  /** Tells this holder's lock from a later one of the same pid. */
  nonce: string;
}

export interface ProvisioningLockOptions {
  /** How long to wait for another holder; default 60 s. */
  timeoutMs?: number;
  /** A lock older than this is stale whoever holds it (a holder on another host cannot be asked); default 120 s. */
  staleAfterMs?: number;
}

const POLL_MS = 25;
/** A lock file without readable content is a holder that died between creating and writing it. */
const UNREADABLE_STALE_AFTER_MS = 5_000;

/**
 * Runs `action` while holding `lockPath`, a file created exclusively (O_EXCL) with the holder's
 * pid, host and start time, so that two processes (two service starts, possibly on two hosts
 * sharing the data folder) never provision at once. A lock whose holder is gone is recovered: one
 * of a pid no longer running on this host, or any older than `staleAfterMs`. Synchronous: it runs
 * once at start-up, before anything else needs the event loop.
 */
export function withProvisioningLock<T>(lockPath: string, action: () => T, options: ProvisioningLockOptions = {}): T {
  const owner = acquire(lockPath, options.timeoutMs ?? 60_000, options.staleAfterMs ?? 120_000);
  try {
    return action();
  } finally {
    release(lockPath, owner);
  }
}

function acquire(lockPath: string, timeoutMs: number, staleAfterMs: number): LockOwner {
  const owner: LockOwner = { pid: process.pid, host: hostname(), since: new Date().toISOString(), nonce: randomBytes(8).toString('hex') };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (tryCreate(lockPath, owner)) return owner;
    const held = readLock(lockPath);
    if (held === undefined) continue; // released between our attempt and the read
    if (isStale(held, staleAfterMs)) {
      takeOver(lockPath, held.content);
      continue;
    }
    if (Date.now() > deadline) {
      const holder = held.owner ? `pid ${held.owner.pid} on host ${held.owner.host} since ${held.owner.since}` : 'a process that left it unreadable';
      throw new HsmConfigurationError(
        'HSM_SOFTHSM_LOCKED',
        `the SoftHSM2 provisioning lock ${lockPath} is held by ${holder}; waited ${Math.round(timeoutMs / 1000)} s. If that process is gone, remove the file`,
      );
    }
    sleepSync(POLL_MS);
  }
}

function tryCreate(lockPath: string, owner: LockOwner): boolean {
  let fd: number;
  try {
    fd = openSync(lockPath, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    writeSync(fd, JSON.stringify(owner));
  } finally {
    closeSync(fd);
  }
  return true;
}

function readLock(lockPath: string): { content: string; owner?: LockOwner; ageMs: number } | undefined {
  try {
    const ageMs = Date.now() - statSync(lockPath).mtimeMs;
    const content = readFileSync(lockPath, 'utf8');
    let owner: LockOwner | undefined;
    try {
      const parsed = JSON.parse(content) as Partial<LockOwner>;
      if (typeof parsed.pid === 'number' && typeof parsed.host === 'string') owner = parsed as LockOwner;
    } catch {
      owner = undefined;
    }
    return { content, owner, ageMs };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function isStale(held: { owner?: LockOwner; ageMs: number }, staleAfterMs: number): boolean {
  if (held.owner === undefined) return held.ageMs > UNREADABLE_STALE_AFTER_MS;
  if (held.ageMs > staleAfterMs) return true;
  return held.owner.host === hostname() && !isRunning(held.owner.pid);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes a stale lock so that the next attempt can create one. The file is first renamed (atomic:
 * of two processes recovering the same stale lock only one succeeds) and checked to be the stale one
 * judged; if a live holder replaced it meanwhile, it is linked back.
 */
function takeOver(lockPath: string, staleContent: string): void {
  const aside = `${lockPath}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    renameSync(lockPath, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if (readFileSync(aside, 'utf8') !== staleContent) {
    try {
      linkSync(aside, lockPath);
    } catch {
      // Another holder created a lock meanwhile; the one set aside is lost to its holder.
    }
  }
  unlinkSync(aside);
}

function release(lockPath: string, owner: LockOwner): void {
  const held = readLock(lockPath);
  // Only our own lock: after a takeover by someone who judged ours stale, the file is theirs.
  if (held?.owner?.nonce === owner.nonce) unlinkSync(lockPath);
}
