import type { webcrypto } from 'node:crypto';

/** Key pairs the HSM generates and signs with for certification authorities (CREDENTIAL-MANAGEMENT.md, "PKI"). */
export type KeyAlgorithm = 'EC-P256' | 'EC-P384' | 'RSA-3072';

/** The digest a signature is computed over. */
export type KeyStoreHash = 'SHA-256' | 'SHA-384';

/**
 * `der`: the X.509/CRL/OCSP signature value (ECDSA-Sig-Value, RFC 5480 §2.2.3 / RFC 3279 §2.2.3;
 * RSA PKCS#1 v1.5, RFC 8017 §8.2). `raw`: r||s, each of the curve's size (JWS, RFC 7518 §3.4).
 * Both are the same for RSA.
 */
export type SignatureEncoding = 'der' | 'raw';

export interface SignOptions {
  hash: KeyStoreHash;
  encoding: SignatureEncoding;
}

/** One key pair held in the HSM under a label; the private key never leaves it. */
export interface HsmKeyPair {
  /** e.g. `CA_KEY/acme`. */
  readonly label: string;
  /** CKA_ID, hex: tells this key from a later one under the same label. */
  readonly id: string;
  readonly algorithm: KeyAlgorithm;
  /** SubjectPublicKeyInfo, DER, read from the HSM's public key object. */
  readonly publicKeySpki: Buffer;
  /**
   * WebCrypto-shaped handle (type `private`, extractable false, usages `sign`): `KeyStore.crypto`
   * signs with it in the HSM. Node's own WebCrypto does not accept it.
   */
  readonly privateKey: webcrypto.CryptoKey;
  /** The public key imported into Node's WebCrypto (verify, exportKey, thumbprints). */
  readonly publicKey: webcrypto.CryptoKey;
}

/**
 * The port certification-authority code signs through: key pairs generated and kept in the HSM,
 * found by label, signing messages in the encodings X.509 and JWS need. Every method throws
 * `SignerUnavailableError` (503 + Retry-After) while the HSM is unreachable; the adapter reconnects
 * by itself.
 */
export abstract class KeyStore {
  /**
   * Generates a key pair inside the token: CKA_TOKEN, CKA_PRIVATE and CKA_SENSITIVE true,
   * CKA_EXTRACTABLE false, a random CKA_ID. A label already in use throws `KeyStoreError` `KEY_LABEL_TAKEN`.
   */
  abstract generateKeyPair(label: string, algorithm: KeyAlgorithm): Promise<HsmKeyPair>;

  /** The key pair under `label`, or undefined when there is none. */
  abstract findKeyPair(label: string): Promise<HsmKeyPair | undefined>;

  /** Removes both halves of the key pair under `label` from the token; nothing under the label is not an error. */
  abstract destroyKeyPair(label: string): Promise<void>;

  /**
   * Signs `data` (the message, not a digest) in the HSM with the private key under `label`.
   * `der` is for callers that build ASN.1 themselves (OCSP responses, CRLs with the
   * `@peculiar/asn1-*` schemas); `raw` is the JWS form. No key under `label` throws `KeyStoreError` `KEY_NOT_FOUND`.
   */
  abstract sign(label: string, data: Buffer, options: SignOptions): Promise<Buffer>;

  /**
   * Encrypts `data` (whole 8-byte blocks) with 3DES-ECB under the token's DES3 secret key `label`,
   * generated in the token at first use (sensitive, never extractable). Used to diversify card
   * keys from a master key that never leaves the HSM (DECISIONS 17.1).
   */
  abstract encryptDes3(label: string, data: Buffer): Promise<Buffer>;

  /**
   * A WebCrypto `Crypto` for `@peculiar/x509` (pass it as the generator's `crypto` argument):
   * `subtle.sign` signs in the HSM when the key is an `HsmKeyPair.privateKey` and answers in
   * WebCrypto's format (ECDSA: IEEE P1363 r||s, which @peculiar/x509 converts to DER itself);
   * every other call is Node's WebCrypto.
   */
  abstract readonly crypto: webcrypto.Crypto;
}
