import { traced, tracingEnabled } from '@app/observability';
import { Pkcs11Hsm } from './pkcs11-hsm';
import { Signer, type JwsAlgorithm, type SigningJwk, type SigningKeyRef } from './signer.port';

/**
 * The `Signer` port on the process's PKCS#11 owner: JWS signatures with the token signer's key
 * (JWT_KEY) or a key store key chosen by label (a rolled-over signing key, DECISIONS 12.1), ES256
 * synchronously on a session copy of the key, RS256 on a native worker.
 */
export class Pkcs11Signer extends Signer {
  override readonly algorithm: JwsAlgorithm;
  override readonly kid: string;
  override readonly publicJwk: SigningJwk;
  override readonly keyLabel: string;

  constructor(private readonly hsm: Pkcs11Hsm) {
    super();
    this.algorithm = hsm.jwsKey.algorithm;
    this.kid = hsm.jwsKey.publicJwk.kid;
    this.publicJwk = hsm.jwsKey.publicJwk;
    this.keyLabel = hsm.jwsKeyLabel;
  }

  override isReady(): boolean {
    return this.hsm.isReady();
  }

  override sign(signingInput: Buffer, key?: SigningKeyRef): Promise<Buffer> {
    // JWT_KEY's promise is handed back as it is: no extra tick on the token path, and close() still
    // settles after every sign it let finish. With tracing on (DECISIONS 13.2) the span is made here,
    // on the main thread, around the awaited sign (an RS256 sign runs on the sign thread).
    if (key === undefined || key.label === this.keyLabel) {
      if (!tracingEnabled()) return this.hsm.signJws(signingInput);
      return traced('hsm.sign', { 'hsm.key_label': this.keyLabel, 'hsm.algorithm': this.algorithm }, () => this.hsm.signJws(signingInput));
    }
    // The key store's raw form is the JWS one: r||s for P-256, PKCS#1 v1.5 for RSA (both over SHA-256).
    return traced('hsm.sign', { 'hsm.key_label': key.label }, () => this.hsm.sign(key.label, signingInput, 'SHA-256', key.id)).then(
      ({ signature }) => signature,
    );
  }
}
