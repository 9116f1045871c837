import { Injectable } from '@nestjs/common';
import { KeyObject, createPublicKey } from 'node:crypto';
import { compactVerify, decodeJwt, decodeProtectedHeader, type JWTPayload } from 'jose';
import { Clock, OAuthError } from '@app/common';
import { AppConfig } from '@app/config';
import { StoredCertificate } from '@app/accounts';

/** RFC 7523 assertion algorithms accepted (DECISIONS 3.3); `none` and HMAC never are. */
export const ASSERTION_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'ES256', 'ES384'] as const;
type AssertionAlgorithm = (typeof ASSERTION_ALGORITHMS)[number];

export const MAX_ASSERTION_BYTES = 8192;
const KEY_CACHE_LIMIT = 10_000;
const MAX_ASSERTION_LIFETIME_S = 3600;
/**
 * jti: 1-256 characters of [A-Za-z0-9_-] carrying at least 128 bits. A UUID (36), 32+ hex digits and
 * 22+ base64url characters (openid-client sends 43) all have at least 22 characters of that set,
 * so one pattern expresses the three accepted forms.
 */
const JTI_PATTERN = /^[A-Za-z0-9_-]{22,256}$/;

/** The parts of an assertion that can be read before its signature is checked. */
export interface UnverifiedAssertion {
  jwt: string;
  alg: AssertionAlgorithm;
  kid?: string;
  x5tS256?: string;
  claims: JWTPayload;
  /** iss = sub: the Client ID or userName it claims to be. */
  subject: string;
}

/** How a failure is reported: one generic answer before proof of possession, details after. */
export type Refusal = (description: string) => OAuthError;

/**
 * Checks of a signed JWT assertion (RFC 7523, DECISIONS 3.3), shared by client authentication
 * (client_assertion) and the jwt-bearer grant. Checks that reveal nothing about an account (size,
 * syntax, alg, crit, iss = sub, jti form) run first; the signature next; checks that describe the
 * credential's state (certificate validity, aud, lifetime) only after possession is proven.
 */
@Injectable()
export class AssertionVerifier {
  private readonly keys = new Map<string, KeyObject>();

  constructor(
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  /** Reads header and claims without trusting them. Throws with `refuse` on anything malformed. */
  parse(jwt: string, refuse: Refusal): UnverifiedAssertion {
    if (Buffer.byteLength(jwt, 'utf8') > MAX_ASSERTION_BYTES) throw refuse(`The assertion is larger than ${MAX_ASSERTION_BYTES} bytes.`);
    let header: ReturnType<typeof decodeProtectedHeader>;
    let claims: JWTPayload;
    try {
      header = decodeProtectedHeader(jwt);
      claims = decodeJwt(jwt);
    } catch {
      throw refuse('The assertion is not a signed JWT in compact form (header.payload.signature, base64url).');
    }
    if (header.crit !== undefined) throw refuse('The assertion has a "crit" header, which is not supported.');
    const alg = header.alg as AssertionAlgorithm;
    if (!ASSERTION_ALGORITHMS.includes(alg)) {
      throw refuse(`The assertion's alg "${String(header.alg)}" is not accepted; sign with one of ${ASSERTION_ALGORITHMS.join(', ')}.`);
    }
    if (typeof claims.iss !== 'string' || typeof claims.sub !== 'string' || claims.iss !== claims.sub || claims.sub === '') {
      throw refuse('The assertion must carry iss and sub, both equal to the Client ID (or userName).');
    }
    if (typeof claims.jti !== 'string' || !JTI_PATTERN.test(claims.jti)) {
      throw refuse("The assertion's jti must be a random value of at least 128 bits: a UUID, 32+ hex digits, or 22-256 characters of A-Z a-z 0-9 _ -.");
    }
    const x5t = header['x5t#S256'];
    return {
      jwt,
      alg,
      kid: typeof header.kid === 'string' ? header.kid : undefined,
      x5tS256: typeof x5t === 'string' ? x5t : undefined,
      claims,
      subject: claims.sub,
    };
  }

  /**
   * Finds the certificate whose key signed the assertion: the one `kid` names (kid = x5t#S256), else
   * the one the x5t#S256 header names, else each in turn. Header keys (jwk, jku, x5u, x5c) are never
   * used. Returns undefined when no certificate verifies the signature.
   */
  async findSigner(assertion: UnverifiedAssertion, certificates: StoredCertificate[]): Promise<StoredCertificate | undefined> {
    const named = assertion.kid ?? assertion.x5tS256;
    const candidates = named ? certificates.filter((c) => c.thumbprint === named) : certificates;
    for (const certificate of candidates) {
      const key = this.keyOf(certificate);
      if (!keyFitsAlgorithm(key, assertion.alg)) continue;
      try {
        await compactVerify(assertion.jwt, key, { algorithms: [assertion.alg] });
        return certificate;
      } catch {
        // try the next certificate
      }
    }
    return undefined;
  }

  /** Checks run after possession is proven: they may describe the credential's state. */
  checkAfterPossession(assertion: UnverifiedAssertion, certificate: StoredCertificate, audiences: string[], refuse: Refusal): { expiresAt: Date } {
    const now = this.clock.now();
    const nowS = now.getTime() / 1000;
    const skew = this.config.assertionClockSkewS;
    if (now < certificate.not_before) throw refuse(`The signing certificate is not valid before ${certificate.not_before.toISOString()}.`);
    if (now >= certificate.not_after) throw refuse(`The signing certificate expired on ${certificate.not_after.toISOString()}; upload a new certificate.`);
    if (now >= certificate.expires_at) {
      throw refuse(
        `The signing certificate's credential expiry passed on ${certificate.expires_at.toISOString()}; re-upload the certificate to restore access.`,
      );
    }
    const { aud, exp, iat, nbf } = assertion.claims;
    const audience = Array.isArray(aud) ? (aud.length === 1 ? aud[0] : undefined) : aud;
    if (typeof audience !== 'string' || !audiences.includes(audience)) {
      throw refuse(`The assertion's aud must be a single value, the Token URL ${audiences[0]} (or the issuer).`);
    }
    if (typeof exp !== 'number' || typeof iat !== 'number') throw refuse('The assertion must carry numeric exp and iat claims.');
    if (exp - iat > MAX_ASSERTION_LIFETIME_S)
      throw refuse(`The assertion's lifetime (exp - iat) is ${exp - iat} s; at most ${MAX_ASSERTION_LIFETIME_S} s is accepted.`);
    if (exp <= nowS - skew) throw refuse('The assertion has expired (exp is in the past).');
    if (exp > nowS + MAX_ASSERTION_LIFETIME_S + skew) throw refuse(`The assertion's exp is more than ${MAX_ASSERTION_LIFETIME_S} s in the future.`);
    if (iat > nowS + skew) throw refuse("The assertion's iat is in the future.");
    if (nbf !== undefined && (typeof nbf !== 'number' || nbf > nowS + skew)) throw refuse('The assertion is not valid yet (nbf is in the future).');
    return { expiresAt: new Date((exp + skew) * 1000) };
  }

  private keyOf(certificate: StoredCertificate): KeyObject {
    let key = this.keys.get(certificate.thumbprint);
    if (!key) {
      key = createPublicKey(certificate.pem);
      // Certificates are immutable once uploaded (the thumbprint is their hash), so caching is safe;
      // the cache is bounded by starting over when it grows past KEY_CACHE_LIMIT.
      if (this.keys.size >= KEY_CACHE_LIMIT) this.keys.clear();
      this.keys.set(certificate.thumbprint, key);
    }
    return key;
  }
}

function keyFitsAlgorithm(key: KeyObject, alg: AssertionAlgorithm): boolean {
  if (alg.startsWith('RS') || alg.startsWith('PS')) return key.asymmetricKeyType === 'rsa';
  const curve = key.asymmetricKeyDetails?.namedCurve;
  return key.asymmetricKeyType === 'ec' && (alg === 'ES256' ? curve === 'prime256v1' : curve === 'secp384r1');
}
