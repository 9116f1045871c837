import { webcrypto } from 'node:crypto';
import type { KeyAlgorithm, KeyStoreHash } from './key-store.port';

type CryptoKey = webcrypto.CryptoKey;

/** Which HSM key a WebCrypto-shaped private key stands for: its label and CKA_ID (hex). */
export interface HsmKeyBinding {
  readonly label: string;
  readonly id: string;
}

/** Signs in the HSM: raw r||s for EC keys (WebCrypto's ECDSA format), PKCS#1 v1.5 for RSA. */
export type HsmSignFunction = (binding: HsmKeyBinding, data: Buffer, hash: KeyStoreHash) => Promise<Buffer>;

const bindings = new WeakMap<object, HsmKeyBinding>();

/** WebCrypto's algorithm of each key store algorithm; RSA keys sign with SHA-256, as WebCrypto binds the hash to an RSA key. */
export function webCryptoAlgorithm(algorithm: KeyAlgorithm): webcrypto.EcKeyImportParams | webcrypto.RsaHashedImportParams {
  switch (algorithm) {
    case 'EC-P256':
      return { name: 'ECDSA', namedCurve: 'P-256' };
    case 'EC-P384':
      return { name: 'ECDSA', namedCurve: 'P-384' };
    case 'RSA-3072':
      return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  }
}

/**
 * A WebCrypto-shaped private key (type `private`, not extractable, usage `sign`) standing for an
 * HSM key: only the `Crypto` of `createHsmCrypto` signs with it. Its algorithm carries the curve or
 * the modulus length, which @peculiar/x509 reads to pick the signature algorithm and size.
 */
export function hsmPrivateKey(binding: HsmKeyBinding, publicKey: CryptoKey): CryptoKey {
  const { name, ...parameters } = publicKey.algorithm as webcrypto.KeyAlgorithm & Record<string, unknown>;
  const key = Object.freeze({
    type: 'private',
    extractable: false,
    algorithm: Object.freeze({ name, ...parameters }),
    usages: Object.freeze(['sign']),
    [Symbol.toStringTag]: 'CryptoKey',
  });
  bindings.set(key, Object.freeze({ ...binding }));
  return key as unknown as CryptoKey;
}

/**
 * Node's WebCrypto, except `subtle.sign` with a key from `hsmPrivateKey`, which signs in the HSM
 * and answers in WebCrypto's format (ECDSA: IEEE P1363 r||s; @peculiar/x509 turns it into the
 * DER ECDSA-Sig-Value itself). Node's own methods check their receiver, so each is bound to it.
 */
export function createHsmCrypto(sign: HsmSignFunction): webcrypto.Crypto {
  const nodeSubtle = webcrypto.subtle;
  const hsmSign = async (
    algorithm: webcrypto.AlgorithmIdentifier | webcrypto.EcdsaParams,
    key: CryptoKey,
    data: webcrypto.BufferSource,
  ): Promise<ArrayBuffer> => {
    const binding = bindings.get(key);
    if (binding === undefined) {
      return nodeSubtle.sign(algorithm, key, data);
    }
    const name = typeof algorithm === 'string' ? algorithm : algorithm.name;
    if (name.toUpperCase() !== key.algorithm.name.toUpperCase()) {
      throw new DOMException(`HSM key "${binding.label}" signs with ${key.algorithm.name}, not ${name}`, 'InvalidAccessError');
    }
    const hash = hashName(name.toUpperCase() === 'ECDSA' ? (algorithm as webcrypto.EcdsaParams).hash : (key.algorithm as webcrypto.RsaHashedKeyAlgorithm).hash);
    const signature = await sign(binding, toBuffer(data), hash);
    return signature.buffer.slice(signature.byteOffset, signature.byteOffset + signature.length) as ArrayBuffer;
  };
  const subtle = new Proxy(nodeSubtle, {
    get(target, property) {
      if (property === 'sign') return hsmSign;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return {
    subtle,
    getRandomValues: (array) => webcrypto.getRandomValues(array),
    randomUUID: () => webcrypto.randomUUID(),
    CryptoKey: webcrypto.CryptoKey,
  } as webcrypto.Crypto;
}

function hashName(hash: webcrypto.AlgorithmIdentifier | undefined): KeyStoreHash {
  const name = (typeof hash === 'string' ? hash : hash?.name)?.toUpperCase();
  if (name === 'SHA-256' || name === 'SHA-384') return name;
  throw new DOMException(`HSM keys sign with SHA-256 or SHA-384, not ${name ?? 'no hash'}`, 'NotSupportedError');
}

function toBuffer(data: webcrypto.BufferSource): Buffer {
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.from(data);
}
