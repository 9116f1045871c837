import { Injectable } from '@nestjs/common';
import { KeyObject, constants, createPublicKey, verify } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, type JWTPayload } from 'jose';
import { Clock, OAuthError } from '@app/common';
import { AppConfig } from '@app/config';
import { StoredCertificate } from '@app/accounts';

/** RFC 7523 assertion algorithms accepted (DECISIONS 3.3); `none` and HMAC never are. */
export const ASSERTION_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'ES256', 'ES384'] as const;
type AssertionAlgorithm = (typeof ASSERTION_ALGORITHMS)[number];

/**
 * How node:crypto verifies each algorithm (RFC 7518 3.3-3.5): the digest, and for PS256 PSS padding
 * with a salt as long as the digest; ECDSA signatures are the raw r || s of JWS, not DER.
 */
const VERIFY_OPTIONS: Record<AssertionAlgorithm, { digest: string; padding?: number; saltLength?: number; dsaEncoding?: 'ieee-p1363' }> = {
  RS256: { digest: 'sha256' },
  RS384: { digest: 'sha384' },
  RS512: { digest: 'sha512' },
  PS256: { digest: 'sha256', padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 },
  ES256: { digest: 'sha256', dsaEncoding: 'ieee-p1363' },
  ES384: { digest: 'sha384', dsaEncoding: 'ieee-p1363' },
};

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
   *
   * node:crypto's synchronous verify, as the bearer guard's (JwsService.verify): jose's WebCrypto
   * verify runs on libuv's thread pool, where a flood of password hashes would queue every token
   * request behind it (issue 22; password hashing has its own limit, PasswordHashSlots).
   */
  findSigner(assertion: UnverifiedAssertion, certificates: StoredCertificate[]): StoredCertificate | undefined {
    const named = assertion.kid ?? assertion.x5tS256;
    const candidates = named ? certificates.filter((c) => c.thumbprint === named) : certificates;
    const dot = assertion.jwt.lastIndexOf('.');
    const signingInput = Buffer.from(assertion.jwt.slice(0, dot), 'utf8');
    const encoded = assertion.jwt.slice(dot + 1);
    const signature = Buffer.from(encoded, 'base64url');
    // Only canonical unpadded base64url: one signature has one text (RFC 7515 2, RFC 4648 5).
    if (signature.toString('base64url') !== encoded) return undefined;
    const { digest, ...options } = VERIFY_OPTIONS[assertion.alg];
    return candidates.find((certificate) => {
      const key = this.keyOf(certificate);
      return keyFitsAlgorithm(key, assertion.alg) && verifies(digest, signingInput, { key, ...options }, signature);
    });
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

/** False, not an exception, for a signature of the wrong length or form. */
function verifies(digest: string, data: Buffer, key: Parameters<typeof verify>[2], signature: Buffer): boolean {
  try {
    return verify(digest, data, key, signature);
  } catch {
    return false;
  }
}

function keyFitsAlgorithm(key: KeyObject, alg: AssertionAlgorithm): boolean {
  if (alg.startsWith('RS') || alg.startsWith('PS')) return key.asymmetricKeyType === 'rsa';
  const curve = key.asymmetricKeyDetails?.namedCurve;
  return key.asymmetricKeyType === 'ec' && (alg === 'ES256' ? curve === 'prime256v1' : curve === 'secp384r1');
}
