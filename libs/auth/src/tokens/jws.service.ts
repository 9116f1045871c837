import { Injectable } from '@nestjs/common';
import { KeyObject, createPublicKey } from 'node:crypto';
import { compactVerify, errors as joseErrors } from 'jose';
import { Signer } from '@app/hsm';

export type JwsType = 'at+jwt' | 'JWT';

export type VerifyFailure = 'malformed' | 'bad_signature' | 'wrong_type';

/**
 * Compact JWS (RFC 7515) signed by the HSM key. jose cannot hand signing to an external signer, so
 * the compact serialization is built here (header.payload, signed by the Signer port); verification
 * is jose's. There is no software signing key anywhere (DECISIONS 12).
 */
@Injectable()
export class JwsService {
  private readonly publicKey: KeyObject;

  constructor(private readonly signer: Signer) {
    this.publicKey = createPublicKey({ key: { ...signer.publicJwk }, format: 'jwk' });
  }

  get algorithm(): string {
    return this.signer.algorithm;
  }

  async sign(type: JwsType, claims: Record<string, unknown>): Promise<string> {
    const header = { alg: this.signer.algorithm, typ: type, kid: this.signer.kid };
    const signingInput = `${base64url(header)}.${base64url(claims)}`;
    const signature = await this.signer.sign(Buffer.from(signingInput, 'ascii'));
    return `${signingInput}.${signature.toString('base64url')}`;
  }

  /**
   * Verifies a token signed by this service's key and of the given `typ`; returns its claims.
   * Only the service's own algorithm is accepted (no `none`, no HMAC, no key from the header).
   */
  async verify(token: string, type: JwsType): Promise<{ ok: true; claims: Record<string, unknown> } | { ok: false; failure: VerifyFailure }> {
    if (token.length > 8192 || token.split('.').length !== 3) return { ok: false, failure: 'malformed' };
    try {
      const { payload, protectedHeader } = await compactVerify(token, this.publicKey, { algorithms: [this.signer.algorithm] });
      if (protectedHeader.typ !== type) return { ok: false, failure: 'wrong_type' };
      const claims = JSON.parse(Buffer.from(payload).toString('utf8')) as unknown;
      if (!claims || typeof claims !== 'object' || Array.isArray(claims)) return { ok: false, failure: 'malformed' };
      return { ok: true, claims: claims as Record<string, unknown> };
    } catch (error) {
      if (error instanceof joseErrors.JWSSignatureVerificationFailed || error instanceof joseErrors.JOSEAlgNotAllowed) {
        return { ok: false, failure: 'bad_signature' };
      }
      return { ok: false, failure: 'malformed' };
    }
  }
}

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}
