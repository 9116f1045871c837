/** What is wrong with the HSM set-up; each code has its own message naming the missing piece. */
export type HsmConfigurationErrorCode =
  | 'HSM_OPTIONS_INVALID'
  | 'HSM_SOFTHSM_MISSING'
  | 'HSM_SOFTHSM_FAILED'
  | 'HSM_SOFTHSM_LOCKED'
  | 'HSM_MODULE_NOT_FOUND'
  | 'HSM_MODULE_IN_USE'
  | 'HSM_MODULE_ERROR'
  | 'HSM_TOKEN_NOT_FOUND'
  | 'HSM_TOKEN_AMBIGUOUS'
  | 'HSM_PIN_REJECTED'
  | 'HSM_KEY_NOT_FOUND'
  | 'HSM_KEY_AMBIGUOUS'
  | 'HSM_KEY_UNSUPPORTED'
  | 'HSM_PUBLIC_KEY_NOT_FOUND'
  | 'HSM_PUBLIC_KEY_AMBIGUOUS'
  | 'HSM_PUBLIC_KEY_MISMATCH';

/**
 * Thrown at start-up: the process must refuse to start (DECISIONS.md §12). The message names
 * exactly what is missing or wrong and never contains a PIN.
 */
export class HsmConfigurationError extends Error {
  override readonly name = 'HsmConfigurationError';

  constructor(
    readonly code: HsmConfigurationErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * Thrown by `Signer.sign` while the HSM is unreachable; the token service answers 503 with
 * `Retry-After: retryAfterSeconds` (DECISIONS.md §12).
 */
export class SignerUnavailableError extends Error {
  override readonly name = 'SignerUnavailableError';
  readonly code = 'HSM_UNAVAILABLE';

  constructor(
    message: string,
    readonly retryAfterSeconds: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export type KeyStoreErrorCode =
  /** `generateKeyPair`: a key pair already has the label (in this token, by any process). */
  | 'KEY_LABEL_TAKEN'
  /** `sign`: no key pair has the label (or a given key was replaced under it). */
  | 'KEY_NOT_FOUND'
  /**
   * The token holds something under the label that the key store cannot sign with: two private
   * keys, no public key beside it, or a key type other than EC P-256, EC P-384 or RSA-3072.
   */
  | 'KEY_UNUSABLE'
  /** The label is empty, too long, or not printable ASCII. */
  | 'KEY_LABEL_INVALID';

/**
 * A `KeyStore` call that cannot be done as asked; the HSM itself is fine. The caller maps it to
 * its own domain error (a CA that already exists is a 409 of the PKI library, not of the HSM).
 */
export class KeyStoreError extends Error {
  override readonly name = 'KeyStoreError';

  constructor(
    readonly code: KeyStoreErrorCode,
    message: string,
  ) {
    super(message);
  }
}
