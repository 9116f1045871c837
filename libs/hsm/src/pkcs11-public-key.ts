import { createHash, createPublicKey } from 'node:crypto';
import { HsmConfigurationError } from './hsm.errors';
import type { JwsAlgorithm, SigningJwk } from './signer.port';

export type EcCurve = 'P-256' | 'P-384';

/** The key members of a public JWK, before `kid`, `alg` and `use` are added. */
export type PublicKeyMembers = { kty: 'EC'; crv: EcCurve; x: string; y: string } | { kty: 'RSA'; n: string; e: string };

/** DER encoding of OID 1.2.840.10045.3.1.7 (P-256), the CKA_EC_PARAMS value of a P-256 key. */
export const P256_EC_PARAMS = Buffer.from('06082a8648ce3d030107', 'hex');
/** DER encoding of OID 1.3.132.0.34 (P-384). */
export const P384_EC_PARAMS = Buffer.from('06052b81040022', 'hex');

/** Per curve: its CKA_EC_PARAMS and the length of one coordinate (and of r and s in a signature). */
export const EC_CURVES: Readonly<Record<EcCurve, { params: Buffer; size: number }>> = {
  'P-256': { params: P256_EC_PARAMS, size: 32 },
  'P-384': { params: P384_EC_PARAMS, size: 48 },
};

/** Which public keys a use of the HSM accepts; `description` ends the refusal message. */
export interface KeyPolicy {
  curves: readonly EcCurve[];
  minRsaBits: number;
  description: string;
}

/** The token signer's key: ES256 or RS256 (RFC 7518 §3.1). */
export const JWS_KEY_POLICY: KeyPolicy = { curves: ['P-256'], minRsaBits: 2048, description: 'EC P-256 or RSA >= 2048 only' };

/**
 * Reads CKA_EC_PARAMS and CKA_EC_POINT. PKCS#11 2.40 §2.3.3 stores the point as a DER OCTET
 * STRING wrapping 0x04||X||Y; some modules return the bare point, which is accepted too.
 */
export function ecPublicKeyMembers(ecParams: Buffer, ecPoint: Buffer, keyName: string, policy: KeyPolicy = JWS_KEY_POLICY): PublicKeyMembers {
  const crv = policy.curves.find((curve) => EC_CURVES[curve].params.equals(ecParams));
  if (crv === undefined) {
    throw new HsmConfigurationError('HSM_KEY_UNSUPPORTED', `${keyName} is an EC key on ${describeEcParams(ecParams)}: ${unsupported(policy)}`);
  }
  const { size } = EC_CURVES[crv];
  const pointLength = 1 + 2 * size;
  const wrapped = ecPoint.length === pointLength + 2 && ecPoint[0] === 0x04 && ecPoint[1] === pointLength;
  const point = wrapped ? ecPoint.subarray(2) : ecPoint;
  if (point.length !== pointLength || point[0] !== 0x04) {
    throw new HsmConfigurationError(
      'HSM_KEY_UNSUPPORTED',
      `${keyName} has a CKA_EC_POINT that is not an uncompressed ${crv} point (${ecPoint.toString('hex')})`,
    );
  }
  return { kty: 'EC', crv, x: point.subarray(1, 1 + size).toString('base64url'), y: point.subarray(1 + size).toString('base64url') };
}

/** Reads CKA_MODULUS and CKA_PUBLIC_EXPONENT; JWK integers carry no leading zero octets (RFC 7518 §6.3.1). */
export function rsaPublicKeyMembers(modulus: Buffer, publicExponent: Buffer, keyName: string, policy: KeyPolicy = JWS_KEY_POLICY): PublicKeyMembers {
  const n = withoutLeadingZeros(modulus);
  const bits = bitLength(n);
  if (bits < policy.minRsaBits) {
    throw new HsmConfigurationError('HSM_KEY_UNSUPPORTED', `${keyName} is a ${bits}-bit RSA key: ${unsupported(policy)}`);
  }
  return { kty: 'RSA', n: n.toString('base64url'), e: withoutLeadingZeros(publicExponent).toString('base64url') };
}

/** The modulus length of an RSA key, in bits. */
export function rsaModulusBits(members: Extract<PublicKeyMembers, { kty: 'RSA' }>): number {
  return bitLength(Buffer.from(members.n, 'base64url'));
}

/** SubjectPublicKeyInfo, DER (RFC 5280 §4.1.2.7), as certificates carry it. */
export function subjectPublicKeyInfo(members: PublicKeyMembers): Buffer {
  return createPublicKey({ key: { ...members }, format: 'jwk' }).export({ format: 'der', type: 'spki' });
}

/**
 * The JWKS entry of a token-signing key from its SubjectPublicKeyInfo (DER), as `KeyStore` reports
 * a generated key: members in the order JWT_KEY's entry has them, kid its RFC 7638 thumbprint.
 */
export function signingJwkFromSpki(spki: Buffer): SigningJwk {
  const jwk = createPublicKey({ key: spki, format: 'der', type: 'spki' }).export({ format: 'jwk' });
  const members: PublicKeyMembers = jwk.kty === 'EC' ? { kty: 'EC', crv: jwk.crv as EcCurve, x: jwk.x!, y: jwk.y! } : { kty: 'RSA', n: jwk.n!, e: jwk.e! };
  return signingJwkOf(members);
}

/** The JWKS entry of a public key: ES256 for EC P-256, RS256 for RSA. */
export function signingJwkOf(members: PublicKeyMembers): SigningJwk {
  const alg: JwsAlgorithm = members.kty === 'EC' ? 'ES256' : 'RS256';
  return { ...members, kid: jwkThumbprint(members), alg, use: 'sig' };
}

/** RFC 7638 §3.2: the required members only, in lexicographic order, no whitespace; SHA-256, base64url. */
export function jwkThumbprint(key: PublicKeyMembers): string {
  const required = key.kty === 'EC' ? { crv: key.crv, kty: key.kty, x: key.x, y: key.y } : { e: key.e, kty: key.kty, n: key.n };
  return createHash('sha256').update(JSON.stringify(required)).digest('base64url');
}

function unsupported(policy: KeyPolicy): string {
  return `key type not supported (${policy.description})`;
}

function bitLength(n: Buffer): number {
  return n.length === 0 ? 0 : (n.length - 1) * 8 + (32 - Math.clz32(n[0] ?? 0));
}

function withoutLeadingZeros(value: Buffer): Buffer {
  const first = value.findIndex((byte) => byte !== 0);
  return first === -1 ? Buffer.alloc(0) : value.subarray(first);
}

/** Names the curve of an unsupported key by its dotted OID so the operator can look it up. */
function describeEcParams(ecParams: Buffer): string {
  if (ecParams[0] !== 0x06 || ecParams[1] !== ecParams.length - 2) {
    return `EC parameters ${ecParams.toString('hex')}`;
  }
  const arcs: number[] = [];
  let arc = 0;
  for (const byte of ecParams.subarray(2)) {
    arc = arc * 128 + (byte & 0x7f);
    if ((byte & 0x80) === 0) {
      arcs.push(arc);
      arc = 0;
    }
  }
  const [joint = 0, ...rest] = arcs;
  const root = Math.min(Math.floor(joint / 40), 2);
  return `curve OID ${[root, joint - root * 40, ...rest].join('.')}`;
}
