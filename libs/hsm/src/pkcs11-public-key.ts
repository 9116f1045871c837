import { createHash } from 'node:crypto';
import { HsmConfigurationError } from './hsm.errors';

/** The key members of a public JWK, before `kid`, `alg` and `use` are added. */
export type PublicKeyMembers = { kty: 'EC'; crv: 'P-256'; x: string; y: string } | { kty: 'RSA'; n: string; e: string };

/** DER encoding of OID 1.2.840.10045.3.1.7 (P-256), the CKA_EC_PARAMS value of a P-256 key. */
export const P256_EC_PARAMS = Buffer.from('06082a8648ce3d030107', 'hex');

const MIN_RSA_BITS = 2048;
const UNSUPPORTED = 'key type not supported (EC P-256 or RSA >= 2048 only)';

/**
 * Reads CKA_EC_PARAMS and CKA_EC_POINT. PKCS#11 2.40 §2.3.3 stores the point as a DER OCTET
 * STRING wrapping 0x04||X||Y; some modules return the bare point, which is accepted too.
 */
export function ecPublicKeyMembers(ecParams: Buffer, ecPoint: Buffer, keyName: string): PublicKeyMembers {
  if (!ecParams.equals(P256_EC_PARAMS)) {
    throw new HsmConfigurationError('HSM_KEY_UNSUPPORTED', `${keyName} is an EC key on ${describeEcParams(ecParams)}: ${UNSUPPORTED}`);
  }
  const wrapped = ecPoint.length === 67 && ecPoint[0] === 0x04 && ecPoint[1] === 0x41;
  const point = wrapped ? ecPoint.subarray(2) : ecPoint;
  if (point.length !== 65 || point[0] !== 0x04) {
    throw new HsmConfigurationError(
      'HSM_KEY_UNSUPPORTED',
      `${keyName} has a CKA_EC_POINT that is not an uncompressed P-256 point (${ecPoint.toString('hex')})`,
    );
  }
  return { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33).toString('base64url') };
}

/** Reads CKA_MODULUS and CKA_PUBLIC_EXPONENT; JWK integers carry no leading zero octets (RFC 7518 §6.3.1). */
export function rsaPublicKeyMembers(modulus: Buffer, publicExponent: Buffer, keyName: string): PublicKeyMembers {
  const n = withoutLeadingZeros(modulus);
  const bits = n.length === 0 ? 0 : (n.length - 1) * 8 + (32 - Math.clz32(n[0] ?? 0));
  if (bits < MIN_RSA_BITS) {
    throw new HsmConfigurationError('HSM_KEY_UNSUPPORTED', `${keyName} is a ${bits}-bit RSA key: ${UNSUPPORTED}`);
  }
  return { kty: 'RSA', n: n.toString('base64url'), e: withoutLeadingZeros(publicExponent).toString('base64url') };
}

/** RFC 7638 §3.2: the required members only, in lexicographic order, no whitespace; SHA-256, base64url. */
export function jwkThumbprint(key: PublicKeyMembers): string {
  const required = key.kty === 'EC' ? { crv: key.crv, kty: key.kty, x: key.x, y: key.y } : { e: key.e, kty: key.kty, n: key.n };
  return createHash('sha256').update(JSON.stringify(required)).digest('base64url');
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
