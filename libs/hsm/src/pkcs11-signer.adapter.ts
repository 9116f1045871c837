import { createHash, createPublicKey, randomBytes, verify } from 'node:crypto';
import { existsSync } from 'node:fs';
import { endianness } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import * as pkcs11js from 'pkcs11js';
import { HsmConfigurationError, SignerUnavailableError } from './hsm.errors';
import { ecPublicKeyMembers, jwkThumbprint, P256_EC_PARAMS, rsaPublicKeyMembers, type PublicKeyMembers } from './pkcs11-public-key';
import { SessionPool } from './session-pool';
import { Signer, type JwsAlgorithm, type SigningJwk } from './signer.port';

type Handle = pkcs11js.Handle;

/** Where the signing key lives (DECISIONS.md §12). */
export interface HsmOptions {
  /** The HSM vendor's PKCS#11 module, e.g. /usr/lib/softhsm/libsofthsm2.so. */
  modulePath: string;
  /** Tokens are selected by label: slot ids are not stable (pkcs11.md rule 6). */
  tokenLabel: string;
  /** The user PIN. Never logged. */
  pin: string;
  /** Label of the signing key pair; default JWT_KEY. */
  keyLabel?: string;
  /** Sessions opened at boot, one sign in flight on each (pkcs11.md rule 2); default 4. */
  sessionPoolSize?: number;
  /**
   * Embedded default only: when no private key has `keyLabel`, generate an EC P-256 key pair in
   * the token (non-extractable, random 16-byte CKA_ID). Never set it for a production HSM, and
   * connect once before forking workers: two processes generating at once leave two keys under
   * the label, which the next start refuses (rule 6).
   */
  generateKeyIfMissing?: boolean;
  /**
   * When no sign has succeeded for this long, sign a probe input, so that an HSM lost while the
   * service is idle turns readiness red (and starts the reconnect) before a client's request meets
   * it. 0 turns it off; default 0 here, the service sets HSM_HEALTH_CHECK_INTERVAL_S.
   */
  healthCheckIntervalMs?: number;
}

/** Pino-style: a message, or structured fields followed by a message. */
export type HsmLogFn = (objOrMsg: object | string, msg?: string) => void;

export interface HsmLogger {
  info: HsmLogFn;
  warn: HsmLogFn;
  error: HsmLogFn;
}

const DEFAULT_KEY_LABEL = 'JWT_KEY';
const DEFAULT_SESSION_POOL_SIZE = 4;
const RECONNECT_FIRST_DELAY_MS = 250;
const RECONNECT_MAX_DELAY_MS = 30_000;
const ES256_SIGNATURE_LENGTH = 64;
/** PKCS#11 v2.40; pkcs11js 2.1 names it only CKR_VENDOR_DEFINED:27. */
const CKR_ACTION_PROHIBITED = 0x1b;
const KEY_PAIR_CHECK_INPUT = Buffer.from('Pkcs11Signer key pair check');
const HEALTH_CHECK_INPUT = Buffer.from('Pkcs11Signer health check');
const PIN_REJECTED_CODES = new Set([
  pkcs11js.CKR_PIN_INCORRECT,
  pkcs11js.CKR_PIN_INVALID,
  pkcs11js.CKR_PIN_LEN_RANGE,
  pkcs11js.CKR_PIN_EXPIRED,
  pkcs11js.CKR_PIN_LOCKED,
]);

/** pkcs11.md rule 4: C_Initialize/C_Finalize are process-wide, so one Pkcs11Signer owns the module at a time. */
let moduleOwned = false;

/**
 * pkcs11.md rule 3: a native sign worker reads the input and writes the output off the main
 * thread, so both buffers stay referenced here until its promise settles.
 */
const buffersInNativeUse = new Set<readonly Buffer[]>();

type Settings = Required<HsmOptions>;

/** `pin-rejected`: a reconnect met a wrong PIN and stopped for good (pkcs11.md rule 5). */
type State = 'ready' | 'reconnecting' | 'pin-rejected' | 'closed';

/** One generation of sessions; a reconnect replaces it as a whole. */
interface Connection {
  readonly slot: Handle;
  readonly sessions: readonly Handle[];
  readonly pool: SessionPool;
  /** The token's private key, or its session copy when the token allows one (see `sessionCopyOf`). */
  readonly signingKey: Handle;
  readonly signsWithSessionCopy: boolean;
}

interface SigningKey {
  readonly algorithm: JwsAlgorithm;
  readonly publicJwk: SigningJwk;
  readonly signatureLength: number;
}

/**
 * Signs JWS inputs with a key held in a PKCS#11 token through pkcs11js, as the process's only
 * owner of the PKCS#11 module. "Rule N" cites the team's measured pkcs11js notes (shared/notes/pkcs11.md).
 */
export class Pkcs11Signer extends Signer {
  override readonly algorithm: JwsAlgorithm;
  override readonly kid: string;
  override readonly publicJwk: SigningJwk;
  private readonly signatureLength: number;
  private state: State = 'ready';
  /** Every accepted sign until it settles: what a reconnect and close() wait for (rules 2 and 4). */
  private readonly running = new Set<Promise<Buffer>>();
  private readonly stopReconnecting = new AbortController();
  private reconnection: Promise<void> = Promise.resolve();
  private nextAttemptAt = 0;
  private closing?: Promise<void>;
  /** When the last sign succeeded: signs in use prove the HSM alive, so health checks skip then. */
  private lastSignedAt = Date.now();
  private healthChecks?: NodeJS.Timeout;

  private constructor(
    private readonly pkcs11: pkcs11js.PKCS11,
    private readonly settings: Settings,
    private readonly logger: HsmLogger | undefined,
    private connection: Connection,
    key: SigningKey,
  ) {
    super();
    this.algorithm = key.algorithm;
    this.kid = key.publicJwk.kid;
    this.publicJwk = key.publicJwk;
    this.signatureLength = key.signatureLength;
  }

  /**
   * Loads the module, logs in once and finds the key. Throws HsmConfigurationError naming what is
   * missing or wrong; a rejected PIN is never retried (rule 5).
   */
  static async connect(options: HsmOptions, logger?: HsmLogger): Promise<Pkcs11Signer> {
    const settings = withDefaults(options);
    if (moduleOwned) {
      throw new HsmConfigurationError(
        'HSM_MODULE_IN_USE',
        'a Pkcs11Signer already owns the PKCS#11 module in this process; close() it before connecting another (pkcs11.md rule 4)',
      );
    }
    if (!existsSync(settings.modulePath)) {
      throw new HsmConfigurationError('HSM_MODULE_NOT_FOUND', `PKCS#11 module file not found at path ${settings.modulePath}`);
    }
    moduleOwned = true;
    const pkcs11 = new pkcs11js.PKCS11();
    let initialized = false;
    try {
      pkcs11.load(settings.modulePath);
      initialize(pkcs11, settings.modulePath);
      initialized = true;
      const { connection, key } = establish(pkcs11, settings, logger, settings.generateKeyIfMissing);
      const signer = new Pkcs11Signer(pkcs11, settings, logger, connection, key);
      await signer.checkKeyPair(connection).catch((error: unknown) => {
        quietly(logger, 'C_CloseAllSessions', () => pkcs11.C_CloseAllSessions(connection.slot));
        throw error;
      });
      signer.startHealthChecks();
      logger?.info(
        {
          tokenLabel: settings.tokenLabel,
          keyLabel: settings.keyLabel,
          algorithm: signer.algorithm,
          kid: signer.kid,
          sessions: settings.sessionPoolSize,
          signsWithSessionCopy: connection.signsWithSessionCopy,
        },
        'HSM signer connected',
      );
      return signer;
    } catch (error) {
      // Nothing is in flight during start-up, so finalizing here is safe (rule 4) and lets a
      // corrected configuration connect again in the same process.
      if (initialized) {
        quietly(logger, 'C_Finalize', () => pkcs11.C_Finalize());
      }
      quietly(logger, 'close', () => pkcs11.close());
      moduleOwned = false;
      throw error instanceof HsmConfigurationError
        ? error
        : new HsmConfigurationError('HSM_MODULE_ERROR', `PKCS#11 module ${settings.modulePath} failed at start-up: ${describeError(error)}`, { cause: error });
    }
  }

  override isReady(): boolean {
    return this.state === 'ready';
  }

  override async sign(signingInput: Buffer): Promise<Buffer> {
    if (this.state !== 'ready') {
      throw this.unavailable();
    }
    const signing = this.signOnPool(this.connection, signingInput);
    this.running.add(signing);
    try {
      const signature = await signing;
      // A probe's own success does not count, or an idle signer would probe only every other tick.
      if (signingInput !== HEALTH_CHECK_INPUT) this.lastSignedAt = Date.now();
      return signature;
    } finally {
      this.running.delete(signing);
    }
  }

  /**
   * Every interval without a successful sign, one sign of a probe input through the normal path:
   * the pool (one operation per session, rule 2), the running set (close() waits for it, rule 4)
   * and the failure handling (readiness red, background reconnect). A failed probe is logged there.
   */
  private startHealthChecks(): void {
    const intervalMs = this.settings.healthCheckIntervalMs;
    if (intervalMs <= 0) return;
    this.healthChecks = setInterval(() => {
      if (this.state === 'ready' && Date.now() - this.lastSignedAt >= intervalMs) {
        this.sign(HEALTH_CHECK_INPUT).catch(() => undefined);
      }
    }, intervalMs);
    this.healthChecks.unref();
  }

  /**
   * Stops accepting signs, lets the accepted ones finish, then C_Logout, C_CloseAllSessions and
   * C_Finalize, in that order (rule 4). Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  /**
   * Tests only: breaks the module behind the adapter's back. `sessions-closed` is what an HSM
   * restart or a dropped link does (the next sign meets CKR_SESSION_HANDLE_INVALID);
   * `module-finalized` is a module that lost its state (CKR_CRYPTOKI_NOT_INITIALIZED) and makes
   * the reconnect read the token afresh. Call it with no sign in flight (rules 2 and 4).
   */
  simulateModuleFailureForTests(failure: 'sessions-closed' | 'module-finalized' = 'sessions-closed'): void {
    if (failure === 'sessions-closed') {
      this.pkcs11.C_CloseAllSessions(this.connection.slot);
    } else {
      this.pkcs11.C_Finalize();
    }
  }

  private async signOnPool(connection: Connection, input: Buffer): Promise<Buffer> {
    const session = await connection.pool.acquire();
    try {
      return await this.signWith(connection, session, input);
    } catch (error) {
      throw this.onModuleFailure(connection, error);
    } finally {
      connection.pool.release(session);
    }
  }

  private async signWith(connection: Connection, session: Handle, input: Buffer): Promise<Buffer> {
    const output = Buffer.alloc(this.signatureLength);
    if (this.algorithm === 'ES256') {
      // Rule 7: CKM_ECDSA signs its input as the digest, so hash first; the output is raw r||s.
      // Synchronous: an ES256 sign takes ~40-60 us, no slower than the async form.
      this.pkcs11.C_SignInit(session, { mechanism: pkcs11js.CKM_ECDSA }, connection.signingKey);
      return this.pkcs11.C_Sign(session, createHash('sha256').update(input).digest(), output);
    }
    // Rule 7: CKM_SHA256_RSA_PKCS hashes in the token. Asynchronous, since an RS256 sign would
    // block the event loop ~570 us.
    this.pkcs11.C_SignInit(session, { mechanism: pkcs11js.CKM_SHA256_RSA_PKCS }, connection.signingKey);
    const held = [input, output] as const;
    buffersInNativeUse.add(held);
    try {
      return await this.pkcs11.C_SignAsync(session, input, output);
    } finally {
      buffersInNativeUse.delete(held);
    }
  }

  /**
   * Signs a probe and verifies it with the published JWK. Catches a public key under the private
   * key's CKA_ID that is not its pair, and a module whose ECDSA output is not raw r||s.
   */
  private async checkKeyPair(connection: Connection): Promise<void> {
    const session = await connection.pool.acquire();
    let signature: Buffer;
    try {
      signature = await this.signWith(connection, session, KEY_PAIR_CHECK_INPUT);
    } finally {
      connection.pool.release(session);
    }
    const publicKey = createPublicKey({ key: { ...this.publicJwk }, format: 'jwk' });
    if (!verify('sha256', KEY_PAIR_CHECK_INPUT, { key: publicKey, dsaEncoding: 'ieee-p1363' }, signature)) {
      throw new HsmConfigurationError(
        'HSM_PUBLIC_KEY_MISMATCH',
        `the public key with the CKA_ID of ${keyName(this.settings)} does not verify that key's signatures; the JWKS would publish the wrong key`,
      );
    }
  }

  /** The first failure of a connection turns readiness red and starts the background reconnect. */
  private onModuleFailure(connection: Connection, error: unknown): SignerUnavailableError {
    if (this.state === 'ready' && connection === this.connection) {
      this.state = 'reconnecting';
      this.nextAttemptAt = Date.now() + RECONNECT_FIRST_DELAY_MS;
      this.logger?.warn({ tokenLabel: this.settings.tokenLabel, error: describeError(error) }, 'HSM sign failed; reconnecting in the background');
      connection.pool.abandon(this.unavailable());
      this.reconnection = this.reconnect();
    }
    return this.unavailable(error);
  }

  private async reconnect(): Promise<void> {
    // Rules 2 and 4: the old sessions are closed only once no sign is using them.
    await Promise.allSettled([...this.running]);
    let delayMs = RECONNECT_FIRST_DELAY_MS;
    for (let attempt = 1; ; attempt += 1) {
      this.nextAttemptAt = Date.now() + delayMs;
      try {
        await sleep(delayMs, undefined, { signal: this.stopReconnecting.signal, ref: false });
      } catch {
        return; // close() stopped the reconnect.
      }
      let failure: unknown;
      try {
        await this.reestablish();
      } catch (error) {
        failure = error;
      }
      if (this.state !== 'reconnecting') {
        return; // close() came in while this attempt ran; shutdown() takes over this.connection.
      }
      if (failure === undefined) {
        this.state = 'ready';
        this.logger?.info({ tokenLabel: this.settings.tokenLabel, kid: this.kid, attempt }, 'HSM signer reconnected');
        return;
      }
      if (failure instanceof HsmConfigurationError && failure.code === 'HSM_PIN_REJECTED') {
        // Rule 5: a real HSM locks the user after a few wrong PINs, so stop here for good.
        this.state = 'pin-rejected';
        this.logger?.error({ tokenLabel: this.settings.tokenLabel, error: failure.message }, 'HSM reconnect stopped: PIN rejected; fix the PIN and restart');
        return;
      }
      delayMs = Math.min(delayMs * 2, RECONNECT_MAX_DELAY_MS);
      this.logger?.warn({ tokenLabel: this.settings.tokenLabel, attempt, retryInMs: delayMs, error: describeError(failure) }, 'HSM reconnect failed');
    }
  }

  /** Close sessions, find the token again by label, reopen the pool, log in, find the same key. */
  private async reestablish(): Promise<void> {
    quietly(this.logger, 'C_CloseAllSessions', () => this.pkcs11.C_CloseAllSessions(this.connection.slot));
    // A module that lost its state answers CKR_CRYPTOKI_NOT_INITIALIZED; this brings it back
    // (rule 1 flags), and a healthy one answers CKR_CRYPTOKI_ALREADY_INITIALIZED.
    try {
      this.pkcs11.C_Initialize({ flags: pkcs11js.CKF_OS_LOCKING_OK });
    } catch (error) {
      if (pkcs11ErrorCode(error) !== pkcs11js.CKR_CRYPTOKI_ALREADY_INITIALIZED) {
        throw error;
      }
    }
    const { connection, key } = establish(this.pkcs11, this.settings, this.logger, false);
    try {
      if (key.publicJwk.kid !== this.kid) {
        throw new HsmConfigurationError(
          'HSM_PUBLIC_KEY_MISMATCH',
          `${keyName(this.settings)} now has kid ${key.publicJwk.kid}, but this process publishes kid ${this.kid}; restart to publish the new key`,
        );
      }
      await this.checkKeyPair(connection);
    } catch (error) {
      quietly(this.logger, 'C_CloseAllSessions', () => this.pkcs11.C_CloseAllSessions(connection.slot));
      throw error;
    }
    this.connection = connection;
  }

  private async shutdown(): Promise<void> {
    this.state = 'closed';
    clearInterval(this.healthChecks);
    this.stopReconnecting.abort();
    await this.reconnection;
    // Rule 4: C_Finalize with signs in flight segfaults, so drain the accepted ones first.
    await Promise.allSettled([...this.running]);
    const { slot, sessions } = this.connection;
    quietly(this.logger, 'C_Logout', () => this.pkcs11.C_Logout(sessions[0]));
    quietly(this.logger, 'C_CloseAllSessions', () => this.pkcs11.C_CloseAllSessions(slot));
    quietly(this.logger, 'C_Finalize', () => this.pkcs11.C_Finalize());
    quietly(this.logger, 'close', () => this.pkcs11.close());
    moduleOwned = false;
    this.logger?.info({ tokenLabel: this.settings.tokenLabel }, 'HSM signer closed');
  }

  private unavailable(cause?: unknown): SignerUnavailableError {
    const reasons: Record<State, string> = {
      ready: 'an HSM operation failed',
      reconnecting: 'reconnecting to the HSM',
      'pin-rejected': 'the HSM rejected the PIN while reconnecting; fix it and restart',
      closed: 'the signer is shut down',
    };
    const retryAfterSeconds = this.state === 'reconnecting' ? Math.max(1, Math.ceil((this.nextAttemptAt - Date.now()) / 1000)) : RECONNECT_MAX_DELAY_MS / 1000;
    return new SignerUnavailableError(
      `HSM signer for token "${this.settings.tokenLabel}" unavailable: ${reasons[this.state]}`,
      retryAfterSeconds,
      cause === undefined ? undefined : { cause },
    );
  }
}

function withDefaults(options: HsmOptions): Settings {
  const sessionPoolSize = options.sessionPoolSize ?? DEFAULT_SESSION_POOL_SIZE;
  if (!Number.isInteger(sessionPoolSize) || sessionPoolSize < 1) {
    throw new HsmConfigurationError('HSM_OPTIONS_INVALID', `sessionPoolSize must be a positive integer, got ${sessionPoolSize}`);
  }
  const healthCheckIntervalMs = options.healthCheckIntervalMs ?? 0;
  if (!Number.isInteger(healthCheckIntervalMs) || healthCheckIntervalMs < 0) {
    throw new HsmConfigurationError(
      'HSM_OPTIONS_INVALID',
      `healthCheckIntervalMs must be a whole number of milliseconds (0 turns checks off), got ${healthCheckIntervalMs}`,
    );
  }
  return {
    modulePath: options.modulePath,
    tokenLabel: options.tokenLabel,
    pin: options.pin,
    keyLabel: options.keyLabel ?? DEFAULT_KEY_LABEL,
    sessionPoolSize,
    generateKeyIfMissing: options.generateKeyIfMissing ?? false,
    healthCheckIntervalMs,
  };
}

function initialize(pkcs11: pkcs11js.PKCS11, modulePath: string): void {
  try {
    // Rule 1: without CKF_OS_LOCKING_OK, async calls corrupt the heap.
    pkcs11.C_Initialize({ flags: pkcs11js.CKF_OS_LOCKING_OK });
  } catch (error) {
    if (pkcs11ErrorCode(error) === pkcs11js.CKR_CRYPTOKI_ALREADY_INITIALIZED) {
      throw new HsmConfigurationError(
        'HSM_MODULE_IN_USE',
        `PKCS#11 module ${modulePath} is already initialized in this process, by other code or by a Pkcs11Signer that was never closed (pkcs11.md rule 4)`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** Finds the token, opens the session pool, logs in and reads the key. Closes what it opened if any step fails. */
function establish(
  pkcs11: pkcs11js.PKCS11,
  settings: Settings,
  logger: HsmLogger | undefined,
  mayGenerateKey: boolean,
): { connection: Connection; key: SigningKey } {
  const slot = findTokenSlot(pkcs11, settings);
  try {
    // Rule 2: the whole pool is opened up front; signs only need read-only sessions.
    const sessions = Array.from({ length: settings.sessionPoolSize }, () => pkcs11.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION));
    const [session] = sessions;
    login(pkcs11, session, settings);
    let privateKey = findPrivateKey(pkcs11, session, settings);
    if (privateKey === undefined && mayGenerateKey) {
      privateKey = generateEcKey(pkcs11, slot, settings, logger);
    }
    if (privateKey === undefined) {
      throw new HsmConfigurationError(
        'HSM_KEY_NOT_FOUND',
        `no private key labelled "${settings.keyLabel}" on token "${settings.tokenLabel}"; private keys present: ${quoteList(privateKeyLabels(pkcs11, session))}`,
      );
    }
    const key = readSigningKey(pkcs11, session, privateKey, settings);
    const sessionCopy = sessionCopyOf(pkcs11, session, privateKey, settings, logger);
    return {
      connection: { slot, sessions, pool: new SessionPool(sessions), signingKey: sessionCopy ?? privateKey, signsWithSessionCopy: sessionCopy !== undefined },
      key,
    };
  } catch (error) {
    quietly(logger, 'C_CloseAllSessions', () => pkcs11.C_CloseAllSessions(slot));
    throw error;
  }
}

function findTokenSlot(pkcs11: pkcs11js.PKCS11, settings: Settings): Handle {
  const tokens = pkcs11.C_GetSlotList(true).map((slot) => ({ slot, label: pkcs11.C_GetTokenInfo(slot).label.trim() }));
  const matches = tokens.filter((token) => token.label === settings.tokenLabel);
  if (matches.length > 1) {
    throw new HsmConfigurationError(
      'HSM_TOKEN_AMBIGUOUS',
      `${matches.length} tokens are labelled "${settings.tokenLabel}" in PKCS#11 module ${settings.modulePath}; token labels must be unique`,
    );
  }
  const [match] = matches;
  if (match === undefined) {
    const labels = tokens.map((token) => token.label).filter((label) => label !== '');
    throw new HsmConfigurationError(
      'HSM_TOKEN_NOT_FOUND',
      `no token labelled "${settings.tokenLabel}" in PKCS#11 module ${settings.modulePath}; token labels present: ${quoteList(labels)}`,
    );
  }
  return match.slot;
}

function login(pkcs11: pkcs11js.PKCS11, session: Handle, settings: Settings): void {
  try {
    pkcs11.C_Login(session, pkcs11js.CKU_USER, settings.pin);
  } catch (error) {
    // Rule 5: the login belongs to the token, so an earlier login of this application counts.
    if (pkcs11ErrorCode(error) === pkcs11js.CKR_USER_ALREADY_LOGGED_IN) {
      return;
    }
    if (error instanceof pkcs11js.Pkcs11Error && PIN_REJECTED_CODES.has(error.code)) {
      throw new HsmConfigurationError(
        'HSM_PIN_REJECTED',
        `PIN rejected for token "${settings.tokenLabel}" (C_Login: ${error.message}); not retrying, since HSMs lock the user after a few wrong PINs (pkcs11.md rule 5)`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** Rule 6: key labels are not unique, so insist on exactly one private key under the label. */
function findPrivateKey(pkcs11: pkcs11js.PKCS11, session: Handle, settings: Settings): Handle | undefined {
  const keys = findObjects(pkcs11, session, [
    { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PRIVATE_KEY },
    { type: pkcs11js.CKA_LABEL, value: settings.keyLabel },
  ]);
  if (keys.length > 1) {
    const ids = keys.map((key) => readAttributes(pkcs11, session, key, [pkcs11js.CKA_ID])[0].toString('hex') || '(empty)');
    throw new HsmConfigurationError(
      'HSM_KEY_AMBIGUOUS',
      `more than one private key labelled "${settings.keyLabel}" on token "${settings.tokenLabel}" (CKA_IDs ${ids.join(', ')}); keep exactly one signing key under this label`,
    );
  }
  return keys[0];
}

function privateKeyLabels(pkcs11: pkcs11js.PKCS11, session: Handle): string[] {
  return findObjects(pkcs11, session, [{ type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PRIVATE_KEY }]).map((key) =>
    readAttributes(pkcs11, session, key, [pkcs11js.CKA_LABEL])[0].toString('utf8'),
  );
}

/**
 * Copies the private key into a session object of the same HSM (CKA_TOKEN false; the copy keeps
 * CKA_SENSITIVE and non-extractability, and never leaves the HSM). SoftHSM2's file store checks the
 * token's files on every use of a token object, which makes an ES256 sign with the token key ~55 us
 * against ~39 us with the session copy (ops/bench/hsm-sign.js), and a token costs two signs.
 * The copy belongs to `session` (the pool's first), so it is gone when the sessions close and a
 * reconnect makes a new one. An HSM whose policy forbids copies (CKA_COPYABLE false) or that does
 * not implement C_CopyObject signs with the token object, as before.
 */
function sessionCopyOf(pkcs11: pkcs11js.PKCS11, session: Handle, privateKey: Handle, settings: Settings, logger: HsmLogger | undefined): Handle | undefined {
  try {
    return pkcs11.C_CopyObject(session, privateKey, [
      { type: pkcs11js.CKA_TOKEN, value: false },
      // Not the key label: a session object would otherwise match a search for the key by label.
      { type: pkcs11js.CKA_LABEL, value: `${settings.keyLabel} (session copy)` },
    ]);
  } catch (error) {
    const reason =
      pkcs11ErrorCode(error) === CKR_ACTION_PROHIBITED ? 'CKR_ACTION_PROHIBITED: the key is not copyable (CKA_COPYABLE false)' : describeError(error);
    logger?.info(
      { tokenLabel: settings.tokenLabel, keyLabel: settings.keyLabel, reason },
      'HSM refused a session copy of the signing key; signing with the token object',
    );
    return undefined;
  }
}

/** Embedded default only. Rule 10: synchronous C_GenerateKeyPair (the async form leaks). */
function generateEcKey(pkcs11: pkcs11js.PKCS11, slot: Handle, settings: Settings, logger: HsmLogger | undefined): Handle {
  // Creating token objects needs a read/write session; the pool's sessions are read-only.
  const session = pkcs11.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
  try {
    const id = randomBytes(16);
    const common = [
      { type: pkcs11js.CKA_TOKEN, value: true },
      { type: pkcs11js.CKA_KEY_TYPE, value: pkcs11js.CKK_EC },
      { type: pkcs11js.CKA_LABEL, value: settings.keyLabel },
      { type: pkcs11js.CKA_ID, value: id },
    ];
    const { privateKey } = pkcs11.C_GenerateKeyPair(
      session,
      { mechanism: pkcs11js.CKM_EC_KEY_PAIR_GEN },
      [
        ...common,
        { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PUBLIC_KEY },
        { type: pkcs11js.CKA_EC_PARAMS, value: P256_EC_PARAMS },
        { type: pkcs11js.CKA_VERIFY, value: true },
      ],
      [
        ...common,
        { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PRIVATE_KEY },
        { type: pkcs11js.CKA_PRIVATE, value: true },
        { type: pkcs11js.CKA_SENSITIVE, value: true },
        { type: pkcs11js.CKA_EXTRACTABLE, value: false },
        { type: pkcs11js.CKA_SIGN, value: true },
      ],
    );
    logger?.info({ tokenLabel: settings.tokenLabel, keyLabel: settings.keyLabel, keyId: id.toString('hex') }, 'generated an EC P-256 signing key in the HSM');
    return privateKey;
  } finally {
    pkcs11.C_CloseSession(session);
  }
}

/** Reads the public key found by the private key's CKA_ID (and type) and builds the JWK and its kid. */
function readSigningKey(pkcs11: pkcs11js.PKCS11, session: Handle, privateKey: Handle, settings: Settings): SigningKey {
  const name = keyName(settings);
  const [keyTypeValue, id] = readAttributes(pkcs11, session, privateKey, [pkcs11js.CKA_KEY_TYPE, pkcs11js.CKA_ID]);
  const keyType = readUlong(keyTypeValue);
  if (keyType !== pkcs11js.CKK_EC && keyType !== pkcs11js.CKK_RSA) {
    throw new HsmConfigurationError('HSM_KEY_UNSUPPORTED', `${name} is a ${keyTypeName(keyType)} key: key type not supported (EC P-256 or RSA >= 2048 only)`);
  }
  const publicKeys = findObjects(pkcs11, session, [
    { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PUBLIC_KEY },
    { type: pkcs11js.CKA_KEY_TYPE, value: keyType },
    { type: pkcs11js.CKA_ID, value: id },
  ]);
  const idHex = id.toString('hex') || '(empty)';
  if (publicKeys.length !== 1) {
    throw publicKeys.length === 0
      ? new HsmConfigurationError(
          'HSM_PUBLIC_KEY_NOT_FOUND',
          `no public key with the private key's CKA_ID ${idHex} on token "${settings.tokenLabel}" (${name}); the JWKS is built from it`,
        )
      : new HsmConfigurationError(
          'HSM_PUBLIC_KEY_AMBIGUOUS',
          `${publicKeys.length} public keys have the private key's CKA_ID ${idHex} on token "${settings.tokenLabel}" (${name})`,
        );
  }
  const [publicKey] = publicKeys;
  let members: PublicKeyMembers;
  if (keyType === pkcs11js.CKK_EC) {
    const [ecParams, ecPoint] = readAttributes(pkcs11, session, publicKey, [pkcs11js.CKA_EC_PARAMS, pkcs11js.CKA_EC_POINT]);
    members = ecPublicKeyMembers(ecParams, ecPoint, name);
  } else {
    const [modulus, publicExponent] = readAttributes(pkcs11, session, publicKey, [pkcs11js.CKA_MODULUS, pkcs11js.CKA_PUBLIC_EXPONENT]);
    members = rsaPublicKeyMembers(modulus, publicExponent, name);
  }
  const algorithm: JwsAlgorithm = members.kty === 'EC' ? 'ES256' : 'RS256';
  return {
    algorithm,
    // Frozen: one object is shared by every JWKS response for the life of the process.
    publicJwk: Object.freeze({ ...members, kid: jwkThumbprint(members), alg: algorithm, use: 'sig' }),
    signatureLength: members.kty === 'EC' ? ES256_SIGNATURE_LENGTH : Buffer.from(members.n, 'base64url').length,
  };
}

function findObjects(pkcs11: pkcs11js.PKCS11, session: Handle, template: pkcs11js.Template): Handle[] {
  pkcs11.C_FindObjectsInit(session, template);
  try {
    const found: Handle[] = [];
    for (let batch = pkcs11.C_FindObjects(session, 16); batch.length > 0; batch = pkcs11.C_FindObjects(session, 16)) {
      found.push(...batch);
    }
    return found;
  } finally {
    pkcs11.C_FindObjectsFinal(session);
  }
}

function readAttributes(pkcs11: pkcs11js.PKCS11, session: Handle, object: Handle, types: number[]): Buffer[] {
  return pkcs11
    .C_GetAttributeValue(
      session,
      object,
      types.map((type) => ({ type })),
    )
    .map((attribute) => attribute.value);
}

/** CK_ULONG attribute values come back in the platform's byte order and width. */
function readUlong(value: Buffer): number {
  const littleEndian = endianness() === 'LE';
  if (value.length === 8) {
    return Number(littleEndian ? value.readBigUInt64LE() : value.readBigUInt64BE());
  }
  return littleEndian ? value.readUInt32LE() : value.readUInt32BE();
}

function keyTypeName(keyType: number): string {
  const entry = Object.entries(pkcs11js).find(([name, value]) => name.startsWith('CKK_') && value === keyType);
  return entry?.[0] ?? `CKA_KEY_TYPE 0x${keyType.toString(16)}`;
}

function keyName(settings: Settings): string {
  return `key "${settings.keyLabel}" on token "${settings.tokenLabel}"`;
}

function quoteList(values: string[]): string {
  return values.length === 0 ? 'none' : values.map((value) => `"${value}"`).join(', ');
}

function pkcs11ErrorCode(error: unknown): number | undefined {
  if (error instanceof pkcs11js.Pkcs11Error) {
    return error.code;
  }
  // pkcs11js leaves some methods unwrapped (C_CopyObject): they throw the addon's plain Error, "CKR_NAME:code".
  const message = typeof error === 'object' && error !== null && 'message' in error ? String(error.message) : '';
  const match = /^CKR_\w+:(\d+)/.exec(message);
  return match ? Number(match[1]) : undefined;
}

function describeError(error: unknown): string {
  if (error instanceof pkcs11js.NativeError && error.method !== '') {
    return `${error.method}: ${error.message}`;
  }
  // Not `instanceof Error`: the module's load errors come from another realm under Jest.
  return typeof error === 'object' && error !== null && 'message' in error ? String(error.message) : String(error);
}

/** Clean-up steps that must not stop the ones after them; a failure is only worth a warning. */
function quietly(logger: HsmLogger | undefined, call: string, action: () => void): void {
  try {
    action();
  } catch (error) {
    logger?.warn({ call, error: describeError(error) }, 'PKCS#11 clean-up call failed');
  }
}
