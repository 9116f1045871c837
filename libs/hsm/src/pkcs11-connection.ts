import { createPublicKey, verify } from 'node:crypto';
import * as pkcs11js from 'pkcs11js';
import { HsmConfigurationError } from './hsm.errors';
import type { HsmLogger } from './hsm.logger';
import { copyToSession, findKeyPair, nameOf, privateKeyLabels, readKeyPair, type KeyName } from './pkcs11-keys';
import { JWS_KEY_POLICY, subjectPublicKeyInfo, type KeyPolicy } from './pkcs11-public-key';
import { signOnSessionSync, type SigningKey } from './pkcs11-signing';
import { CKR_ACTION_PROHIBITED, describeError, login, pkcs11ErrorCode, quietly, quoteList, type Handle, type TokenSettings } from './pkcs11-token';
import { SessionPool } from './session-pool';

// One generation of a Pkcs11Hsm's sessions and held keys: what a connect opens and a reconnect
// replaces as a whole.

export interface ConnectionSettings extends TokenSettings {
  /** The token signer's key label. */
  keyLabel: string;
  sessionPoolSize: number;
}

/** CA keys: EC P-256 and P-384, RSA 3072 (CREDENTIAL-MANAGEMENT.md, "PKI"). */
export const KEY_STORE_POLICY: KeyPolicy = { curves: ['P-256', 'P-384'], minRsaBits: 3072, description: 'EC P-256, EC P-384 or RSA-3072 only' };

const KEY_PAIR_CHECK_INPUT = Buffer.from('Pkcs11Hsm key pair check');

/** A private key this process signs with, found by label (rule 6), its public key read from the HSM. */
export interface HeldKey extends SigningKey {
  readonly label: string;
  readonly id: Buffer;
  /** The token object; `handle` is its session copy when the HSM allows one. */
  readonly tokenKey: Handle;
  readonly signsWithSessionCopy: boolean;
  /** SubjectPublicKeyInfo, DER, of the public key read from the HSM. */
  readonly spki: Buffer;
  /** When the token object was last seen (key store keys; see KEY_RECHECK_MS). */
  checkedAt: number;
  /** Signs in flight with `handle`: a forgotten key's session copy is destroyed only once none is. */
  signing: number;
  forgotten: boolean;
}

/** One generation of sessions; a reconnect replaces it as a whole. */
export interface Connection {
  readonly slot: Handle;
  /**
   * Read/write, opened first and logged in: finds, copies, key generation and destruction, all
   * synchronous on this thread, never a sign in flight (rule 2). Session copies belong to it.
   */
  readonly objectSession: Handle;
  /** The sign sessions, lent one sign at a time (rule 2). */
  readonly pool: SessionPool;
  readonly jwsKey: HeldKey;
  /** Key store keys by label, found or generated on demand. */
  readonly keys: Map<string, HeldKey>;
}

/**
 * Opens the object session and the sign pool, logs in, holds the token signer's
 * key and every key store key `previous` held (a key gone meanwhile is dropped with a warning).
 * Closes what it opened if any step fails.
 */
export function establish(
  pkcs11: pkcs11js.PKCS11,
  settings: ConnectionSettings,
  logger: HsmLogger | undefined,
  slot: Handle,
  previous: ReadonlyMap<string, HeldKey>,
): Connection {
  try {
    const objectSession = pkcs11.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
    login(pkcs11, objectSession, settings);
    // Rule 2: the whole pool is opened up front; signs only need read-only sessions.
    const sessions = Array.from({ length: settings.sessionPoolSize }, () => pkcs11.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION));
    const jwsKeyName = { label: settings.keyLabel, tokenLabel: settings.tokenLabel };
    const jwsPair = findKeyPair(pkcs11, objectSession, jwsKeyName, JWS_KEY_POLICY);
    if (jwsPair === undefined) {
      throw new HsmConfigurationError(
        'HSM_KEY_NOT_FOUND',
        `no private key labelled "${settings.keyLabel}" on token "${settings.tokenLabel}"; private keys present: ${quoteList(privateKeyLabels(pkcs11, objectSession))}`,
      );
    }
    const jwsKey = holdKey(pkcs11, objectSession, jwsKeyName, jwsPair.privateKey, JWS_KEY_POLICY, logger);
    const keys = new Map<string, HeldKey>();
    for (const label of previous.keys()) {
      const keyName = { label, tokenLabel: settings.tokenLabel };
      let restored: HeldKey | undefined;
      try {
        const pair = findKeyPair(pkcs11, objectSession, keyName, KEY_STORE_POLICY);
        restored = pair && holdKey(pkcs11, objectSession, keyName, pair.privateKey, KEY_STORE_POLICY, logger);
      } catch (error) {
        if (!(error instanceof HsmConfigurationError)) throw error;
        logger?.warn({ tokenLabel: settings.tokenLabel, keyLabel: label, error: error.message }, 'HSM key no longer usable after the reconnect; dropped');
      }
      if (restored === undefined) continue;
      keys.set(label, restored);
    }
    return { slot, objectSession, pool: new SessionPool(sessions), jwsKey, keys };
  } catch (error) {
    quietly(logger, 'C_CloseAllSessions', () => pkcs11.C_CloseAllSessions(slot));
    throw error;
  }
}

/**
 * Reads the key pair of `privateKey` under `policy`, makes a session copy on the object session
 * when the HSM allows one, and signs a probe with it that the public key read from the HSM must
 * verify: this catches a public key under the private key's CKA_ID that is not its pair, and a
 * module whose ECDSA output is not raw r||s.
 */
export function holdKey(
  pkcs11: pkcs11js.PKCS11,
  session: Handle,
  keyName: KeyName,
  privateKey: Handle,
  policy: KeyPolicy,
  logger: HsmLogger | undefined,
): HeldKey {
  const pair = readKeyPair(pkcs11, session, privateKey, keyName, policy);
  let copy: Handle | undefined;
  try {
    copy = copyToSession(pkcs11, session, privateKey, keyName.label);
  } catch (error) {
    const reason =
      pkcs11ErrorCode(error) === CKR_ACTION_PROHIBITED ? 'CKR_ACTION_PROHIBITED: the key is not copyable (CKA_COPYABLE false)' : describeError(error);
    logger?.info(
      { tokenLabel: keyName.tokenLabel, keyLabel: keyName.label, reason },
      'HSM refused a session copy of the signing key; signing with the token object',
    );
  }
  const key: HeldKey = {
    label: keyName.label,
    id: pair.id,
    members: pair.members,
    tokenKey: privateKey,
    handle: copy ?? privateKey,
    signsWithSessionCopy: copy !== undefined,
    spki: subjectPublicKeyInfo(pair.members),
    checkedAt: Date.now(),
    signing: 0,
    forgotten: false,
  };
  const signature = signOnSessionSync(pkcs11, session, key, 'SHA-256', KEY_PAIR_CHECK_INPUT);
  const publicKey = createPublicKey({ key: { ...pair.members }, format: 'jwk' });
  if (!verify('sha256', KEY_PAIR_CHECK_INPUT, { key: publicKey, dsaEncoding: 'ieee-p1363' }, signature)) {
    if (copy !== undefined) quietly(logger, 'C_DestroyObject', () => pkcs11.C_DestroyObject(session, copy));
    throw new HsmConfigurationError(
      'HSM_PUBLIC_KEY_MISMATCH',
      `the public key with the CKA_ID of ${nameOf(keyName)} does not verify that key's signatures; the JWKS or certificates would carry the wrong key`,
    );
  }
  return key;
}
