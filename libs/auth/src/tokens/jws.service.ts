import { Injectable } from '@nestjs/common';
import { verify as cryptoVerify } from 'node:crypto';
import { Signer } from '@app/hsm';
import { SigningKeys, type TokenSigningKey } from '../signing-keys/signing-keys.service';

export type JwsType = 'at+jwt' | 'JWT';

export type VerifyFailure = 'not_canonical' | 'malformed' | 'bad_signature' | 'wrong_type';

/**
 * Compact JWS (RFC 7515) signed by the HSM key. jose cannot hand signing to an external signer, so
 * the compact serialization is built here (header.payload, signed by the Signer port). There is no
 * software signing key anywhere (DECISIONS 12). The key is the one the token service chose
 * (SigningKeys.signingKeyFor: the active key), and every published key verifies (DECISIONS 12.1),
 * both held in memory by SigningKeys.
 */
@Injectable()
export class JwsService {
  constructor(
    private readonly signer: Signer,
    private readonly keys: SigningKeys,
  ) {}

  /**
   * The encoded protected header of each key and type, which every token of that key repeats: built
   * once rather than per token (issue 35). Keyed by the key object, so a key that SigningKeys drops
   * takes its headers with it.
   */
  private readonly headers = new WeakMap<TokenSigningKey, Partial<Record<JwsType, string>>>();

  async sign(type: JwsType, claims: Record<string, unknown>, key: TokenSigningKey): Promise<string> {
    const signingInput = `${this.encodedHeader(type, key)}.${base64url(claims)}`;
    const signature = await this.signer.sign(Buffer.from(signingInput, 'ascii'), key.ref);
    return `${signingInput}.${signature.toString('base64url')}`;
  }

  private encodedHeader(type: JwsType, key: TokenSigningKey): string {
    let ofKey = this.headers.get(key);
    if (ofKey === undefined) this.headers.set(key, (ofKey = {}));
    return (ofKey[type] ??= base64url({ alg: key.algorithm, typ: type, kid: key.kid }));
  }

  /**
   * Verifies a token signed by one of this service's published keys, chosen by the header's `kid`
   * (a token without one: the active key), and of the given `typ`; returns its claims. Only that
   * key's algorithm is accepted (no `none`, no HMAC, no key from the header). This runs on every authenticated request, so it uses node:crypto's synchronous verify:
   * jose's WebCrypto path cost about 12% of a request's CPU in the probe benchmark (client
   * assertions are verified the same way, by AssertionVerifier).
   *
   * Only the canonical compact form is read (DECISIONS 3.4): three unpadded base64url segments, the
   * signature the exact encoding of its bytes. A lenient decoder would take `=`, `~`, the `+/`
   * alphabet or other spare bits in the last character, so one token would have many spellings,
   * each missing the verify-once cache and any list keyed on the text.
   */
  verify(token: string, type: JwsType): { ok: true; claims: Record<string, unknown>; kid: string } | { ok: false; failure: VerifyFailure } {
    if (token.length > MAX_TOKEN_LENGTH) return { ok: false, failure: 'malformed' };
    if (!COMPACT_JWS.test(token)) return { ok: false, failure: 'not_canonical' };
    const parts = token.split('.');
    const signature = Buffer.from(parts[2], 'base64url');
    if (signature.toString('base64url') !== parts[2]) return { ok: false, failure: 'not_canonical' };
    const header = parseJson(parts[0]);
    if (!header) return { ok: false, failure: 'malformed' };
    const key = header.kid === undefined ? this.keys.active() : typeof header.kid === 'string' ? this.keys.published(header.kid) : undefined;
    if (key === undefined || header.alg !== key.algorithm || header.crit !== undefined) return { ok: false, failure: 'bad_signature' };
    const signingInput = Buffer.from(`${parts[0]}.${parts[1]}`, 'ascii');
    if (!cryptoVerify('sha256', signingInput, key.verifyKey, signature)) return { ok: false, failure: 'bad_signature' };
    if (header.typ !== type) return { ok: false, failure: 'wrong_type' };
    const claims = parseJson(parts[1]);
    return claims ? { ok: true, claims, kid: key.kid } : { ok: false, failure: 'malformed' };
  }

  /** Whether the key that verified a token (`verify`'s `kid`) is still published: a withdrawn or expired key's tokens are refused. */
  stillPublished(kid: string): boolean {
    return this.keys.published(kid) !== undefined;
  }
}

const MAX_TOKEN_LENGTH = 8192;

/** header.payload.signature, each unpadded base64url (RFC 7515 7.1, RFC 4648 5). */
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

function parseJson(segment: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}
