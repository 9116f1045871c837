import type { Handle } from 'pkcs11js';

interface Waiter {
  resolve(session: Handle): void;
  reject(error: Error): void;
}

/**
 * Lends PKCS#11 sessions opened at boot, one operation per session at a time: two concurrent
 * signs on one session crash the process (pkcs11.md rule 2). A borrower waits when all are lent.
 */
export class SessionPool {
  private readonly idle: Handle[];
  private readonly waiters: Waiter[] = [];

  constructor(sessions: readonly Handle[]) {
    this.idle = [...sessions];
  }

  acquire(): Promise<Handle> {
    const session = this.idle.pop();
    if (session !== undefined) {
      return Promise.resolve(session);
    }
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  release(session: Handle): void {
    const waiter = this.waiters.shift();
    if (waiter === undefined) {
      this.idle.push(session);
    } else {
      waiter.resolve(session);
    }
  }

  /** The sessions are gone (module failure): whoever is still waiting gets `error` instead. */
  abandon(error: Error): void {
    for (const waiter of this.waiters.splice(0)) {
      waiter.reject(error);
    }
  }
}
