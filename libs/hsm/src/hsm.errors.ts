/** What is wrong with the HSM set-up; each code has its own message naming the missing piece. */
export type HsmConfigurationErrorCode =
  | 'HSM_OPTIONS_INVALID'
  | 'HSM_SOFTHSM_MISSING'
  | 'HSM_SOFTHSM_FAILED'
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
