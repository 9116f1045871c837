import { KeyObject, createHash, createPublicKey, verify } from 'node:crypto';
import { invalidValue } from '@app/common';

/** An EC P-256 public key as stored and shown: the JWK members RFC 7638 hashes, and nothing else. */
export interface AuthenticatorJwk {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
}

export interface AuthenticatorKey {
  jwk: AuthenticatorJwk;
  key: KeyObject;
  /** RFC 7638 JWK thumbprint, SHA-256, base64url: what makes a key unique per person. */
  thumbprint: string;
}

const JWK_MEMBERS = ['kty', 'crv', 'x', 'y', 'alg'];
const COORDINATE = /^[A-Za-z0-9_-]{43}$/;

function invalidKey(detail: string) {
  return invalidValue(`Invalid authenticator: publicKey${detail}.`);
}

/**
 * The app's public key, a JWK (RFC 7517) of an EC P-256 key (CREDENTIAL-MANAGEMENT.md
 * "Authenticators"). Coordinates must be the canonical base64url of 32 octets, so that one key has
 * one thumbprint (the uniqueness per person rests on it), and a point of the curve (OpenSSL checks).
 */
export function parsePublicKey(raw: unknown): AuthenticatorKey {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw invalidKey(': is required: a JWK {"kty": "EC", "crv": "P-256", "x", "y"}');
  const jwk = raw as Record<string, unknown>;
  if ('d' in jwk) throw invalidKey(': holds a private key (d); send only the public key {kty, crv, x, y}: the private key never leaves the app');
  const extra = Object.keys(jwk).find((member) => !JWK_MEMBERS.includes(member));
  if (extra !== undefined) throw invalidKey(`: member "${extra.slice(0, 40)}" is not part of an EC public key; send kty, crv, x, y (and alg "ES256")`);
  if (jwk.kty !== 'EC') throw invalidKey('.kty: must be "EC" (an EC P-256 key, signing ES256)');
  if (jwk.crv !== 'P-256')
    throw invalidKey(`.crv: must be "P-256" (signing ES256); ${typeof jwk.crv === 'string' ? `"${jwk.crv.slice(0, 20)}" is not accepted` : 'it is missing'}`);
  if (jwk.alg !== undefined && jwk.alg !== 'ES256') throw invalidKey('.alg: must be "ES256" when it is sent');
  for (const member of ['x', 'y'] as const) {
    const value = jwk[member];
    if (typeof value !== 'string' || !COORDINATE.test(value) || Buffer.from(value, 'base64url').toString('base64url') !== value) {
      throw invalidKey(`.${member}: must be a coordinate of 32 octets in base64url without padding (43 characters)`);
    }
  }
  const canonical: AuthenticatorJwk = { kty: 'EC', crv: 'P-256', x: jwk.x as string, y: jwk.y as string };
  let key: KeyObject;
  try {
    key = createPublicKey({ key: { ...canonical }, format: 'jwk' });
  } catch {
    throw invalidKey(': (x, y) is not a point of the P-256 curve');
  }
  // RFC 7638 3.2: the required members in lexicographic order, no white space.
  const thumbprint = createHash('sha256').update(`{"crv":"P-256","kty":"EC","x":"${canonical.x}","y":"${canonical.y}"}`).digest('base64url');
  return { jwk: canonical, key, thumbprint };
}

/**
 * What the app signs to register: bound to the organization and the person, and marked as a
 * registration so that it can never pass for another signature the app makes with the same key.
 */
export function registrationSigningInput(orgId: string, userId: string, challenge: string): string {
  return `authenticator-registration.${orgId}.${userId}.${challenge}`;
}

/**
 * What the app signs to approve or deny a CIBA request (DECISIONS 16): bound to the organization,
 * the request and the decision, and marked as an approval, so that it can pass for no other signature.
 */
export function approvalSigningInput(orgId: string, requestId: string, decision: 'approve' | 'deny'): string {
  return `ciba-approval.${orgId}.${requestId}.${decision}`;
}

/** What the app signs to read a CIBA request it was asked about (DECISIONS 16). */
export function approvalReadSigningInput(orgId: string, requestId: string): string {
  return `ciba-read.${orgId}.${requestId}`;
}

/** ES256 (RFC 7518 3.4): SHA-256 and ECDSA P-256, the signature as r||s, 64 octets in base64url. */
export function verifiesEs256(key: KeyObject, signingInput: string, signature: string): boolean {
  const octets = Buffer.from(signature, 'base64url');
  if (octets.length !== 64 || octets.toString('base64url') !== signature) {
    throw invalidValue(
      'Invalid authenticator: signature: must be the ES256 signature of signingInput, r||s as 64 octets in base64url without padding (86 characters).',
    );
  }
  return verify('sha256', Buffer.from(signingInput, 'utf8'), { key, dsaEncoding: 'ieee-p1363' }, octets);
}
