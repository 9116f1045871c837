import { Pkcs11Hsm } from './pkcs11-hsm';
import { Signer, type JwsAlgorithm, type SigningJwk } from './signer.port';

/**
 * The `Signer` port on the process's PKCS#11 owner: JWS signatures with the token signer's key
 * (JWT_KEY), ES256 synchronously on a session copy of the key, RS256 on a native worker.
 */
export class Pkcs11Signer extends Signer {
  override readonly algorithm: JwsAlgorithm;
  override readonly kid: string;
  override readonly publicJwk: SigningJwk;

  constructor(private readonly hsm: Pkcs11Hsm) {
    super();
    this.algorithm = hsm.jwsKey.algorithm;
    this.kid = hsm.jwsKey.publicJwk.kid;
    this.publicJwk = hsm.jwsKey.publicJwk;
  }

  override isReady(): boolean {
    return this.hsm.isReady();
  }

  override sign(signingInput: Buffer): Promise<Buffer> {
    return this.hsm.signJws(signingInput);
  }
}
