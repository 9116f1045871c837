/** JWS algorithms the HSM signs with (RFC 7518 §3.1): an EC P-256 key gives ES256, an RSA key RS256. */
export type JwsAlgorithm = 'ES256' | 'RS256';

/** The public half of the signing key as published in the JWKS document (RFC 7517 §4, RFC 7518 §6). */
export interface SigningJwk {
  kty: 'EC' | 'RSA';
  kid: string;
  alg: JwsAlgorithm;
  use: 'sig';
  crv?: string;
  x?: string;
  y?: string;
  n?: string;
  e?: string;
}

/** A token-signing key in the HSM other than JWT_KEY: its label and CKA_ID (hex), as `KeyStore` made it. */
export interface SigningKeyRef {
  readonly label: string;
  readonly id: string;
}

/**
 * The port token-issuing code depends on. Every token is signed in an HSM (DECISIONS.md §12);
 * the only adapter is `Pkcs11Signer`.
 */
export abstract class Signer {
  abstract readonly algorithm: JwsAlgorithm;
  /** RFC 7638 JWK thumbprint (SHA-256, base64url) of the public key. */
  abstract readonly kid: string;
  /** Public key only, for the JWKS document. */
  abstract readonly publicJwk: SigningJwk;
  /**
   * Signs a JWS signing input (RFC 7515 §5.1 step 5) and returns the JWS signature bytes
   * (ES256: raw r||s, 64 bytes; RS256: PKCS#1 v1.5). Without `key`, or with JWT_KEY's label, with
   * JWT_KEY; otherwise with the token-signing key `KeyStore.generateKeyPair` made under `key.label`
   * (EC-P256 or RSA-3072), which must still have CKA_ID `key.id` (else `KeyStoreError`
   * `KEY_NOT_FOUND`). Throws SignerUnavailableError while the HSM is unreachable.
   */
  abstract sign(signingInput: Buffer, key?: SigningKeyRef): Promise<Buffer>;
  /** The label of JWT_KEY, the key the first start signs with (JWT_KEY_LABEL). */
  abstract readonly keyLabel: string;
  /** False while the HSM is unreachable: readiness turns red and the token service answers 503. */
  abstract isReady(): boolean;
}
