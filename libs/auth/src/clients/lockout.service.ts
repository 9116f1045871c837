import { Injectable } from '@nestjs/common';
import { AUDIT_INSERT, AuditAction, auditCodeOf } from '@app/audit';
import { Clock, OAuthError, RequestOrigin } from '@app/common';
import { AppConfig } from '@app/config';
import { ChangeFeed, Database, Transaction, prepared } from '@app/persistence';
import { ClaimedIdentities, ClaimedIdentity } from './claimed-identity';
import type { FailureCounter } from './client-credential.repository';

/** Every address together may fail this many times the per-pair limit (DECISIONS 4). */
const ADDRESS_LIMIT_FACTOR = 10;
/** The counter of an organization's failed password checks: `pwd:{org}` (DECISIONS 4). */
const PASSWORD_BUDGET_PREFIX = 'pwd:';
/** The counter of the one-time codes checked for a person, from any address: `otp:{org}/{userId}` (DECISIONS 14.1). */
const CODE_ATTEMPTS_PREFIX = 'otp:';
/**
 * Claimed ids are caller-chosen text: the counter keys keep at most this much of them (every existing
 * Client ID and `user:{org}/{userName}` is shorter).
 */
const MAX_CLAIMED_ID = 256;

/**
 * A failed authentication as the audit log records it (DECISIONS 11): who the caller claimed to be,
 * never what it presented as proof.
 */
export interface FailureAudit {
  /** The organization of the token endpoint's path; recorded only when it exists. */
  org: string;
  /**
   * The Client ID or userName the caller claimed, if it got that far, and whether it names an existing
   * account: the log names only those (ClaimedIdentities, DECISIONS 11).
   */
  claimed: ClaimedIdentity | undefined;
  /** client_secret_post, client_secret_basic, private_key_jwt, jwt_bearer or password. */
  method: string;
  /** Set when the assertion was signed by a certificate past its validity or credential expiry. */
  expiredCertificate?: { thumbprint: string; notAfter: Date; expiresAt: Date };
  /**
   * The events recorded: the token service's `authentication.fail` and `authentication.lockout` unless
   * the hosted login page says its own (`sign_in.fail`, `sign_in.lockout`; DECISIONS 14.1).
   */
  actions?: { fail: AuditAction; lockout: AuditAction };
  /** Non-secret details added to the failure event (the login page's step). */
  details?: Record<string, unknown>;
}

/**
 * Counts a failure and writes its audit events in one statement (the token endpoint's failure path
 * costs one round trip, as before): `authentication.fail` (and `certificate.expired_use` when an
 * expired certificate signed), and `authentication.lockout` when this failure brings the pair, the
 * address or the organization's password checks to its limit, which is when the 429s start. Refused
 * requests while locked are not counted again and not audited one by one: the lockout event says
 * from when and for how long.
 */
const RECORD_FAILURE = prepared(
  'lockout-record-failure',
  `WITH newly_counted AS (
     INSERT INTO auth_failures (key, window_started_at, failures) SELECT unnest($1::text[]), $2, 1
     ON CONFLICT (key) DO UPDATE SET
       failures = CASE WHEN auth_failures.window_started_at <= $3 THEN 1 ELSE auth_failures.failures + 1 END,
       window_started_at = CASE WHEN auth_failures.window_started_at <= $3 THEN $2 ELSE auth_failures.window_started_at END
     RETURNING key, failures
   ), counted AS (
     -- A failed password check was counted when its turn was taken ($15, $16: the keys and the counts it made).
     SELECT key, failures FROM newly_counted UNION ALL SELECT * FROM unnest($15::text[], $16::int[])
   ), org AS (
     SELECT id FROM organizations WHERE id = $4
   )
   ${AUDIT_INSERT}
   SELECT $2, (SELECT id FROM org), e.actor, e.action, e.code, e.target, 'failure', $5, e.details, $11
     FROM jsonb_to_recordset($6::jsonb) AS e(actor text, action text, code int, target text, details jsonb)
   UNION ALL
   SELECT $2, (SELECT id FROM org), 'system', $13, $14::int,
          CASE WHEN starts_with(c.key, 'pair:') THEN $7 WHEN starts_with(c.key, 'pwd:') THEN $4 ELSE $5 END, 'failure', $5,
          jsonb_build_object('scope', CASE WHEN starts_with(c.key, 'pair:') THEN 'identity and address'
                                           WHEN starts_with(c.key, 'pwd:') THEN 'organization password checks' ELSE 'address' END,
                             'failures', c.failures, 'windowSeconds', $8::int), $11
     FROM counted c
    WHERE c.failures = CASE WHEN starts_with(c.key, 'pair:') THEN $9::int WHEN starts_with(c.key, 'pwd:') THEN $12::int ELSE $10::int END`,
);

/**
 * Takes the turn of a password check before the password is hashed (DECISIONS 4): counts it on every
 * key ($1) in one statement, unless one of them is at its limit ($4, in the same order) already; then
 * nothing is counted and the keys at their limit are answered (`blocked`). The existing rows are
 * locked first, so concurrent turns count one after another and none passes a limit another reached.
 */
const TAKE_PASSWORD_TURN = prepared(
  'lockout-take-password-turn',
  `WITH current AS (
     SELECT key, failures, window_started_at FROM auth_failures WHERE key = ANY($1::text[]) AND window_started_at > $3 FOR UPDATE
   ), blocked AS (
     SELECT c.key, c.window_started_at FROM current c JOIN unnest($1::text[], $4::int[]) AS l(key, lim) ON l.key = c.key WHERE c.failures >= l.lim
   ), counted AS (
     INSERT INTO auth_failures (key, window_started_at, failures)
     SELECT unnest($1::text[]), $2, 1 WHERE NOT EXISTS (SELECT 1 FROM blocked)
     ON CONFLICT (key) DO UPDATE SET
       failures = CASE WHEN auth_failures.window_started_at <= $3 THEN 1 ELSE auth_failures.failures + 1 END,
       window_started_at = CASE WHEN auth_failures.window_started_at <= $3 THEN $2 ELSE auth_failures.window_started_at END
     RETURNING key, failures, window_started_at
   )
   SELECT true AS blocked, key, 0 AS failures, window_started_at FROM blocked
   UNION ALL
   SELECT false, key, failures, window_started_at FROM counted`,
);

/** Takes a password turn's counts back ($1: its keys; $2: counters that started before have expired). */
const GIVE_BACK_PASSWORD_TURN = prepared(
  'lockout-give-back-password-turn',
  `WITH emptied AS (
     DELETE FROM auth_failures WHERE key = ANY($1::text[]) AND window_started_at > $2 AND failures <= 1
   )
   UPDATE auth_failures SET failures = failures - 1 WHERE key = ANY($1::text[]) AND window_started_at > $2 AND failures > 1`,
);

/**
 * Counts one check of a person's one-time code before the code is checked, in one statement, so that
 * attempts sent at once cannot all pass a read of the counter taken before any of them was counted;
 * and audits the lockout (`$6`) with the first attempt refused. Answers the count and its window.
 */
const COUNT_CODE_ATTEMPT = prepared(
  'lockout-count-code-attempt',
  `WITH counted AS (
     INSERT INTO auth_failures (key, window_started_at, failures) VALUES ($1, $2, 1)
     ON CONFLICT (key) DO UPDATE SET
       failures = CASE WHEN auth_failures.window_started_at <= $3 THEN 1 ELSE auth_failures.failures + 1 END,
       window_started_at = CASE WHEN auth_failures.window_started_at <= $3 THEN $2 ELSE auth_failures.window_started_at END
     RETURNING failures, window_started_at
   ), audited AS (
     ${AUDIT_INSERT}
     SELECT $2, (SELECT id FROM organizations WHERE id = $4), 'system', $6, $7::int, $5, 'failure', $8,
            jsonb_build_object('scope', 'one-time codes of the person', 'failures', c.failures - 1, 'windowSeconds', $9::int), $10
       FROM counted c
      WHERE c.failures = $11::int + 1
   )
   SELECT failures, window_started_at FROM counted`,
);

/** A password check's turn (`takePasswordTurn`): the counters it counted, and their counts then. */
export interface PasswordTurn {
  keys: string[];
  failures: number[];
}

/**
 * Brute-force protection of the token service (DECISIONS 4). Failures are counted in PostgreSQL per
 * (Client ID or userName, source address) pair and per source address, in fixed windows, so the
 * limits hold across instances. Only the offending pair or address is blocked: the same credentials
 * from another address still work, so nobody can lock an account out from afar. Unknown ids get pair
 * counters too, so that a locked pair answers alike whether its id exists or not; their rows are
 * bounded: an address stops being counted at ten times the limit, so it creates at most that many
 * pair rows per window, each key at most MAX_CLAIMED_ID characters of id.
 *
 * Failed password checks are also counted per organization: past PASSWORD_FAILURE_BUDGET in a window
 * the organization's password grant answers 429 for every userName until the window passes, so a
 * flood of guesses cannot spend the hashing capacity without end; other grants are not affected.
 */
@Injectable()
export class LockoutService {
  constructor(
    private readonly db: Database,
    private readonly changes: ChangeFeed,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly identities: ClaimedIdentities,
  ) {}

  /** The counter keys of a (subject, address) pair, for reads that fetch them with other data. */
  keysFor(subject: string | undefined, address: string): string[] {
    return keys(subject, address);
  }

  /** Counters that started before this moment have expired. */
  windowStart(): Date {
    return new Date(this.clock.now().getTime() - this.config.authFailureWindowS * 1000);
  }

  /**
   * Throws 429 with Retry-After while the pair or the address is over its limit, or, given
   * `passwordOrg`, while that organization's failed password checks are over their budget.
   */
  async assertNotLocked(subject: string | undefined, address: string, passwordOrg?: string): Promise<void> {
    const rows = await this.db.query<FailureCounter>(
      'SELECT key, failures, window_started_at FROM auth_failures WHERE key = ANY($1) AND window_started_at > $2',
      [keys(subject, address, passwordOrg), this.windowStart()],
    );
    this.assertWithinLimits(rows);
  }

  /** The same check on counters already read (the token endpoint reads them with the account). */
  assertWithinLimits(rows: FailureCounter[]): void {
    for (const row of rows) {
      if (row.failures >= this.limitOf(row.key)) throw this.lockedOut(row.key, row.window_started_at);
    }
  }

  /** The 429 of a counter at its limit, with Retry-After until its window passes. */
  private lockedOut(key: string, windowStartedAt: Date): OAuthError {
    const retryAfter = this.secondsLeft(windowStartedAt, this.clock.now());
    const what = key.startsWith(PASSWORD_BUDGET_PREFIX)
      ? 'Too many failed password sign-ins in this organization; the password grant pauses'
      : `Too many failed authentication attempts from this address${key.startsWith('pair:') ? ' for this client' : ''}`;
    return new OAuthError('temporarily_unavailable', `${what}; retry after ${retryAfter} seconds.`, 429, { 'Retry-After': String(retryAfter) });
  }

  /** Seconds until the window that started at `windowStartedAt` passes (Retry-After), at least 1. */
  private secondsLeft(windowStartedAt: Date, now: Date): number {
    return Math.max(1, Math.ceil((windowStartedAt.getTime() + this.config.authFailureWindowS * 1000 - now.getTime()) / 1000));
  }

  private limitOf(key: string): number {
    if (key.startsWith('addr:')) return this.config.authFailureLimit * ADDRESS_LIMIT_FACTOR;
    if (key.startsWith(PASSWORD_BUDGET_PREFIX)) return this.config.passwordFailureBudget;
    return this.config.authFailureLimit;
  }

  /**
   * Counts one failure and audits it (see RECORD_FAILURE); `subject` is the claimed id, whether it
   * exists or not (undefined when the request named none), `reason` is the metrics label of the
   * failure. `turn`: a password was checked and did not match (or the user is unknown); its turn
   * counted it already, on the pair, the address and the organization's password budget.
   */
  async recordFailure(
    subject: string | undefined,
    origin: RequestOrigin,
    reason: string,
    audit: FailureAudit,
    { turn }: { turn?: PasswordTurn } = {},
  ): Promise<void> {
    const address = origin.sourceAddress;
    const now = this.clock.now();
    const windowStart = new Date(now.getTime() - this.config.authFailureWindowS * 1000);
    const claimed = this.identities.recorded(audit.claimed);
    const { fail, lockout } = audit.actions ?? { fail: 'authentication.fail', lockout: 'authentication.lockout' };
    const events: { actor: string; action: AuditAction; code: number; target: string; details: Record<string, unknown> }[] = [
      { actor: claimed, action: fail, code: auditCodeOf(fail), target: claimed, details: { reason, method: audit.method, ...audit.details } },
    ];
    if (audit.expiredCertificate) {
      const { thumbprint, notAfter, expiresAt } = audit.expiredCertificate;
      events.push({
        actor: claimed,
        action: 'certificate.expired_use',
        code: auditCodeOf('certificate.expired_use'),
        target: claimed,
        details: { thumbprint, notAfter: notAfter.toISOString(), expiresAt: expiresAt.toISOString() },
      });
    }
    // A failed password check's turn counted it already: only the audit remains (and the lockout event when its count reached a limit).
    const counterKeys = turn ? [] : keys(subject, address);
    await this.db.transaction(async (tx) => {
      await this.db.query(
        RECORD_FAILURE,
        [
          counterKeys,
          now,
          windowStart,
          audit.org,
          address,
          JSON.stringify(events),
          claimed,
          this.config.authFailureWindowS,
          this.config.authFailureLimit,
          this.config.authFailureLimit * ADDRESS_LIMIT_FACTOR,
          origin.correlationId ?? null,
          this.config.passwordFailureBudget,
          lockout,
          auditCodeOf(lockout),
          turn?.keys ?? [],
          turn?.failures ?? [],
        ],
        tx,
      );
      // Client authentication remembers which keys have no failures; tell every instance these do now.
      this.changes.publishOnCommit(tx, 'lockout', turn?.keys ?? counterKeys);
    });
  }

  /**
   * Takes the turn of a password check for the pair, before the hash (DECISIONS 4): counts it as a
   * failure of the pair, the address and the organization's password budget in one statement, or
   * throws the lockout's 429 when one of them is at its limit already (nothing counted). Guesses sent
   * at once, on any instance, so get no more hash runs than the limits. The turn then ends one way:
   * a wrong password is audited with `recordFailure(..., { turn })` (counted already), a password
   * that matched, or a check that did not happen, gives it back (`giveBack`).
   */
  async takePasswordTurn(subject: string, address: string, org: string): Promise<PasswordTurn> {
    const turnKeys = keys(subject, address, org);
    const now = this.clock.now();
    const rows = await this.db.query<FailureCounter & { blocked: boolean }>(TAKE_PASSWORD_TURN, [
      turnKeys,
      now,
      this.windowStart(),
      turnKeys.map((key) => this.limitOf(key)),
    ]);
    const blocked = rows.find((row) => row.blocked);
    if (blocked) throw this.lockedOut(blocked.key, blocked.window_started_at);
    const counts = new Map(rows.map((row) => [row.key, row.failures]));
    const turn = { keys: turnKeys, failures: turnKeys.map((key) => counts.get(key) ?? 1) };
    // The statement locks the counters that exist when it starts; one that another turn creates
    // meanwhile (turns sent at once on a fresh pair) it counts without that check, after the row's
    // own lock (ON CONFLICT), so its count is the true one. A turn that took one past its limit so
    // gives its counts back and is refused as the lock-out it ran into.
    const over = rows.find((row) => row.failures > this.limitOf(row.key));
    if (over) {
      await this.giveBack(turn);
      throw this.lockedOut(over.key, over.window_started_at);
    }
    return turn;
  }

  /**
   * A turn whose password matched, or was not checked (the hashing was busy): its counts are taken
   * back, and a counter it alone made is removed, so that signing in leaves no counters behind.
   */
  async giveBack(turn: PasswordTurn): Promise<void> {
    await this.db.query(GIVE_BACK_PASSWORD_TURN, [turn.keys, this.windowStart()]);
  }

  /**
   * Counts one check of a person's one-time code (DECISIONS 14.1), whatever the address, before the
   * code is checked: past AUTH_FAILURE_LIMIT checks in a window, 429 with Retry-After until the window
   * passes. Only someone who passed the password step reaches the code, so this bounds guessing by a
   * holder of the password (from many addresses, or many requests at once) without letting anyone
   * else lock the person out; a right code forgets the count (`forgetCodeAttempts`).
   */
  async countCodeAttempt(org: string, userId: string, userName: string, origin: RequestOrigin, lockoutAction: AuditAction): Promise<void> {
    const now = this.clock.now();
    const [row] = await this.db.query<{ failures: number; window_started_at: Date }>(COUNT_CODE_ATTEMPT, [
      codeAttemptsKey(org, userId),
      now,
      this.windowStart(),
      org,
      userName,
      lockoutAction,
      auditCodeOf(lockoutAction),
      origin.sourceAddress,
      this.config.authFailureWindowS,
      origin.correlationId ?? null,
      this.config.authFailureLimit,
    ]);
    if (row.failures > this.config.authFailureLimit) {
      const retryAfter = this.secondsLeft(row.window_started_at, now);
      throw new OAuthError('temporarily_unavailable', `Too many one-time codes tried for this person; retry after ${retryAfter} seconds.`, 429, {
        'Retry-After': String(retryAfter),
      });
    }
  }

  /** A right one-time code: the person's count of code checks starts again. */
  async forgetCodeAttempts(org: string, userId: string): Promise<void> {
    await this.db.query('DELETE FROM auth_failures WHERE key = $1', [codeAttemptsKey(org, userId)]);
  }

  /**
   * Forgets the failure counters of an organization's Client IDs (`{org}-...`) and userNames, when
   * the organization is deleted (the keys carry no org_id, so no foreign key removes them).
   */
  async forgetOrganization(orgId: string, tx: Transaction): Promise<void> {
    await this.db.query(
      `DELETE FROM auth_failures
        WHERE starts_with(key, 'pair:' || $1 || '-') OR starts_with(key, 'pair:user:' || $1 || '/') OR key = $2 OR starts_with(key, $3)`,
      [orgId, `${PASSWORD_BUDGET_PREFIX}${orgId}`, `${CODE_ATTEMPTS_PREFIX}${orgId}/`],
      tx,
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

/** The counters a failure touches: the pair (when an id was claimed), the address, and an organization's password budget. */
function keys(subject: string | undefined, address: string, passwordOrg?: string): string[] {
  return [
    ...(subject ? [`pair:${subject.slice(0, MAX_CLAIMED_ID)}|${address}`] : []),
    `addr:${address}`,
    ...(passwordOrg ? [`${PASSWORD_BUDGET_PREFIX}${passwordOrg}`] : []),
  ];
}

function codeAttemptsKey(org: string, userId: string): string {
  return `${CODE_ATTEMPTS_PREFIX}${org}/${userId}`;
}
