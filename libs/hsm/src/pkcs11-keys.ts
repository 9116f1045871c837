import { randomBytes } from 'node:crypto';
import * as pkcs11js from 'pkcs11js';
import { HsmConfigurationError } from './hsm.errors';
import type { KeyAlgorithm } from './key-store.port';
import { EC_CURVES, ecPublicKeyMembers, rsaPublicKeyMembers, type EcCurve, type KeyPolicy, type PublicKeyMembers } from './pkcs11-public-key';
import { findObjects, readAttributes, readUlong, type Handle } from './pkcs11-token';

/** The token objects of one key pair: rule 6, found by label and then by the private key's CKA_ID and type. */
export interface KeyPairObjects {
  readonly privateKey: Handle;
  readonly publicKey: Handle;
  readonly id: Buffer;
  readonly members: PublicKeyMembers;
}

/** A key as messages name it: its label and its token's. */
export interface KeyName {
  readonly label: string;
  readonly tokenLabel: string;
}

export function nameOf(key: KeyName): string {
  return `key "${key.label}" on token "${key.tokenLabel}"`;
}

const RSA_PUBLIC_EXPONENT = Buffer.from([0x01, 0x00, 0x01]);
const GENERATED_ID_BYTES = 16;

/** Token objects only: session copies (CKA_TOKEN false) are never what a label names. */
const TOKEN_PRIVATE_KEY = [
  { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PRIVATE_KEY },
  { type: pkcs11js.CKA_TOKEN, value: true },
];

/** Every private key on the token under `label` (labels are not unique, rule 6). */
export function findPrivateKeys(pkcs11: pkcs11js.PKCS11, session: Handle, label: string): Handle[] {
  return findObjects(pkcs11, session, [...TOKEN_PRIVATE_KEY, { type: pkcs11js.CKA_LABEL, value: label }]);
}

/** Labels of the token's private keys, for messages that list what is there. */
export function privateKeyLabels(pkcs11: pkcs11js.PKCS11, session: Handle): string[] {
  return findObjects(pkcs11, session, TOKEN_PRIVATE_KEY).map((key) => readAttributes(pkcs11, session, key, [pkcs11js.CKA_LABEL])[0].toString('utf8'));
}

/**
 * The key pair under `label`: exactly one private key (HSM_KEY_AMBIGUOUS otherwise, naming the
 * CKA_IDs), and exactly one public key with its CKA_ID and key type, read under `policy`.
 * Undefined when no private key has the label.
 */
export function findKeyPair(pkcs11: pkcs11js.PKCS11, session: Handle, key: KeyName, policy: KeyPolicy): KeyPairObjects | undefined {
  const keys = findPrivateKeys(pkcs11, session, key.label);
  if (keys.length > 1) {
    const ids = keys.map((handle) => readAttributes(pkcs11, session, handle, [pkcs11js.CKA_ID])[0].toString('hex') || '(empty)');
    throw new HsmConfigurationError(
      'HSM_KEY_AMBIGUOUS',
      `more than one private key labelled "${key.label}" on token "${key.tokenLabel}" (CKA_IDs ${ids.join(', ')}); keep exactly one key under this label`,
    );
  }
  const [privateKey] = keys;
  return privateKey === undefined ? undefined : readKeyPair(pkcs11, session, privateKey, key, policy);
}

/** Reads the public key found by the private key's CKA_ID and type. */
export function readKeyPair(pkcs11: pkcs11js.PKCS11, session: Handle, privateKey: Handle, key: KeyName, policy: KeyPolicy): KeyPairObjects {
  const keyName = nameOf(key);
  const [keyTypeValue, id] = readAttributes(pkcs11, session, privateKey, [pkcs11js.CKA_KEY_TYPE, pkcs11js.CKA_ID]);
  const keyType = readUlong(keyTypeValue);
  if (keyType !== pkcs11js.CKK_EC && keyType !== pkcs11js.CKK_RSA) {
    throw new HsmConfigurationError('HSM_KEY_UNSUPPORTED', `${keyName} is a ${keyTypeName(keyType)} key: key type not supported (${policy.description})`);
  }
  const publicKeys = findObjects(pkcs11, session, [
    { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PUBLIC_KEY },
    { type: pkcs11js.CKA_TOKEN, value: true },
    { type: pkcs11js.CKA_KEY_TYPE, value: keyType },
    { type: pkcs11js.CKA_ID, value: id },
  ]);
  const idHex = id.toString('hex') || '(empty)';
  if (publicKeys.length !== 1) {
    throw publicKeys.length === 0
      ? new HsmConfigurationError('HSM_PUBLIC_KEY_NOT_FOUND', `no public key with the private key's CKA_ID ${idHex} on token "${key.tokenLabel}" (${keyName})`)
      : new HsmConfigurationError(
          'HSM_PUBLIC_KEY_AMBIGUOUS',
          `${publicKeys.length} public keys have the private key's CKA_ID ${idHex} on token "${key.tokenLabel}" (${keyName})`,
        );
  }
  const [publicKey] = publicKeys as [Handle];
  let members: PublicKeyMembers;
  if (keyType === pkcs11js.CKK_EC) {
    const [ecParams, ecPoint] = readAttributes(pkcs11, session, publicKey, [pkcs11js.CKA_EC_PARAMS, pkcs11js.CKA_EC_POINT]);
    members = ecPublicKeyMembers(ecParams, ecPoint, keyName, policy);
  } else {
    const [modulus, publicExponent] = readAttributes(pkcs11, session, publicKey, [pkcs11js.CKA_MODULUS, pkcs11js.CKA_PUBLIC_EXPONENT]);
    members = rsaPublicKeyMembers(modulus, publicExponent, keyName, policy);
  }
  return { privateKey, publicKey, id, members };
}

/**
 * Generates a key pair in the token, in a read/write session: the private key never leaves it
 * (CKA_SENSITIVE, not CKA_EXTRACTABLE), is a private object (CKA_PRIVATE) and has a random
 * 16-byte CKA_ID that ties it to its public key (rule 6). Rule 10: synchronous C_GenerateKeyPair,
 * since the asynchronous form leaks.
 */
export function generateKeyPair(
  pkcs11: pkcs11js.PKCS11,
  session: Handle,
  label: string,
  algorithm: KeyAlgorithm,
): { privateKey: Handle; publicKey: Handle; id: Buffer } {
  const id = randomBytes(GENERATED_ID_BYTES);
  const rsa = algorithm === 'RSA-3072';
  const common = [
    { type: pkcs11js.CKA_TOKEN, value: true },
    { type: pkcs11js.CKA_KEY_TYPE, value: rsa ? pkcs11js.CKK_RSA : pkcs11js.CKK_EC },
    { type: pkcs11js.CKA_LABEL, value: label },
    { type: pkcs11js.CKA_ID, value: id },
  ];
  const publicParameters = rsa
    ? [
        { type: pkcs11js.CKA_MODULUS_BITS, value: 3072 },
        { type: pkcs11js.CKA_PUBLIC_EXPONENT, value: RSA_PUBLIC_EXPONENT },
      ]
    : [{ type: pkcs11js.CKA_EC_PARAMS, value: EC_CURVES[curveOf(algorithm)].params }];
  const { privateKey, publicKey } = pkcs11.C_GenerateKeyPair(
    session,
    { mechanism: rsa ? pkcs11js.CKM_RSA_PKCS_KEY_PAIR_GEN : pkcs11js.CKM_EC_KEY_PAIR_GEN },
    [
      ...common,
      { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PUBLIC_KEY },
      { type: pkcs11js.CKA_PRIVATE, value: false },
      { type: pkcs11js.CKA_VERIFY, value: true },
      ...publicParameters,
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
  return { privateKey, publicKey, id };
}

/**
 * Destroys every private key labelled `label` and every public key with the label or with one of
 * those keys' CKA_IDs. Returns how many private keys went.
 */
export function destroyKeyPairs(pkcs11: pkcs11js.PKCS11, session: Handle, label: string): number {
  const privateKeys = findPrivateKeys(pkcs11, session, label);
  const publicKeys = new Set<string>();
  const publicHandles: Handle[] = [];
  const addPublic = (handles: Handle[]): void => {
    for (const handle of handles) {
      if (!publicKeys.has(handle.toString('hex'))) {
        publicKeys.add(handle.toString('hex'));
        publicHandles.push(handle);
      }
    }
  };
  const publicKey = { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PUBLIC_KEY };
  addPublic(findObjects(pkcs11, session, [publicKey, { type: pkcs11js.CKA_TOKEN, value: true }, { type: pkcs11js.CKA_LABEL, value: label }]));
  for (const privateKey of privateKeys) {
    const [id] = readAttributes(pkcs11, session, privateKey, [pkcs11js.CKA_ID]);
    if (id.length > 0) addPublic(findObjects(pkcs11, session, [publicKey, { type: pkcs11js.CKA_TOKEN, value: true }, { type: pkcs11js.CKA_ID, value: id }]));
  }
  for (const handle of [...privateKeys, ...publicHandles]) {
    pkcs11.C_DestroyObject(session, handle);
  }
  return privateKeys.length;
}

/**
 * Copies the private key into a session object of the same HSM (CKA_TOKEN false; the copy keeps
 * CKA_SENSITIVE and non-extractability, and never leaves the HSM). SoftHSM2's file store checks the
 * token's files on every use of a token object, which makes an ES256 sign with the token key ~55 us
 * against ~39 us with the session copy (`npm run bench:hsm`). The copy belongs to `session` and is
 * gone when that session closes. Throws when the HSM refuses (CKA_COPYABLE false, or no C_CopyObject).
 */
export function copyToSession(pkcs11: pkcs11js.PKCS11, session: Handle, privateKey: Handle, label: string): Handle {
  return pkcs11.C_CopyObject(session, privateKey, [
    { type: pkcs11js.CKA_TOKEN, value: false },
    // Not the key label, so that nothing searching by label could mistake the copy for the key.
    { type: pkcs11js.CKA_LABEL, value: `${label} (session copy)` },
  ]);
}

export function curveOf(algorithm: Exclude<KeyAlgorithm, 'RSA-3072'>): EcCurve {
  return algorithm === 'EC-P256' ? 'P-256' : 'P-384';
}

function keyTypeName(keyType: number): string {
  const entry = Object.entries(pkcs11js).find(([name, value]) => name.startsWith('CKK_') && value === keyType);
  return entry?.[0] ?? `CKA_KEY_TYPE 0x${keyType.toString(16)}`;
}

/**
 * What names a token DES3 secret key, with the label (rule 6: by class, key type and label; the caller
 * insists on one). The sign thread finds by it too (SignThread).
 */
export const TOKEN_DES3_SECRET_KEY: pkcs11js.Template = [
  { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
  { type: pkcs11js.CKA_KEY_TYPE, value: pkcs11js.CKK_DES3 },
  { type: pkcs11js.CKA_TOKEN, value: true },
];

/** Token DES3 secret keys under `label`. */
export function findDes3SecretKeys(pkcs11: pkcs11js.PKCS11, session: Handle, label: string): Handle[] {
  return findObjects(pkcs11, session, [...TOKEN_DES3_SECRET_KEY, { type: pkcs11js.CKA_LABEL, value: label }]);
}

/**
 * Generates a DES3 secret key in the token (synchronously, rule 10): sensitive, never extractable,
 * encrypt only (it diversifies; nothing is ever decrypted with it), a random CKA_ID.
 */
export function generateDes3SecretKey(pkcs11: pkcs11js.PKCS11, session: Handle, label: string): Handle {
  return pkcs11.C_GenerateKey(session, { mechanism: pkcs11js.CKM_DES3_KEY_GEN }, [
    { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
    { type: pkcs11js.CKA_KEY_TYPE, value: pkcs11js.CKK_DES3 },
    { type: pkcs11js.CKA_TOKEN, value: true },
    { type: pkcs11js.CKA_PRIVATE, value: true },
    { type: pkcs11js.CKA_SENSITIVE, value: true },
    { type: pkcs11js.CKA_EXTRACTABLE, value: false },
    { type: pkcs11js.CKA_ENCRYPT, value: true },
    { type: pkcs11js.CKA_DECRYPT, value: false },
    { type: pkcs11js.CKA_SIGN, value: false },
    { type: pkcs11js.CKA_VERIFY, value: false },
    { type: pkcs11js.CKA_WRAP, value: false },
    { type: pkcs11js.CKA_UNWRAP, value: false },
    { type: pkcs11js.CKA_DERIVE, value: false },
    { type: pkcs11js.CKA_LABEL, value: label },
    { type: pkcs11js.CKA_ID, value: randomBytes(GENERATED_ID_BYTES) },
  ]);
}
