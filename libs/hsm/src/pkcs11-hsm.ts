import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import * as pkcs11js from 'pkcs11js';
import { HsmConfigurationError, KeyStoreError, SignerUnavailableError } from './hsm.errors';
import type { HsmLogger } from './hsm.logger';
import type { KeyAlgorithm, KeyStoreHash } from './key-store.port';
import { establish, holdKey, KEY_STORE_POLICY, type Connection, type HeldKey } from './pkcs11-connection';
import { destroyKeyPairs, findDes3SecretKeys, findPrivateKeys, generateDes3SecretKey, generateKeyPair, nameOf, type KeyName } from './pkcs11-keys';
import { jwkThumbprint, rsaModulusBits, signingJwkOf, type PublicKeyMembers } from './pkcs11-public-key';
import { signCall } from './pkcs11-signing';
import {
  claimModule,
  describeError,
  findTokenSlot,
  findTokenSlotAtStart,
  initialize,
  initializeAgain,
  pkcs11ErrorCode,
  quietly,
  readAttributes,
  releaseModule,
  type Handle,
} from './pkcs11-token';
import type { JwsAlgorithm, SigningJwk } from './signer.port';
import { Des3KeyCountError, SignThread } from './sign-thread';
import { TokenProbe } from './token-probe';

/** Where the keys live (DECISIONS 12). */
export interface HsmOptions {
  /** The HSM vendor's PKCS#11 module, e.g. /usr/lib/softhsm/libsofthsm2.so. */
  modulePath: string;
  /** Tokens are selected by label: slot ids are not stable (pkcs11.md rule 6). */
  tokenLabel: string;
  /** The user PIN. Never logged. */
  pin: string;
  /** Label of the token signer's key pair (JWT_KEY); it must exist (development provisioning makes it). */
  keyLabel?: string;
  /** Sessions opened at boot, one sign in flight on each (pkcs11.md rule 2); default 4. */
  sessionPoolSize?: number;
  /**
   * When no sign has succeeded for this long, sign a probe input, so that an HSM lost while the
   * service is idle turns readiness red (and starts the reconnect) before a client's request meets
   * it. 0 turns it off; default 0 here, the service sets HSM_HEALTH_CHECK_INTERVAL_S.
   */
  healthCheckIntervalMs?: number;
  /** While reconnecting, how often to look for the token without logging in; default 1000. */
  reconnectProbeIntervalMs?: number;
  /** Told of every reconnect attempt and how it ended (the service counts them in hsm_reconnect_attempts_total). */
  onReconnectAttempt?: (outcome: HsmReconnectOutcome) => void;
}

/**
 * How a reconnect attempt ended: the token was not listed; it was, but a failed login's backoff
 * had not run out; the login failed; the PIN was rejected (no more attempts); connected again.
 */
export type HsmReconnectOutcome = 'token-absent' | 'login-backoff' | 'login-failed' | 'pin-rejected' | 'reconnected';

/** A key pair the HSM holds for the key store, as its adapter needs to describe it. */
export interface HeldKeyPair {
  readonly label: string;
  /** CKA_ID, hex: tells a key from a later one under the same label. */
  readonly id: string;
  readonly algorithm: KeyAlgorithm;
  readonly publicKeySpki: Buffer;
}

const DEFAULT_KEY_LABEL = 'JWT_KEY';
const DEFAULT_SESSION_POOL_SIZE = 4;
const DEFAULT_RECONNECT_PROBE_INTERVAL_MS = 1_000;
const RECONNECT_FIRST_DELAY_MS = 250;
const RECONNECT_MAX_DELAY_MS = 30_000;
/**
 * Another process may destroy a key store key; a sign checks its token object again when this
 * long has passed, so a session copy outlives its key by at most about this long. The sign thread
 * looks a DES3 key's label up again as often (a second key under it is refused within this long).
 */
const KEY_RECHECK_MS = 1_000;
const HEALTH_CHECK_INPUT = Buffer.from('Pkcs11Hsm health check');
/** Key store labels: printable ASCII, so that messages and logs show them as they are. */
const KEY_LABEL_PATTERN = /^[\x21-\x7e]([\x20-\x7e]{0,126}[\x21-\x7e])?$/;
/** The key store's key is gone from the token: look it up again, do not reconnect. */
const KEY_GONE_CODES = new Set([pkcs11js.CKR_OBJECT_HANDLE_INVALID, pkcs11js.CKR_KEY_HANDLE_INVALID]);

type Settings = Required<Omit<HsmOptions, 'onReconnectAttempt'>> & Pick<HsmOptions, 'onReconnectAttempt'>;

/** `pin-rejected`: a reconnect met a wrong PIN and stopped for good (pkcs11.md rule 5). */
type State = 'ready' | 'reconnecting' | 'pin-rejected' | 'closed';

/**
 * The process's one owner of the PKCS#11 module (rule 4): connects at boot, logs in once, holds the
 * token signer's key (JWT_KEY) and the key store's keys (CA_KEY/{org}) with session copies, signs
 * with them over a pool of sessions on a sign thread (SignThread), and reconnects by itself after a module error: it looks for
 * the token every `reconnectProbeIntervalMs` without logging in, on a worker thread (TokenProbe),
 * and logs in as soon as the token is back; failed logins back off (500 ms doubling to 30 s) and a
 * rejected PIN stops for good.
 * "Rule N" cites the team's measured pkcs11js notes (pkcs11.md).
 */
export class Pkcs11Hsm {
  /** The token signer's algorithm and public key, fixed for the life of the process. */
  readonly jwsKey: { readonly algorithm: JwsAlgorithm; readonly publicJwk: SigningJwk };
  private state: State = 'ready';
  /** Every accepted operation until it settles: what a reconnect and close() wait for (rules 2 and 4). */
  private readonly running = new Set<Promise<unknown>>();
  private readonly stopReconnecting = new AbortController();
  private reconnection: Promise<void> = Promise.resolve();
  private nextAttemptAt = 0;
  private closing?: Promise<void>;
  /** When the last sign succeeded: signs in use prove the HSM alive, so health checks skip then. */
  private lastSignedAt = Date.now();
  private healthChecks?: NodeJS.Timeout;
  /** Where every sign's module calls run: never on the event loop (issue 34). */
  private readonly signThread: SignThread;

  private constructor(
    private readonly pkcs11: pkcs11js.PKCS11,
    private readonly settings: Settings,
    private readonly logger: HsmLogger | undefined,
    private connection: Connection,
  ) {
    this.jwsKey = jwsKeyOf(connection.jwsKey.members);
    this.signThread = new SignThread(settings.modulePath, KEY_GONE_CODES, KEY_RECHECK_MS);
  }

  get modulePath(): string {
    return this.settings.modulePath;
  }

  get tokenLabel(): string {
    return this.settings.tokenLabel;
  }

  /** The label of the token signer's key (JWT_KEY_LABEL). */
  get jwsKeyLabel(): string {
    return this.settings.keyLabel;
  }

  /**
   * Loads the module, logs in once and finds the token signer's key. Throws HsmConfigurationError
   * naming what is missing or wrong; a rejected PIN is never retried (rule 5).
   */
  static async connect(options: HsmOptions, logger?: HsmLogger): Promise<Pkcs11Hsm> {
    const settings = withDefaults(options);
    if (!existsSync(settings.modulePath)) {
      throw new HsmConfigurationError('HSM_MODULE_NOT_FOUND', `PKCS#11 module file not found at path ${settings.modulePath}`);
    }
    claimModule('a Pkcs11Hsm');
    const pkcs11 = new pkcs11js.PKCS11();
    let initialized = false;
    try {
      pkcs11.load(settings.modulePath);
      initialize(pkcs11, settings.modulePath);
      initialized = true;
      const connection = establish(pkcs11, settings, logger, findTokenSlotAtStart(pkcs11, settings), new Map());
      const hsm = new Pkcs11Hsm(pkcs11, settings, logger, connection);
      hsm.signThread.start();
      hsm.startHealthChecks();
      logger?.info(
        {
          tokenLabel: settings.tokenLabel,
          keyLabel: settings.keyLabel,
          algorithm: hsm.jwsKey.algorithm,
          kid: hsm.jwsKey.publicJwk.kid,
          sessions: settings.sessionPoolSize,
          signsWithSessionCopy: connection.jwsKey.signsWithSessionCopy,
        },
        'HSM signer connected',
      );
      return hsm;
    } catch (error) {
      // Nothing is in flight during start-up, so finalizing here is safe (rule 4) and lets a
      // corrected configuration connect again in the same process.
      if (initialized) {
        quietly(logger, 'C_Finalize', () => pkcs11.C_Finalize());
      }
      quietly(logger, 'close', () => pkcs11.close());
      releaseModule();
      throw error instanceof HsmConfigurationError
        ? error
        : new HsmConfigurationError('HSM_MODULE_ERROR', `PKCS#11 module ${settings.modulePath} failed at start-up: ${describeError(error)}`, { cause: error });
    }
  }

  isReady(): boolean {
    return this.state === 'ready';
  }

  /** Signs a JWS signing input with the token signer's key: ES256 raw r||s, or RS256. */
  async signJws(signingInput: Buffer): Promise<Buffer> {
    const signature = await this.operate((connection) => this.signOnPool(connection, connection.jwsKey, 'SHA-256', signingInput));
    // A probe's own success does not count, or an idle signer would probe only every other tick.
    if (signingInput !== HEALTH_CHECK_INPUT) this.lastSignedAt = Date.now();
    return signature;
  }

  /**
   * Generates a key pair in the token under `label` (see `generateKeyPair` in pkcs11-keys) and
   * holds it. A label already in use, in this process or another, is KEY_LABEL_TAKEN; two processes
   * generating under one label at once never leave two keys: one that sees another key beside its
   * own destroys its own and reports the label taken.
   */
  async generateKeyPair(label: string, algorithm: KeyAlgorithm): Promise<HeldKeyPair> {
    this.checkLabel(label);
    return this.operate(async (connection) => {
      const session = connection.objectSession;
      if (findPrivateKeys(this.pkcs11, session, label).length > 0) {
        throw new KeyStoreError('KEY_LABEL_TAKEN', `a key pair labelled "${label}" already exists on token "${this.settings.tokenLabel}"`);
      }
      const generated = generateKeyPair(this.pkcs11, session, label, algorithm);
      if (findPrivateKeys(this.pkcs11, session, label).length > 1) {
        this.pkcs11.C_DestroyObject(session, generated.privateKey);
        this.pkcs11.C_DestroyObject(session, generated.publicKey);
        throw new KeyStoreError(
          'KEY_LABEL_TAKEN',
          `another process generated a key pair labelled "${label}" on token "${this.settings.tokenLabel}" at the same time`,
        );
      }
      const key = this.hold(connection, label, generated.privateKey);
      this.logger?.info({ tokenLabel: this.settings.tokenLabel, keyLabel: label, algorithm, keyId: key.id.toString('hex') }, 'generated a key pair in the HSM');
      return describe(key);
    });
  }

  /** The key pair under `label`, held from then on; undefined when the token has none. */
  async findKeyPair(label: string): Promise<HeldKeyPair | undefined> {
    this.checkLabel(label);
    return this.operate(async (connection) => {
      const key = this.keyStoreKey(connection, label);
      return key === undefined ? undefined : describe(key);
    });
  }

  /** Destroys every key pair under `label` in the token and forgets its session copy. */
  async destroyKeyPair(label: string): Promise<void> {
    this.checkLabel(label);
    return this.operate(async (connection) => {
      this.forget(connection, label);
      const destroyed = destroyKeyPairs(this.pkcs11, connection.objectSession, label);
      if (destroyed > 0) this.logger?.info({ tokenLabel: this.settings.tokenLabel, keyLabel: label }, 'destroyed a key pair in the HSM');
    });
  }

  /**
   * Signs `data` with the key store key under `label`: raw r||s for EC keys, PKCS#1 v1.5 for RSA.
   * `keyId` (hex CKA_ID), when given, must still be the key under the label.
   */
  async sign(label: string, data: Buffer, hash: KeyStoreHash, keyId?: string): Promise<{ signature: Buffer; kty: 'EC' | 'RSA' }> {
    this.checkLabel(label);
    return this.operate(async (connection) => {
      // The held key's token object is checked again by the sign itself, on the sign thread.
      let key = this.signingKeyFor(connection, label, keyId, false);
      let signature: Buffer;
      try {
        signature = await this.signOnPool(connection, key, hash, data, true);
      } catch (error) {
        // Destroyed by another process since the last check: look the label up again, once.
        if (!KEY_GONE_CODES.has(pkcs11ErrorCode(error) ?? -1) || connection !== this.connection) throw error;
        this.forget(connection, label);
        key = this.signingKeyFor(connection, label, keyId);
        signature = await this.signOnPool(connection, key, hash, data);
      }
      this.lastSignedAt = Date.now();
      return { signature, kty: key.members.kty };
    });
  }

  /**
   * Encrypts `data` (a multiple of 8 bytes) with CKM_DES3_ECB under the token's DES3 secret key
   * labelled `label`, generating that key at first use (sensitive, not extractable: it never leaves
   * the HSM). The lookup and the encryption run on the sign thread, on a session of the pool, never
   * on the event loop: every smart card's issuance encrypts (issue 34). The thread holds the key it
   * found and looks the label up again after KEY_RECHECK_MS, so a second key under the label is
   * refused from then on. Only the generation, once in a token's life, runs here on the object
   * session, like other key management. Two processes generating at once: one that sees two keys
   * destroys its own and uses the other, so two never stay.
   */
  async encryptDes3(label: string, data: Buffer): Promise<Buffer> {
    this.checkLabel(label);
    if (data.length === 0 || data.length % 8 !== 0) throw new KeyStoreError('KEY_UNUSABLE', `DES3 encrypts whole 8-byte blocks; got ${data.length} bytes`);
    return this.operate(async (connection) => {
      try {
        return await this.encryptOnPool(connection, label, data);
      } catch (error) {
        if (!(error instanceof Des3KeyCountError) || error.count !== 0) throw this.des3KeyCountRefusal(label, error);
        this.generateDes3Key(connection, label);
        return await this.encryptOnPool(connection, label, data).catch((retryError: unknown) => {
          throw this.des3KeyCountRefusal(label, retryError);
        });
      }
    });
  }

  private async encryptOnPool(connection: Connection, label: string, data: Buffer): Promise<Buffer> {
    const session = await connection.pool.acquire();
    try {
      return await this.signThread.encryptDes3({ session, label, input: data });
    } finally {
      connection.pool.release(session);
    }
  }

  /** KEY_UNUSABLE for a token that holds no DES3 key under `label` (after generating one) or several; any other error as it is. */
  private des3KeyCountRefusal(label: string, error: unknown): unknown {
    if (!(error instanceof Des3KeyCountError)) return error;
    return new KeyStoreError(
      'KEY_UNUSABLE',
      `${error.count} DES3 secret keys are labelled "${label}" on token "${this.settings.tokenLabel}"; keep exactly one`,
    );
  }

  /** Generates the DES3 key under `label` on the object session; another process's key generated meanwhile wins (this one's is destroyed). */
  private generateDes3Key(connection: Connection, label: string): void {
    const session = connection.objectSession;
    const generated = generateDes3SecretKey(this.pkcs11, session, label);
    if (findDes3SecretKeys(this.pkcs11, session, label).length > 1) {
      this.pkcs11.C_DestroyObject(session, generated);
    } else {
      this.logger?.info({ tokenLabel: this.settings.tokenLabel, keyLabel: label, algorithm: 'DES3' }, 'generated a secret key in the HSM');
    }
  }

  /**
   * Stops accepting operations, lets the accepted ones finish, then C_Logout, C_CloseAllSessions
   * and C_Finalize, in that order (rule 4). Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  /**
   * Runs an operation on the current connection, counted in `running`. A KeyStoreError is the
   * caller's; any other failure is the module's: readiness red, background reconnect, and
   * SignerUnavailableError (503 + Retry-After) to the caller.
   */
  private async operate<T>(work: (connection: Connection) => Promise<T>): Promise<T> {
    if (this.state !== 'ready') {
      throw this.unavailable();
    }
    const connection = this.connection;
    const operation = work(connection);
    this.running.add(operation);
    try {
      return await operation;
    } catch (error) {
      throw error instanceof KeyStoreError ? error : this.onModuleFailure(connection, error);
    } finally {
      this.running.delete(operation);
    }
  }

  /**
   * Signs on a session of the pool, on the sign thread (the module may block while its HSM is
   * away). `recheck`: a key store key whose token object was last seen over KEY_RECHECK_MS ago is
   * looked up on the same session first (KEY_GONE_CODES when another process destroyed it).
   */
  private async signOnPool(connection: Connection, key: HeldKey, hash: KeyStoreHash, data: Buffer, recheck = false): Promise<Buffer> {
    const session = await connection.pool.acquire();
    key.signing += 1;
    try {
      const checkedAt = Date.now();
      const checkObject = recheck && checkedAt - key.checkedAt >= KEY_RECHECK_MS ? key.tokenKey : undefined;
      const signature = await this.signThread.sign(signCall(session, key, hash, data, checkObject));
      if (checkObject !== undefined) key.checkedAt = checkedAt;
      return signature;
    } finally {
      key.signing -= 1;
      connection.pool.release(session);
      if (key.forgotten && key.signing === 0) this.destroySessionCopy(connection, key);
    }
  }

  /**
   * The held key store key under `label`, found when not held yet; KEY_NOT_FOUND when the token has
   * none. `recheck` false: a held key is taken as it is (its sign checks the token object).
   */
  private signingKeyFor(connection: Connection, label: string, keyId: string | undefined, recheck = true): HeldKey {
    const key = this.keyStoreKey(connection, label, recheck);
    if (key === undefined || (keyId !== undefined && key.id.toString('hex') !== keyId)) {
      throw new KeyStoreError(
        'KEY_NOT_FOUND',
        key === undefined
          ? `no key pair labelled "${label}" on token "${this.settings.tokenLabel}"`
          : `the key pair labelled "${label}" on token "${this.settings.tokenLabel}" was replaced (CKA_ID ${keyId} is now ${key.id.toString('hex')})`,
      );
    }
    return key;
  }

  /**
   * The held key under `label`, checked against the token at most every KEY_RECHECK_MS (another
   * process may have destroyed it), or found in the token and held. Synchronous on the object
   * session (rule 2). `recheck` false: a held key is returned unchecked.
   */
  private keyStoreKey(connection: Connection, label: string, recheck = true): HeldKey | undefined {
    const held = connection.keys.get(label);
    const now = Date.now();
    if (held !== undefined) {
      if (!recheck || now - held.checkedAt < KEY_RECHECK_MS) return held;
      try {
        readAttributes(this.pkcs11, connection.objectSession, held.tokenKey, [pkcs11js.CKA_ID]);
        held.checkedAt = now;
        return held;
      } catch (error) {
        if (!KEY_GONE_CODES.has(pkcs11ErrorCode(error) ?? -1)) throw error;
        this.forget(connection, label);
      }
    }
    const [privateKey, ...others] = findPrivateKeys(this.pkcs11, connection.objectSession, label);
    if (privateKey === undefined) return undefined;
    if (others.length > 0) {
      throw new KeyStoreError(
        'KEY_UNUSABLE',
        `${others.length + 1} private keys are labelled "${label}" on token "${this.settings.tokenLabel}"; keep exactly one`,
      );
    }
    return this.hold(connection, label, privateKey);
  }

  /** Reads the key pair (KEY_UNUSABLE when it is not one the key store signs with), copies it into the object session and checks the pair. */
  private hold(connection: Connection, label: string, privateKey: Handle): HeldKey {
    let key: HeldKey;
    try {
      key = holdKey(this.pkcs11, connection.objectSession, this.keyName(label), privateKey, KEY_STORE_POLICY, this.logger);
    } catch (error) {
      if (error instanceof HsmConfigurationError) throw new KeyStoreError('KEY_UNUSABLE', error.message);
      throw error;
    }
    if (key.members.kty === 'RSA' && rsaModulusBits(key.members) !== 3072) {
      throw new KeyStoreError(
        'KEY_UNUSABLE',
        `${nameOf(this.keyName(label))} is a ${rsaModulusBits(key.members)}-bit RSA key: key type not supported (${KEY_STORE_POLICY.description})`,
      );
    }
    connection.keys.set(label, key);
    return key;
  }

  /** Drops the held key under `label`, and its session copy once no sign uses it. */
  private forget(connection: Connection, label: string): void {
    const held = connection.keys.get(label);
    if (held === undefined) return;
    connection.keys.delete(label);
    held.forgotten = true;
    if (held.signing === 0) this.destroySessionCopy(connection, held);
  }

  private destroySessionCopy(connection: Connection, key: HeldKey): void {
    // A replaced connection's session copies went with its sessions.
    if (key.signsWithSessionCopy && connection === this.connection) {
      quietly(this.logger, 'C_DestroyObject', () => this.pkcs11.C_DestroyObject(connection.objectSession, key.handle));
    }
  }

  private checkLabel(label: string): void {
    if (typeof label !== 'string' || !KEY_LABEL_PATTERN.test(label)) {
      throw new KeyStoreError(
        'KEY_LABEL_INVALID',
        `key label ${JSON.stringify(label)} must be 1 to 128 printable ASCII characters without leading or trailing spaces`,
      );
    }
    if (label === this.settings.keyLabel) {
      throw new KeyStoreError('KEY_LABEL_INVALID', `key label "${label}" is the token signer's key; the key store never touches it`);
    }
  }

  private keyName(label: string): KeyName {
    return { label, tokenLabel: this.settings.tokenLabel };
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
        this.signJws(HEALTH_CHECK_INPUT).catch(() => undefined);
      }
    }, intervalMs);
    this.healthChecks.unref();
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
    return error instanceof SignerUnavailableError ? error : this.unavailable(error);
  }

  /**
   * The first attempt comes RECONNECT_FIRST_DELAY_MS after the failure, then one every probe
   * interval: each looks for the token without logging in, off the event loop (TokenProbe: a
   * network HSM's client may block while its HSM is away), and logs in as soon as it is there: at
   * once when it has just come back, otherwise no sooner than the login backoff allows (500 ms
   * doubling to 30 s after failed logins). A rejected PIN stops for good (rule 5). Requests never
   * call the module meanwhile: `operate` refuses them, so the module is tried at this cadence only.
   */
  private async reconnect(): Promise<void> {
    // Rules 2 and 4: the old sessions are closed only once no operation is using them.
    await Promise.allSettled([...this.running]);
    const probe = new TokenProbe(this.settings);
    try {
      await this.reconnectWith(probe);
    } finally {
      await probe.stop();
    }
  }

  private async reconnectWith(probe: TokenProbe): Promise<void> {
    const probeIntervalMs = this.settings.reconnectProbeIntervalMs;
    let loginDelayMs = RECONNECT_FIRST_DELAY_MS;
    let nextLoginAt = Date.now() + RECONNECT_FIRST_DELAY_MS;
    let wakeAt = nextLoginAt;
    let closeSessionsOf: Handle | undefined = this.connection.slot;
    let tokenWasAway = false;
    for (let attempt = 1; ; attempt += 1) {
      // What Retry-After tells callers: the next probe while the token is away, else the next login.
      this.nextAttemptAt = tokenWasAway ? wakeAt : Math.max(wakeAt, nextLoginAt);
      try {
        await sleep(Math.max(0, wakeAt - Date.now()), undefined, { signal: this.stopReconnecting.signal, ref: false });
      } catch {
        return; // close() stopped the reconnect.
      }
      const absence = await probe.find(closeSessionsOf);
      closeSessionsOf = undefined;
      if (this.state !== 'reconnecting') {
        return; // close() came in while the probe ran; shutdown() takes over this.connection.
      }
      wakeAt = Date.now() + probeIntervalMs;
      if (absence !== undefined) {
        if (!tokenWasAway) {
          this.logger?.warn({ tokenLabel: this.settings.tokenLabel, probeIntervalMs, error: absence }, 'HSM token not reachable; probing until it is back');
        }
        tokenWasAway = true;
        this.settings.onReconnectAttempt?.('token-absent');
        continue;
      }
      if (!tokenWasAway && Date.now() < nextLoginAt) {
        this.settings.onReconnectAttempt?.('login-backoff');
        wakeAt = Math.min(wakeAt, nextLoginAt);
        continue;
      }
      if (tokenWasAway) this.logger?.info({ tokenLabel: this.settings.tokenLabel }, 'HSM token reachable again; logging in');
      tokenWasAway = false;
      let failure: unknown;
      try {
        this.reestablish();
      } catch (error) {
        failure = error;
      }
      if (this.state !== 'reconnecting') {
        return; // close() came in while this attempt ran; shutdown() takes over this.connection.
      }
      if (failure === undefined) {
        this.state = 'ready';
        this.settings.onReconnectAttempt?.('reconnected');
        this.logger?.info(
          { tokenLabel: this.settings.tokenLabel, kid: this.jwsKey.publicJwk.kid, attempt, keys: [...this.connection.keys.keys()] },
          'HSM signer reconnected',
        );
        return;
      }
      if (failure instanceof HsmConfigurationError && failure.code === 'HSM_PIN_REJECTED') {
        // Rule 5: a real HSM locks the user after a few wrong PINs, so stop here for good.
        this.state = 'pin-rejected';
        this.settings.onReconnectAttempt?.('pin-rejected');
        this.logger?.error({ tokenLabel: this.settings.tokenLabel, error: failure.message }, 'HSM reconnect stopped: PIN rejected; fix the PIN and restart');
        return;
      }
      this.settings.onReconnectAttempt?.('login-failed');
      loginDelayMs = Math.min(loginDelayMs * 2, RECONNECT_MAX_DELAY_MS);
      nextLoginAt = Date.now() + loginDelayMs;
      wakeAt = Math.min(wakeAt, nextLoginAt);
      this.logger?.warn({ tokenLabel: this.settings.tokenLabel, attempt, retryInMs: loginDelayMs, error: describeError(failure) }, 'HSM reconnect failed');
    }
  }

  /** Closes sessions, finds the token again by label, reopens the pool, logs in, and holds every key again. */
  private reestablish(): void {
    quietly(this.logger, 'C_CloseAllSessions', () => this.pkcs11.C_CloseAllSessions(this.connection.slot));
    initializeAgain(this.pkcs11);
    const connection = establish(this.pkcs11, this.settings, this.logger, findTokenSlot(this.pkcs11, this.settings), this.connection.keys);
    if (jwkThumbprint(connection.jwsKey.members) !== this.jwsKey.publicJwk.kid) {
      quietly(this.logger, 'C_CloseAllSessions', () => this.pkcs11.C_CloseAllSessions(connection.slot));
      throw new HsmConfigurationError(
        'HSM_PUBLIC_KEY_MISMATCH',
        `${nameOf({ label: this.settings.keyLabel, tokenLabel: this.settings.tokenLabel })} now has kid ${jwkThumbprint(connection.jwsKey.members)}, but this process publishes kid ${this.jwsKey.publicJwk.kid}; restart to publish the new key`,
      );
    }
    this.connection = connection;
    this.signThread.resume();
  }

  private async shutdown(): Promise<void> {
    this.state = 'closed';
    clearInterval(this.healthChecks);
    this.stopReconnecting.abort();
    await this.reconnection;
    // Rule 4: C_Finalize with signs in flight segfaults, so drain the accepted ones first.
    await Promise.allSettled([...this.running]);
    await this.signThread.stop();
    const { slot, objectSession } = this.connection;
    quietly(this.logger, 'C_Logout', () => this.pkcs11.C_Logout(objectSession));
    quietly(this.logger, 'C_CloseAllSessions', () => this.pkcs11.C_CloseAllSessions(slot));
    quietly(this.logger, 'C_Finalize', () => this.pkcs11.C_Finalize());
    quietly(this.logger, 'close', () => this.pkcs11.close());
    releaseModule();
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
  const reconnectProbeIntervalMs = options.reconnectProbeIntervalMs ?? DEFAULT_RECONNECT_PROBE_INTERVAL_MS;
  if (!Number.isInteger(reconnectProbeIntervalMs) || reconnectProbeIntervalMs < 1) {
    throw new HsmConfigurationError(
      'HSM_OPTIONS_INVALID',
      `reconnectProbeIntervalMs must be a positive whole number of milliseconds, got ${reconnectProbeIntervalMs}`,
    );
  }
  return {
    modulePath: options.modulePath,
    tokenLabel: options.tokenLabel,
    pin: options.pin,
    keyLabel: options.keyLabel ?? DEFAULT_KEY_LABEL,
    sessionPoolSize,
    healthCheckIntervalMs,
    reconnectProbeIntervalMs,
    onReconnectAttempt: options.onReconnectAttempt,
  };
}

function describe(key: HeldKey): HeldKeyPair {
  const { members } = key;
  return {
    label: key.label,
    id: key.id.toString('hex'),
    algorithm: members.kty === 'RSA' ? 'RSA-3072' : members.crv === 'P-256' ? 'EC-P256' : 'EC-P384',
    publicKeySpki: key.spki,
  };
}

function jwsKeyOf(members: PublicKeyMembers): { algorithm: JwsAlgorithm; publicJwk: SigningJwk } {
  const publicJwk = signingJwkOf(members);
  // Frozen: one object is shared by every JWKS response for the life of the process.
  return { algorithm: publicJwk.alg, publicJwk: Object.freeze(publicJwk) };
}
