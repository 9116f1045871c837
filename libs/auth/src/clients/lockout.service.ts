import { Injectable } from '@nestjs/common';
import { Clock, OAuthError } from '@app/common';
import { AppConfig } from '@app/config';
import { Database } from '@app/persistence';
import type { FailureCounter } from './client-credential.repository';

/** Every address together may fail this many times the per-pair limit (DECISIONS 4). */
const ADDRESS_LIMIT_FACTOR = 10;

/**
 * Brute-force protection of the token service (DECISIONS 4). Failures are counted in PostgreSQL per
 * (Client ID or userName, source address) pair and per source address, in fixed windows, so the
 * limits hold across instances. Only the offending pair or address is blocked: the same credentials
 * from another address still work, so nobody can lock an account out from afar. Failures for unknown
 * ids are counted only per address, which bounds the rows an attacker can create.
 */
@Injectable()
export class LockoutService {
  constructor(
    private readonly db: Database,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  /** The counter keys of a (subject, address) pair, for reads that fetch them with other data. */
  keysFor(subject: string | undefined, address: string): string[] {
    return keys(subject, address);
  }

  /** Counters that started before this moment have expired. */
  windowStart(): Date {
    return new Date(this.clock.now().getTime() - this.config.authFailureWindowS * 1000);
  }

  /** Throws 429 with Retry-After while the pair or the address is over its limit. */
  async assertNotLocked(subject: string | undefined, address: string): Promise<void> {
    const rows = await this.db.query<FailureCounter>(
      'SELECT key, failures, window_started_at FROM auth_failures WHERE key = ANY($1) AND window_started_at > $2',
      [keys(subject, address), this.windowStart()],
    );
    this.assertWithinLimits(rows);
  }

  /** The same check on counters already read (the token endpoint reads them with the account). */
  assertWithinLimits(rows: FailureCounter[]): void {
    const now = this.clock.now();
    for (const row of rows) {
      const limit = row.key.startsWith('addr:') ? this.config.authFailureLimit * ADDRESS_LIMIT_FACTOR : this.config.authFailureLimit;
      if (row.failures >= limit) {
        const retryAfter = Math.max(1, Math.ceil((row.window_started_at.getTime() + this.config.authFailureWindowS * 1000 - now.getTime()) / 1000));
        throw new OAuthError(
          'temporarily_unavailable',
          `Too many failed authentication attempts from this address${row.key.startsWith('pair:') ? ' for this client' : ''}; retry after ${retryAfter} seconds.`,
          429,
          { 'Retry-After': String(retryAfter) },
        );
      }
    }
  }

  /** Counts one failure; `knownSubject` is undefined when the id does not exist. */
  async recordFailure(knownSubject: string | undefined, address: string): Promise<void> {
    const now = this.clock.now();
    const windowStart = new Date(now.getTime() - this.config.authFailureWindowS * 1000);
    await this.db.query(
      `INSERT INTO auth_failures (key, window_started_at, failures) SELECT unnest($1::text[]), $2, 1
       ON CONFLICT (key) DO UPDATE SET
         failures = CASE WHEN auth_failures.window_started_at <= $3 THEN 1 ELSE auth_failures.failures + 1 END,
         window_started_at = CASE WHEN auth_failures.window_started_at <= $3 THEN $2 ELSE auth_failures.window_started_at END`,
      [keys(knownSubject, address), now, windowStart],
    );
  }

  /** Deletes counters whose window has passed. */
  async purgeExpired(): Promise<number> {
    const windowStart = new Date(this.clock.now().getTime() - this.config.authFailureWindowS * 1000);
    const [row] = await this.db.query<{ n: string }>(
      'WITH d AS (DELETE FROM auth_failures WHERE window_started_at <= $1 RETURNING 1) SELECT count(*) AS n FROM d',
      [windowStart],
    );
    return Number(row.n);
  }
}

function keys(subject: string | undefined, address: string): string[] {
  return subject ? [`pair:${subject}|${address}`, `addr:${address}`] : [`addr:${address}`];
}
