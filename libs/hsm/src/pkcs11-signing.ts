import { hash as digestOf } from 'node:crypto';
import * as pkcs11js from 'pkcs11js';
import type { KeyStoreHash } from './key-store.port';
import { EC_CURVES, rsaModulusBits, type PublicKeyMembers } from './pkcs11-public-key';
import type { Handle } from './pkcs11-token';
import type { SignCall } from './sign-thread';

/** What a sign needs to know of its key: the handle it signs with and the public key's shape. */
export interface SigningKey {
  /** The session copy of the private key, or the token object when the HSM refuses copies. */
  readonly handle: Handle;
  readonly members: PublicKeyMembers;
}

const NODE_HASH: Record<KeyStoreHash, string> = { 'SHA-256': 'sha256', 'SHA-384': 'sha384' };
const RSA_MECHANISM: Record<KeyStoreHash, number> = { 'SHA-256': pkcs11js.CKM_SHA256_RSA_PKCS, 'SHA-384': pkcs11js.CKM_SHA384_RSA_PKCS };

/** Bytes of the signature: r||s for EC, the modulus length for RSA. */
export function signatureLength(members: PublicKeyMembers): number {
  return members.kty === 'EC' ? 2 * EC_CURVES[members.crv].size : Math.ceil(rsaModulusBits(members) / 8);
}

/**
 * The sign of `data` (the message) on `session`, which must be this sign's alone (rule 2), as the
 * sign thread runs it. EC keys: CKM_ECDSA over the digest computed here (rule 7: the mechanism
 * treats its input as the digest), raw r||s out. RSA keys: CKM_SHA256_RSA_PKCS /
 * CKM_SHA384_RSA_PKCS over the message, hashed in the HSM (PKCS#1 v1.5). A P-256 sign is
 * synchronous on the thread (~40-60 us, no slower than the async form); P-384 (~600 us in
 * SoftHSM2) and RSA (~2 ms for 3072 bits) run on a native worker so that signs overlap.
 */
export function signCall(session: Handle, key: SigningKey, hash: KeyStoreHash, data: Buffer, checkObject?: Handle): SignCall {
  const outputLength = signatureLength(key.members);
  if (key.members.kty === 'EC') {
    const input = digestOf(NODE_HASH[hash], data, 'buffer');
    return { session, key: key.handle, mechanism: pkcs11js.CKM_ECDSA, input, outputLength, native: key.members.crv !== 'P-256', checkObject };
  }
  return { session, key: key.handle, mechanism: RSA_MECHANISM[hash], input: data, outputLength, native: true, checkObject };
}

/** The same sign, synchronously on this thread: the key pair check of a key being held, on a session no other sign uses. */
export function signOnSessionSync(pkcs11: pkcs11js.PKCS11, session: Handle, key: SigningKey, hash: KeyStoreHash, data: Buffer): Buffer {
  const output = Buffer.alloc(signatureLength(key.members));
  if (key.members.kty === 'EC') {
    pkcs11.C_SignInit(session, { mechanism: pkcs11js.CKM_ECDSA }, key.handle);
    return pkcs11.C_Sign(session, digestOf(NODE_HASH[hash], data, 'buffer'), output);
  }
  pkcs11.C_SignInit(session, { mechanism: RSA_MECHANISM[hash] }, key.handle);
  return pkcs11.C_Sign(session, data, output);
}

/**
 * ECDSA r||s (IEEE P1363, JWS) to the DER ECDSA-Sig-Value that X.509, CRLs and OCSP carry
 * (RFC 5480 §2.2.3 / RFC 3279 §2.2.3): SEQUENCE { r INTEGER, s INTEGER }. Written directly: two
 * integers need no schema, and the schema's object graph cost a third of a P-256 signature.
 */
export function ecdsaDerSignature(raw: Buffer): Buffer {
  const half = raw.length / 2;
  const r = derInteger(raw.subarray(0, half));
  const s = derInteger(raw.subarray(half));
  const length = r.length + s.length;
  // P-256 and P-384 fit a one-octet length; P-521 (up to 2 x 69 octets) needs the 0x81 form.
  const header = length < 0x80 ? [0x30, length] : [0x30, 0x81, length];
  return Buffer.concat([Buffer.from(header), r, s]);
}

/** An unsigned big-endian integer as a DER INTEGER: no redundant leading zeros, a zero before a high bit. */
function derInteger(unsigned: Buffer): Buffer {
  let start = 0;
  while (start < unsigned.length - 1 && unsigned[start] === 0) start += 1;
  const digits = unsigned.subarray(start);
  const pad = (digits[0] ?? 0) & 0x80 ? 1 : 0;
  return Buffer.concat([Buffer.from([0x02, digits.length + pad]), Buffer.alloc(pad), digits]);
}
