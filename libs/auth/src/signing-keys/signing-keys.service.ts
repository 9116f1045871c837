import { BeforeApplicationShutdown, Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { KeyObject, createPublicKey, randomBytes } from 'node:crypto';
import { PLATFORM_ORG } from '@app/accounts';
import { Actor, AuditLog, byActor } from '@app/audit';
import { Clock, DomainError, isoTimestamp, notFound } from '@app/common';
import { AppConfig } from '@app/config';
import { KeyStore, Signer, signingJwkFromSpki, type JwsAlgorithm, type SigningJwk, type SigningKeyRef } from '@app/hsm';
import { LOGGER, Logger } from '@app/observability';
import { ChangeFeed, Database, DatabaseUnavailableError, PG_UNIQUE_VIOLATION, isPgError } from '@app/persistence';
import { SigningKeyRepository, type SigningKeyRow } from './signing-key.repository';

/** What a new token-signing key may be (DECISIONS 12.1): ES256 or RS256 keys the key store makes. */
export type SigningKeyAlgorithm = 'EC-P256' | 'RSA-3072';

/** A key as the token path uses it: what goes into the JWS header and the verification key. */
export interface TokenSigningKey {
  readonly kid: string;
  readonly algorithm: JwsAlgorithm;
  /** Undefined for JWT_KEY (the Signer's own key); a key store key's label and CKA_ID otherwise. */
  readonly ref: SigningKeyRef | undefined;
  readonly verifyKey: KeyObject | { key: KeyObject; dsaEncoding: 'ieee-p1363' };
  readonly row: SigningKeyRow;
}

interface KeyRing {
  active: TokenSigningKey;
  byKid: Map<string, TokenSigningKey>;
  /** The next key whose scheduled activation comes first, and when (ms). */
  scheduled?: { kid: string; at: number };
}

/**
 * How far ahead of a token's expiry the token path reserves its key's last token expiry: one
 * reservation (an UPDATE of the key's row) per this many seconds of the longest lifetime an
 * instance issues, and a retired key published at most this much longer than its last token lives.
 */
export const RESERVE_AHEAD_S = 10;
/**
 * A retired key stays published this long after its last token's expiry: relying parties' clocks
 * may run behind ours (DECISIONS 12.1).
 */
export const RETIRED_KEY_SKEW_S = 30;
/** Reads of the ring a token request makes, at most, when the database says its key is no longer active. */
const MAX_KEY_ATTEMPTS = 3;
/** While the change feed is down, the key ring is read again in the background at most this often. */
const RELOAD_WITHOUT_FEED_MS = 1_000;
/** Longest delay setTimeout takes; a later scheduled activation re-arms the timer when it fires. */
const MAX_TIMER_MS = 2_147_483_647;
/** Who performs a scheduled activation, in the audit log. */
const SCHEDULER: Actor = { name: 'system' };

/**
 * The token-signing keys (DECISIONS 12.1): one active key signs, next and retired keys are
 * published in JWKS, and tokens of every published key verify. Each instance holds the keys in
 * memory (no database round trip per token or bearer check), read at start and again on every
 * `signing-key` change and feed reset, so an activation reaches every instance at once. A
 * scheduled activation is run by whichever instance comes to it first (a timer, and the token path
 * once the time has passed); the guarded UPDATEs let only one succeed.
 */
@Injectable()
export class SigningKeys implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  private ring!: KeyRing;
  private loading?: Promise<void>;
  private wanted = 0;
  private scheduleTimer?: NodeJS.Timeout;
  private activating?: Promise<void>;
  /** When the last background read without the feed began: at most one a second, even while they fail. */
  private reloadStartedAt = 0;
  /** Set when the application starts shutting down: the feed's last notices read nothing more. */
  private stopping = false;
  /** How far (ms) each key's last token expiry is known to be reserved. */
  private readonly reserved = new Map<string, number>();
  /** A reservation under way per key, and how far it reaches (ms): concurrent tokens share it. */
  private readonly reservations = new Map<string, { until: number; covered: Promise<number | undefined> }>();

  constructor(
    private readonly keys: SigningKeyRepository,
    private readonly db: Database,
    private readonly changes: ChangeFeed,
    private readonly signer: Signer,
    private readonly keyStore: KeyStore,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** The first start registers JWT_KEY as the active key, then every instance reads the ring. */
  async onModuleInit(): Promise<void> {
    await this.db.transaction(async (tx) => {
      const jwk = this.signer.publicJwk;
      const now = this.clock.now();
      if (await this.keys.registerFirst({ kid: jwk.kid, hsm_label: this.signer.keyLabel, algorithm: jwk.alg, public_jwk: jwk, created_at: now }, tx)) {
        await this.audit.record(
          {
            org: PLATFORM_ORG,
            actor: 'system',
            action: 'signing_key.register',
            target: jwk.kid,
            outcome: 'success',
            details: { hsmLabel: this.signer.keyLabel, algorithm: jwk.alg },
          },
          tx,
        );
        this.changes.publishOnCommit(tx, 'signing-key', [jwk.kid]);
      }
    });
    this.changes.subscribe((change) => {
      if (this.stopping || (change.topic !== 'reset' && change.topic !== 'signing-key')) return;
      this.refresh().catch((error: unknown) => {
        // An outage is logged once by the database layer; the feed's reset on its return reads the keys again.
        // A read the shutdown cut short (its pool closed under it) is no failure either.
        if (!(error instanceof DatabaseUnavailableError) && !this.stopping)
          this.logger.error({ err: error }, 'reading the token-signing keys failed; keeping the keys held');
      });
    });
    await this.refresh();
  }

  /** Before any module's shutdown closes the database (Nest runs every beforeApplicationShutdown first). */
  beforeApplicationShutdown(): void {
    this.stopping = true;
  }

  onApplicationShutdown(): void {
    clearTimeout(this.scheduleTimer);
  }

  /**
   * The key new tokens are signed with. A scheduled activation whose time has come starts in the
   * background; until it commits, the key it replaces (still published) signs.
   */
  active(): TokenSigningKey {
    const { scheduled } = this.ring;
    if (scheduled !== undefined && this.clock.now().getTime() >= scheduled.at) this.activateScheduled();
    return this.current().active;
  }

  /**
   * The key a token expiring at `expiresAt` is signed with: the active key, once its row covers
   * that expiry (a reservation, made ahead, at most once per RESERVE_AHEAD_S of lifetime). The token's
   * row is then inserted only while the key is still active (TokenRepository.recordIssued, the code
   * redemption): when the database refuses it, `afterRefusal` reads the ring again and the token is
   * signed again with the new key. So no instance hands out a token its key's retirement does not
   * cover, nor one signed by a key retired before the request came, whatever its change feed does.
   */
  async signingKeyFor(expiresAt: Date): Promise<TokenSigningKey> {
    for (let attempt = 1; ; attempt++) {
      const key = this.active();
      if ((this.reserved.get(key.kid) ?? 0) >= expiresAt.getTime()) return key;
      const covered = await this.reserve(key.kid, expiresAt.getTime());
      if (covered !== undefined && covered >= expiresAt.getTime()) return key;
      // The key is no longer active: another instance activated its successor.
      await this.refresh();
      if (attempt === MAX_KEY_ATTEMPTS) throw keysChanging();
    }
  }

  /**
   * After the database refused a token (its key is no longer the active key there): reads the ring
   * again, so that the caller signs again with the key active now. The `attempt`-th refusal of one
   * token; at the MAX_KEY_ATTEMPTS-th the keys keep changing under it: 503.
   */
  async afterRefusal(attempt: number): Promise<void> {
    if (attempt >= MAX_KEY_ATTEMPTS) throw keysChanging();
    await this.refresh();
  }

  private reserve(kid: string, expiresAt: number): Promise<number | undefined> {
    const pending = this.reservations.get(kid);
    if (pending !== undefined && pending.until >= expiresAt) return pending.covered;
    const until = expiresAt + RESERVE_AHEAD_S * 1000;
    const covered: Promise<number | undefined> = this.keys
      .reserve(kid, new Date(until))
      .then((at) => {
        if (at !== undefined) this.reserved.set(kid, Math.max(this.reserved.get(kid) ?? 0, at.getTime()));
        return at?.getTime();
      })
      .finally(() => {
        if (this.reservations.get(kid)?.covered === covered) this.reservations.delete(kid);
      });
    this.reservations.set(kid, { until, covered });
    return covered;
  }

  /** The published key with this kid, for verifying a token; undefined when none is. */
  published(kid: string): TokenSigningKey | undefined {
    const key = this.current().byKid.get(kid);
    return key !== undefined && isPublished(key.row, this.clock.now()) ? key : undefined;
  }

  /** The JWKS document's keys: next, active, and retired keys until their last token expired. */
  jwks(): SigningJwk[] {
    const now = this.clock.now();
    return [...this.current().byKid.values()].filter((key) => isPublished(key.row, now)).map((key) => key.row.public_jwk);
  }

  /** The algorithms of the published keys, for discovery. */
  algorithms(): JwsAlgorithm[] {
    return [...new Set(this.jwks().map((jwk) => jwk.alg))];
  }

  /** When a next key may be activated. */
  activatableAt(row: SigningKeyRow): Date {
    return new Date(row.created_at.getTime() + this.config.jwksPublicationDelayS * 1000);
  }

  async list(): Promise<SigningKeyRow[]> {
    return this.keys.all();
  }

  /** A next key: generated in the HSM and published in JWKS at once; it may sign after the publication delay. */
  async generate(algorithm: SigningKeyAlgorithm, actor: Actor): Promise<SigningKeyRow> {
    const label = `${this.signer.keyLabel}/${randomBytes(8).toString('hex')}`;
    const pair = await this.keyStore.generateKeyPair(label, algorithm);
    const jwk = signingJwkFromSpki(pair.publicKeySpki);
    let row: SigningKeyRow;
    try {
      row = await this.db.transaction(async (tx) => {
        const inserted = await this.keys.insertNext(
          { kid: jwk.kid, hsm_label: label, hsm_key_id: pair.id, algorithm: jwk.alg, public_jwk: jwk, created_at: this.clock.now() },
          tx,
        );
        await this.audit.record(
          {
            org: PLATFORM_ORG,
            ...byActor(actor),
            action: 'signing_key.generate',
            target: jwk.kid,
            outcome: 'success',
            details: { hsmLabel: label, algorithm: jwk.alg },
          },
          tx,
        );
        this.changes.publishOnCommit(tx, 'signing-key', [jwk.kid]);
        return inserted;
      });
    } catch (error) {
      // A key no row names would never be used: take it out of the HSM again.
      await this.keyStore.destroyKeyPair(label).catch(() => undefined);
      throw error;
    }
    await this.refresh();
    return row;
  }

  /**
   * Makes a next key the active one now (`at` absent or past), or schedules that for `at`. 409 when
   * the key will not have been published for JWKS_PUBLICATION_DELAY_S by then, or `kid` is not a
   * next key.
   */
  async activate(kid: string, at: Date | undefined, actor: Actor): Promise<SigningKeyRow> {
    if (at === undefined || at.getTime() <= this.clock.now().getTime()) return this.activateNow(kid, false, actor);
    const row = await this.db.transaction(async (tx) => {
      const scheduled = await this.keys.schedule(kid, at, new Date(at.getTime() - this.config.jwksPublicationDelayS * 1000), tx);
      if (scheduled === undefined) throw this.notActivatable(await this.keys.find(kid, tx), kid);
      await this.audit.record(
        { org: PLATFORM_ORG, ...byActor(actor), action: 'signing_key.schedule', target: kid, outcome: 'success', details: { activateAt: isoTimestamp(at) } },
        tx,
      );
      this.changes.publishOnCommit(tx, 'signing-key', [kid]);
      return scheduled;
    });
    await this.refresh();
    return row;
  }

  /**
   * Makes a next key the active one and retires the active key, in one transaction of guarded
   * UPDATEs: 409 before the key has been published for JWKS_PUBLICATION_DELAY_S, or when `kid` is
   * not a next key (`due`: not one scheduled for now or earlier); the one-active index refuses a
   * concurrent activation of another key.
   */
  private async activateNow(kid: string, due: boolean, actor: Actor): Promise<SigningKeyRow> {
    const now = this.clock.now();
    const delayMs = this.config.jwksPublicationDelayS * 1000;
    let row: SigningKeyRow;
    try {
      row = await this.db.transaction(async (tx) => {
        const retired = await this.keys.retireActive(kid, now, RETIRED_KEY_SKEW_S, tx);
        const activated = await this.keys.activate(kid, now, new Date(now.getTime() - delayMs), due, tx);
        if (activated === undefined) throw this.notActivatable(await this.keys.find(kid, tx), kid);
        if (retired !== undefined) {
          await this.audit.record(
            {
              org: PLATFORM_ORG,
              ...byActor(actor),
              action: 'signing_key.retire',
              target: retired.kid,
              outcome: 'success',
              details: { replacedBy: kid, notAfter: isoTimestamp(retired.not_after!) },
            },
            tx,
          );
        }
        await this.audit.record(
          {
            org: PLATFORM_ORG,
            ...byActor(actor),
            action: 'signing_key.activate',
            target: kid,
            outcome: 'success',
            details: { replaces: retired?.kid ?? null },
          },
          tx,
        );
        this.changes.publishOnCommit(tx, 'signing-key', retired ? [retired.kid, kid] : [kid]);
        return activated;
      });
    } catch (error) {
      if (isPgError(error, PG_UNIQUE_VIOLATION)) {
        throw new DomainError('CONFLICT', `Another key was activated at the same time as ${kid}; GET /admin/v1/signing-keys shows the active key.`);
      }
      throw error;
    }
    await this.refresh();
    return row;
  }

  /**
   * Withdraws a next key (it signed nothing, so it leaves JWKS at once). The active key retires only
   * by activating its successor (409 here); a retired key stays as it is.
   */
  async retire(kid: string, actor: Actor): Promise<SigningKeyRow> {
    const row = await this.db.transaction(async (tx) => {
      const withdrawn = await this.keys.withdraw(kid, this.clock.now(), tx);
      if (withdrawn === undefined) {
        const current = await this.keys.find(kid, tx);
        if (current === undefined) throw unknownKid(kid);
        if (current.state === 'active') {
          throw new DomainError('CONFLICT', `Key ${kid} is the active key: generate a next key and activate it, which retires this one.`);
        }
        return current;
      }
      await this.audit.record(
        { org: PLATFORM_ORG, ...byActor(actor), action: 'signing_key.retire', target: kid, outcome: 'success', details: { withdrawn: true } },
        tx,
      );
      this.changes.publishOnCommit(tx, 'signing-key', [kid]);
      return withdrawn;
    });
    await this.refresh();
    return row;
  }

  /**
   * The emergency withdrawal of a key believed compromised (issue 32; DECISIONS 12.1): it leaves JWKS
   * now and its tokens are refused from now on. The active key is replaced at once by a new key of
   * its algorithm, generated in the HSM and active without a publication delay (a relying party
   * that cached JWKS before fails closed on the new key's tokens until it fetches JWKS again). A key
   * withdrawn already is answered as it is. Answers the withdrawn key and, for the active key, its
   * replacement.
   */
  async withdraw(kid: string, reason: string, actor: Actor): Promise<{ withdrawn: SigningKeyRow; replacement?: SigningKeyRow }> {
    const current = await this.keys.find(kid);
    if (current === undefined) throw unknownKid(kid);
    if (current.withdrawn_at !== null) return { withdrawn: current };
    const result =
      current.state === 'active' ? await this.withdrawActive(current, reason, actor) : { withdrawn: await this.withdrawInactive(kid, reason, actor) };
    await this.refresh();
    return result;
  }

  private async withdrawActive(current: SigningKeyRow, reason: string, actor: Actor): Promise<{ withdrawn: SigningKeyRow; replacement: SigningKeyRow }> {
    const label = `${this.signer.keyLabel}/${randomBytes(8).toString('hex')}`;
    const pair = await this.keyStore.generateKeyPair(label, current.algorithm === 'ES256' ? 'EC-P256' : 'RSA-3072');
    const jwk = signingJwkFromSpki(pair.publicKeySpki);
    try {
      return await this.db.transaction(async (tx) => {
        const now = this.clock.now();
        const replaced = await this.keys.withdrawActive(
          current.kid,
          { kid: jwk.kid, hsm_label: label, hsm_key_id: pair.id, algorithm: jwk.alg, public_jwk: jwk },
          now,
          reason,
          tx,
        );
        if (replaced === undefined) {
          throw new DomainError(
            'CONFLICT',
            `Key ${current.kid} stopped being the active key meanwhile; GET /admin/v1/signing-keys shows the keys, withdraw it again.`,
          );
        }
        const event = { org: PLATFORM_ORG, ...byActor(actor), outcome: 'success' } as const;
        await this.audit.record({ ...event, action: 'signing_key.withdraw', target: current.kid, details: { reason, replacedBy: jwk.kid } }, tx);
        await this.audit.record({ ...event, action: 'signing_key.generate', target: jwk.kid, details: { hsmLabel: label, algorithm: jwk.alg } }, tx);
        await this.audit.record({ ...event, action: 'signing_key.activate', target: jwk.kid, details: { replaces: current.kid, withdrawal: true } }, tx);
        this.changes.publishOnCommit(tx, 'signing-key', [current.kid, jwk.kid]);
        return { withdrawn: replaced.withdrawn, replacement: replaced.activated };
      });
    } catch (error) {
      // A key no row names would never be used: take it out of the HSM again.
      await this.keyStore.destroyKeyPair(label).catch(() => undefined);
      if (isPgError(error, PG_UNIQUE_VIOLATION)) {
        throw new DomainError(
          'CONFLICT',
          `Another key was activated at the same time; GET /admin/v1/signing-keys shows the keys, withdraw ${current.kid} again.`,
        );
      }
      throw error;
    }
  }

  private async withdrawInactive(kid: string, reason: string, actor: Actor): Promise<SigningKeyRow> {
    return this.db.transaction(async (tx) => {
      const withdrawn = await this.keys.withdrawInactive(kid, this.clock.now(), reason, tx);
      if (withdrawn === undefined) {
        throw new DomainError('CONFLICT', `Key ${kid} changed meanwhile (activated or withdrawn); GET /admin/v1/signing-keys shows it, withdraw it again.`);
      }
      await this.audit.record(
        { org: PLATFORM_ORG, ...byActor(actor), action: 'signing_key.withdraw', target: kid, outcome: 'success', details: { reason } },
        tx,
      );
      this.changes.publishOnCommit(tx, 'signing-key', [kid]);
      return withdrawn;
    });
  }

  /** The ring; while the change feed is down (no notice of a change) it is read again in the background, never on the caller's path. */
  private current(): KeyRing {
    if (!this.changes.live && Date.now() - this.reloadStartedAt > RELOAD_WITHOUT_FEED_MS) {
      this.reloadStartedAt = Date.now();
      this.refresh().catch(() => undefined);
    }
    return this.ring;
  }

  /**
   * Runs the scheduled activation that is due, once at a time per instance. Another instance may
   * have run it, the key may have been withdrawn or rescheduled: then the guarded UPDATEs change
   * nothing and the ring is read again.
   */
  private activateScheduled(): void {
    const scheduled = this.ring.scheduled;
    if (scheduled === undefined || this.activating !== undefined) return;
    this.activating = this.activateNow(scheduled.kid, true, SCHEDULER)
      .then(
        () => this.logger.info({ kid: scheduled.kid }, 'scheduled token-signing key activated'),
        async (error: unknown) => {
          // A key withdrawn or rescheduled meanwhile refuses (DomainError); an outage is logged by the database layer.
          if (!(error instanceof DomainError || error instanceof DatabaseUnavailableError))
            this.logger.error({ err: error, kid: scheduled.kid }, 'scheduled activation of a token-signing key failed; will retry');
          await this.refresh();
        },
      )
      .catch(() => undefined)
      .finally(() => (this.activating = undefined));
  }

  /** A timer for the first scheduled activation, so it comes on time on an idle instance too. */
  private armScheduleTimer(): void {
    clearTimeout(this.scheduleTimer);
    const scheduled = this.ring.scheduled;
    if (scheduled === undefined) return;
    const delayMs = Math.min(Math.max(0, scheduled.at - this.clock.now().getTime()), MAX_TIMER_MS);
    this.scheduleTimer = setTimeout(() => (this.clock.now().getTime() >= scheduled.at ? this.activateScheduled() : this.armScheduleTimer()), delayMs);
    this.scheduleTimer.unref();
  }

  /**
   * Destroys a retired key's HSM object once it is no longer published (its last token has expired),
   * and forgets the key; until then, or without this request, the HSM object is kept. JWT_KEY stays:
   * the HSM module finds it at every start (JWT_KEY_LABEL).
   */
  async destroy(kid: string, actor: Actor): Promise<void> {
    await this.db.transaction(async (tx) => {
      const now = this.clock.now();
      const deleted = await this.keys.deleteUnpublished(kid, now, this.signer.keyLabel, tx);
      if (deleted === undefined) throw this.notDestroyable(await this.keys.find(kid, tx), kid);
      await this.audit.record(
        { org: PLATFORM_ORG, ...byActor(actor), action: 'signing_key.destroy', target: kid, outcome: 'success', details: { hsmLabel: deleted.hsm_label } },
        tx,
      );
      this.changes.publishOnCommit(tx, 'signing-key', [kid]);
      // Last, inside the transaction: an HSM failure leaves the row, and the key, as they were.
      await this.keyStore.destroyKeyPair(deleted.hsm_label);
    });
    await this.refresh();
  }

  /** Reads the ring again; a change during a read reads once more, so the last read sees the last commit. */
  private refresh(): Promise<void> {
    this.wanted += 1;
    this.loading ??= this.loadUntilCurrent().finally(() => (this.loading = undefined));
    return this.loading;
  }

  private async loadUntilCurrent(): Promise<void> {
    let seen: number;
    do {
      seen = this.wanted;
      const rows = await this.keys.all();
      this.ring = ringOf(rows, this.signer.keyLabel);
      for (const row of rows) {
        if (row.state === 'active' && row.last_token_expires_at !== null) {
          this.reserved.set(row.kid, Math.max(this.reserved.get(row.kid) ?? 0, row.last_token_expires_at.getTime()));
        } else if (row.state !== 'active') this.reserved.delete(row.kid);
      }
    } while (seen !== this.wanted);
    this.armScheduleTimer();
  }

  private notDestroyable(row: SigningKeyRow | undefined, kid: string): DomainError {
    if (row === undefined) return unknownKid(kid);
    if (row.state !== 'retired') return new DomainError('CONFLICT', `Key ${kid} is ${row.state}; only a retired key's HSM object can be destroyed.`);
    if (row.hsm_label === this.signer.keyLabel) {
      return new DomainError('CONFLICT', `Key ${kid} is ${row.hsm_label}, which the service finds in the HSM at every start (JWT_KEY_LABEL); it is kept.`);
    }
    return new DomainError(
      'CONFLICT',
      `Key ${kid} is published in JWKS until ${isoTimestamp(row.not_after!)}, when the last token it signed has expired; destroy it after that.`,
    );
  }

  private notActivatable(row: SigningKeyRow | undefined, kid: string): DomainError {
    if (row === undefined) return unknownKid(kid);
    if (row.state !== 'next') {
      return new DomainError('CONFLICT', `Key ${kid} is ${row.state}; only a next key can be activated (generate one with POST /admin/v1/signing-keys).`);
    }
    const activatableAt = isoTimestamp(this.activatableAt(row));
    return new DomainError(
      'CONFLICT',
      `Key ${kid} cannot sign before ${activatableAt}: relying parties may cache JWKS for JWKS_PUBLICATION_DELAY_S (${this.config.jwksPublicationDelayS} s) and must have seen it first; activate it then.`,
    );
  }
}

function keysChanging(): DomainError {
  return new DomainError('SERVICE_UNAVAILABLE', 'The token-signing keys are changing; retry in a second.', { 'Retry-After': '1' });
}

function unknownKid(kid: string): DomainError {
  return notFound(`No token-signing key has kid ${kid}; GET /admin/v1/signing-keys lists them.`);
}

/** A withdrawn key is out whatever the clocks say: an instance whose clock runs behind the withdrawing one's must not keep it. */
function isPublished(row: SigningKeyRow, now: Date): boolean {
  return row.withdrawn_at === null && (row.state !== 'retired' || row.not_after!.getTime() > now.getTime());
}

function ringOf(rows: SigningKeyRow[], jwtKeyLabel: string): KeyRing {
  const byKid = new Map<string, TokenSigningKey>();
  let active: TokenSigningKey | undefined;
  let scheduled: KeyRing['scheduled'];
  for (const row of rows) {
    const publicKey = createPublicKey({ key: { ...row.public_jwk }, format: 'jwk' });
    const key: TokenSigningKey = {
      kid: row.kid,
      algorithm: row.algorithm,
      ref: row.hsm_label === jwtKeyLabel ? undefined : { label: row.hsm_label, id: row.hsm_key_id! },
      verifyKey: row.algorithm === 'ES256' ? { key: publicKey, dsaEncoding: 'ieee-p1363' } : publicKey,
      row,
    };
    byKid.set(row.kid, key);
    if (row.state === 'active') active = key;
    if (row.state === 'next' && row.activate_at !== null && (scheduled === undefined || row.activate_at.getTime() < scheduled.at)) {
      scheduled = { kid: row.kid, at: row.activate_at.getTime() };
    }
  }
  if (active === undefined) throw new Error('signing_keys has no active key');
  return { active, byKid, scheduled };
}
