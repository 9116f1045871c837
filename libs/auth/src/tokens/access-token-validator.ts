import { Injectable } from '@nestjs/common';
import { Clock, isUuid } from '@app/common';
import { AppConfig } from '@app/config';
import { JwsService } from './jws.service';
import { TokenStateCache } from './token-state.cache';
import { TokenRepository, TokenState } from './token.repository';

export interface AccessTokenClaims {
  iss: string;
  sub: string;
  aud: string;
  client_id: string;
  org: string;
  role: string;
  scope: string;
  jti: string;
  iat: number;
  exp: number;
}

export type ValidationResult = { ok: true; claims: AccessTokenClaims; state: TokenState } | { ok: false; description: string };

/**
 * The rules an access token must pass on each use (DECISIONS 3.4), in one place for the bearer
 * guard and introspection: signature by our key and typ at+jwt, expiry, the token row (revoked,
 * account disabled), and "not used within TOKEN_UNUSED_TIMEOUT_S of issue is expired".
 * Descriptions go into WWW-Authenticate error_description, so they hold no quotes or backslashes.
 */
@Injectable()
export class AccessTokenValidator {
  /** Verified tokens by the end of their text (see verifySignature), each with its whole text. */
  private readonly verified = new Map<string, { token: string; claims: AccessTokenClaims; kid: string }>();

  constructor(
    private readonly jws: JwsService,
    private readonly tokens: TokenRepository,
    private readonly cache: TokenStateCache,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  /** `recordUse`: the first successful use is recorded (introspection does not count as a use). */
  async validate(token: string, recordUse: boolean): Promise<ValidationResult> {
    const verified = this.verifySignature(token);
    if ('description' in verified) return { ok: false, description: verified.description };
    const claims = verified;
    const now = this.clock.now();
    if (claims.exp * 1000 <= now.getTime()) return { ok: false, description: 'The access token has expired; request a new token.' };
    const readAt = this.cache.mark();
    const cached = this.cache.get(claims.jti);
    const state = cached ?? (await this.tokens.findState(claims.jti));
    if (!state) return { ok: false, description: 'The access token is not known (revoked or purged); request a new token.' };
    if (state.org_id !== claims.org) return { ok: false, description: 'The access token belongs to another organization.' };
    if (state.revoked_at) return { ok: false, description: 'The access token has been revoked.' };
    if (state.disabled) return { ok: false, description: `The ${state.subject_kind === 'user' ? 'user' : 'system account'} of this token is disabled.` };
    if (!state.first_used_at) {
      if (now.getTime() - state.issued_at.getTime() > this.config.tokenUnusedTimeoutS * 1000) {
        return {
          ok: false,
          description: `The access token was not used within ${this.config.tokenUnusedTimeoutS} seconds of issue and has expired; request a new token.`,
        };
      }
      if (recordUse) {
        await this.tokens.markFirstUse(claims.jti, now);
        state.first_used_at = now;
      }
    }
    // Only a token in use is kept: an unused one must be re-read until its first use is recorded.
    if (!cached && state.first_used_at) this.cache.set(claims.jti, state, readAt);
    return { ok: true, claims, state };
  }

  /**
   * Signature, typ and claim shape. A P-256 verify costs about 100 us, a third of a request's CPU,
   * and a token is presented many times: the claims of a token that verified are remembered by its
   * exact text (same bytes, same key: same answer), in a bounded map, as long as that key is still
   * published (a withdrawn key's tokens are refused at once, DECISIONS 12.1). Every other rule still
   * runs on every request. The map is keyed by the token's last characters (its signature's) and the
   * whole text compared on a hit: hashing the whole token (about 600 characters, a fresh string on each
   * request) cost a microsecond per request (issue 35).
   */
  private verifySignature(token: string): AccessTokenClaims | { description: string } {
    const key = token.slice(-VERIFIED_KEY_CHARS);
    const known = this.verified.get(key);
    if (known?.token === token) {
      if (this.jws.stillPublished(known.kid)) return known.claims;
      this.verified.delete(key);
    }
    const verified = this.jws.verify(token, 'at+jwt');
    if (!verified.ok) {
      return {
        description: {
          not_canonical:
            'The access token is not a compact JWS in canonical form: three base64url segments of A-Z a-z 0-9 - _ without padding, each the exact encoding of its bytes.',
          malformed: 'The access token is malformed.',
          bad_signature: 'The access token signature is not valid (not signed by this service).',
          wrong_type: 'The token is not an access token (typ must be at+jwt).',
        }[verified.failure],
      };
    }
    const claims = verified.claims as unknown as AccessTokenClaims;
    if (!isAccessTokenJti(claims.jti) || typeof claims.exp !== 'number' || typeof claims.org !== 'string') {
      return { description: 'The access token is malformed.' };
    }
    if (this.verified.size >= MAX_VERIFIED_TOKENS) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(key, { token, claims, kid: verified.kid });
    return claims;
  }
}

/**
 * The service mints every access token's jti as a UUID (the key of access_tokens): any other jti,
 * even under our signature, is a malformed token, refused before it reaches a query.
 */
export function isAccessTokenJti(jti: unknown): jti is string {
  return typeof jti === 'string' && isUuid(jti);
}

/** How many of a token's last characters key it among the verified: within its signature, which no other token shares. */
const VERIFIED_KEY_CHARS = 64;
/** At most this many verified tokens are remembered (about 1 KiB each). */
const MAX_VERIFIED_TOKENS = 20_000;
