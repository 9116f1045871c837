import 'reflect-metadata';
import { type JsonWebKey, KeyObject, constants, createHash, createPublicKey, verify } from 'node:crypto';
import * as asn1js from 'asn1js';
import { RsaSaPssParams } from '@peculiar/asn1-rsa';
import { AsnConvert } from '@peculiar/asn1-schema';
import * as x509 from '@peculiar/x509';
import { DomainError } from '@app/common';
import { CONTEXT, UNIVERSAL, isTagged, sequenceItems } from './der-reading';

/** Largest CSR accepted (CREDENTIAL-MANAGEMENT.md, "PKI"). */
const MAX_CSR_BYTES = 16 * 1024;
const RSA_SIZES = new Set([2048, 3072, 4096]);
const CURVES: Record<string, string> = { prime256v1: 'P-256', secp384r1: 'P-384' };

/**
 * CSR signature algorithms by OID: the hash, whether it is strong enough (SHA-1 is read, to prove
 * possession, then refused), and the key type that signs with it (Node's verify takes the algorithm
 * from the key, so an ECDSA signature labelled sha256WithRSAEncryption would verify otherwise).
 */
const SIGNATURES: Record<string, { hash: string; strong: boolean; keyType: 'ec' | 'rsa'; pss?: true }> = {
  '1.2.840.10045.4.1': { hash: 'SHA-1', strong: false, keyType: 'ec' },
  '1.2.840.10045.4.3.2': { hash: 'SHA-256', strong: true, keyType: 'ec' },
  '1.2.840.10045.4.3.3': { hash: 'SHA-384', strong: true, keyType: 'ec' },
  '1.2.840.10045.4.3.4': { hash: 'SHA-512', strong: true, keyType: 'ec' },
  '1.2.840.113549.1.1.5': { hash: 'SHA-1', strong: false, keyType: 'rsa' },
  '1.2.840.113549.1.1.11': { hash: 'SHA-256', strong: true, keyType: 'rsa' },
  '1.2.840.113549.1.1.12': { hash: 'SHA-384', strong: true, keyType: 'rsa' },
  '1.2.840.113549.1.1.13': { hash: 'SHA-512', strong: true, keyType: 'rsa' },
  '1.2.840.113549.1.1.10': { hash: 'PSS', strong: true, keyType: 'rsa', pss: true },
};
const HASH_OIDS: Record<string, { hash: string; strong: boolean }> = {
  '1.3.14.3.2.26': { hash: 'SHA-1', strong: false },
  '2.16.840.1.101.3.4.2.1': { hash: 'SHA-256', strong: true },
  '2.16.840.1.101.3.4.2.2': { hash: 'SHA-384', strong: true },
  '2.16.840.1.101.3.4.2.3': { hash: 'SHA-512', strong: true },
};

/** A CSR that passed every check: what the certificate needs of it. */
export interface CheckedCsr {
  /** SubjectPublicKeyInfo, DER: goes into the certificate as it is. */
  spki: Buffer;
  /**
   * SHA-256 of the key's SubjectPublicKeyInfo in one encoding per key (OpenSSL's: an EC point
   * uncompressed, rsaEncryption with its NULL): the database's unique key on (CA, public key), so
   * that a key sent in another encoding is still the same key (CSR_KEY_REUSED).
   */
  spkiSha256: Buffer;
  /** The key as CredentialPolicy.keyAlgorithms names it: EC-P256, EC-P384, RSA-2048, RSA-3072, RSA-4096. */
  keyAlgorithm: string;
  /** SHA-1 of the subjectPublicKey bits: the subject key identifier (RFC 5280 §4.2.1.2, method 1). */
  keyIdentifier: Buffer;
  rsa: boolean;
}

const fail = (code: 'CSR_INVALID' | 'CSR_POP_INVALID' | 'CSR_KEY_POLICY', detail: string) => new DomainError('INVALID_VALUE', `${code}: ${detail}`);

/**
 * Reads a PKCS#10 CSR (PEM, base64 DER or DER) and checks it: DER with nothing after it, at most 16 KiB
 * (CSR_INVALID), key EC P-256/P-384 or RSA 2048/3072/4096 with e=65537 and signature hash SHA-256
 * or stronger (CSR_KEY_POLICY), its signature proves possession of the key (CSR_POP_INVALID).
 * Each failure is a 400 whose detail starts with the code. Subject and SANs of the CSR are ignored.
 * Runs once per certificate issued, and was a tenth of an issuance's main-thread CPU (issue 35): so the
 * DER is read with asn1js, walking the fields used (readCertificationRequest) rather than matching the
 * `@peculiar/asn1-csr` schema, the SPKI goes into the certificate as sent rather than re-encoded, and
 * the key is imported once, from a JWK when that says exactly what the SPKI says (importKey). The
 * signature is verified over the request info exactly as it was sent.
 */
export function readCsr(input: string | Buffer): CheckedCsr {
  const size = typeof input === 'string' ? Buffer.byteLength(input) : input.length;
  if (size === 0 || size > MAX_CSR_BYTES) throw fail('CSR_INVALID', `the CSR must be 1 byte to ${MAX_CSR_BYTES / 1024} KiB, not ${size} bytes.`);
  let request: CertificationRequest | undefined;
  try {
    const der =
      typeof input !== 'string'
        ? input
        : input.includes('-----BEGIN')
          ? Buffer.from(x509.PemConverter.decodeFirst(input))
          : Buffer.from(input.trim(), 'base64');
    request = readCertificationRequest(der);
  } catch {
    request = undefined;
  }
  if (!request) throw fail('CSR_INVALID', 'the CSR is not a PKCS#10 certificate request in PEM, base64 DER or DER (openssl req -new makes one).');
  const { key, keyAlgorithm, exact } = importKey(request.subjectPublicKeyInfo);
  const signature = signatureOf(request.signatureAlgorithm);
  if (!signature.strong) throw fail('CSR_KEY_POLICY', `the CSR is signed with ${signature.hash}; use SHA-256 or stronger.`);
  if (!verifies(request, key, signature)) throw fail('CSR_POP_INVALID', 'the signature of the CSR does not verify with its own public key.');
  const { der: spki, subjectPublicKey } = request.subjectPublicKeyInfo;
  return {
    spki,
    spkiSha256: createHash('sha256')
      .update(canonicalSpki(request.subjectPublicKeyInfo, key, exact))
      .digest(),
    keyAlgorithm,
    keyIdentifier: createHash('sha1').update(subjectPublicKey).digest(),
    rsa: key.asymmetricKeyType === 'rsa',
  };
}

/** What readCsr uses of a CertificationRequest, as it was sent. */
interface CertificationRequest {
  /** The certificationRequestInfo's DER: what the signature is over. */
  requestInfo: Buffer;
  subjectPublicKeyInfo: PublicKeyInfo;
  signatureAlgorithm: Algorithm;
  signature: Buffer;
}

/** A SubjectPublicKeyInfo: its DER, its algorithm (the OID's and the parameters' DER, hex) and the key's octets. */
interface PublicKeyInfo {
  der: Buffer;
  algorithm: string;
  parameters?: string;
  subjectPublicKey: Buffer;
}

/** An AlgorithmIdentifier: the OID, and the parameters' DER when there are some. */
interface Algorithm {
  oid: asn1js.ObjectIdentifier;
  parameters?: Buffer;
}

const derOf = (block: asn1js.AsnType) => Buffer.from(block.valueBeforeDecodeView);

/**
 * The one element `der` holds, when it takes all of `der` and its headers are DER's (hasDerHeaders).
 * The contents of BIT and OCTET STRINGs are not read as ASN.1 (a signature is no structure).
 */
function wholeDerElement(der: Uint8Array): asn1js.AsnType | undefined {
  const parsed = asn1js.fromBER(der, { parseEmbedded: false });
  if (parsed.offset !== der.length || parsed.result.error || !hasDerHeaders(parsed.result)) return undefined;
  return parsed.result;
}

/**
 * Whether `block` and everything in it have the tags and lengths DER writes: a tag in one octet (every tag a
 * CSR uses is below 31), SEQUENCE and SET constructed and the other universal types primitive, a definite
 * length in the fewest octets. asn1js reads BER; a SubjectPublicKeyInfo copied into a certificate and keyed
 * on in the database must be DER, as the schema's re-encoding made it before.
 */
function hasDerHeaders(block: asn1js.AsnType): boolean {
  const { idBlock, lenBlock } = block;
  if (idBlock.blockLength !== 1 || lenBlock.isIndefiniteForm) return false;
  // The long form only for 128 octets and more, its first length octet (after tag and 0x8n) not zero.
  if (lenBlock.longFormUsed && (lenBlock.length < 0x80 || block.valueBeforeDecodeView[2] === 0)) return false;
  if (idBlock.tagClass === UNIVERSAL + 1 && idBlock.isConstructed !== (idBlock.tagNumber === 16 || idBlock.tagNumber === 17)) return false;
  return !(block instanceof asn1js.Constructed) || block.valueBlock.value.every(hasDerHeaders);
}

/** The octets of a primitive BIT STRING without unused bits (a key and a signature are whole octets). */
function bitStringOctets(block: asn1js.AsnType | undefined): Buffer | undefined {
  if (!(block instanceof asn1js.BitString) || block.idBlock.isConstructed || block.valueBlock.unusedBits !== 0) return undefined;
  return Buffer.from(block.valueBlock.valueHexView);
}

/** AlgorithmIdentifier ::= SEQUENCE { algorithm OBJECT IDENTIFIER, parameters ANY OPTIONAL } */
function algorithmOf(block: asn1js.AsnType | undefined): Algorithm | undefined {
  const [oid, parameters, ...more] = sequenceItems(block) ?? [];
  if (!(oid instanceof asn1js.ObjectIdentifier) || more.length > 0) return undefined;
  return { oid, parameters: parameters && derOf(parameters) };
}

/** SubjectPublicKeyInfo ::= SEQUENCE { algorithm AlgorithmIdentifier, subjectPublicKey BIT STRING } */
function publicKeyInfoOf(block: asn1js.AsnType | undefined): PublicKeyInfo | undefined {
  const [algorithmBlock, keyBlock, ...more] = sequenceItems(block) ?? [];
  const algorithm = algorithmOf(algorithmBlock);
  const subjectPublicKey = bitStringOctets(keyBlock);
  if (!block || !algorithm || !subjectPublicKey || more.length > 0) return undefined;
  return { der: derOf(block), algorithm: derOf(algorithm.oid).toString('hex'), parameters: algorithm.parameters?.toString('hex'), subjectPublicKey };
}

/** Whether `block` is a SEQUENCE { type OBJECT IDENTIFIER, value }, the value (when given) of type `valueType`. */
function isTypeAndValue(block: asn1js.AsnType, valueType?: typeof asn1js.Set): boolean {
  const items = sequenceItems(block);
  return items?.length === 2 && items[0] instanceof asn1js.ObjectIdentifier && (!valueType || items[1] instanceof valueType);
}

/**
 * Name ::= SEQUENCE OF SET OF SEQUENCE { type, value }; attributes [0] IMPLICIT SET OF SEQUENCE { type, values SET }.
 * Neither is used, but a request whose subject or attributes have another shape is not a CSR (the schema refused it).
 */
const isName = (block: asn1js.AsnType | undefined) =>
  sequenceItems(block)?.every((rdn) => rdn instanceof asn1js.Set && rdn.valueBlock.value.every((attribute) => isTypeAndValue(attribute))) ?? false;
const isAttributes = (block: asn1js.AsnType) =>
  isTagged(block, CONTEXT, 0) && block instanceof asn1js.Constructed && block.valueBlock.value.every((attribute) => isTypeAndValue(attribute, asn1js.Set));

/**
 * Reads a PKCS#10 request (RFC 2986) with asn1js's DER reader, walking the fields readCsr uses, as
 * ocsp-request.ts reads OCSP requests: `@peculiar/asn1-schema`'s schema comparison cost several times
 * the reading (issue 35). Undefined when the bytes are not such a request in DER, with nothing after it.
 *   CertificationRequest ::= SEQUENCE { certificationRequestInfo, signatureAlgorithm AlgorithmIdentifier, signature BIT STRING }
 *   CertificationRequestInfo ::= SEQUENCE { version INTEGER, subject Name, subjectPKInfo SubjectPublicKeyInfo, attributes [0] OPTIONAL }
 */
function readCertificationRequest(der: Buffer): CertificationRequest | undefined {
  const [info, algorithmBlock, signatureBlock, ...more] = sequenceItems(wholeDerElement(der)) ?? [];
  const [version, subject, publicKeyBlock, attributes, ...moreInInfo] = sequenceItems(info) ?? [];
  if (!info || more.length > 0 || moreInInfo.length > 0) return undefined;
  if (!(version instanceof asn1js.Integer) || !isName(subject) || (attributes && !isAttributes(attributes))) return undefined;
  const subjectPublicKeyInfo = publicKeyInfoOf(publicKeyBlock);
  const signatureAlgorithm = algorithmOf(algorithmBlock);
  const signature = bitStringOctets(signatureBlock);
  if (!subjectPublicKeyInfo || !signatureAlgorithm || !signature) return undefined;
  return { requestInfo: derOf(info), subjectPublicKeyInfo, signatureAlgorithm, signature };
}

interface CsrSignature {
  hash: string;
  strong: boolean;
  keyType?: 'ec' | 'rsa';
  pssSaltLength?: number;
}

function signatureOf(algorithm: Algorithm): CsrSignature {
  const oid = algorithm.oid.valueBlock.toString();
  const known = SIGNATURES[oid];
  if (!known) return { hash: `signature algorithm ${oid}`, strong: false };
  if (!known.pss) return known;
  try {
    const params = AsnConvert.parse(algorithm.parameters!, RsaSaPssParams);
    const hash = HASH_OIDS[params.hashAlgorithm.algorithm];
    if (!hash) return { hash: `hash ${params.hashAlgorithm.algorithm}`, strong: false };
    return { ...hash, keyType: 'rsa', pssSaltLength: params.saltLength };
  } catch {
    return { hash: 'RSA-PSS without readable parameters', strong: false };
  }
}

function verifies(request: CertificationRequest, key: KeyObject, signature: CsrSignature): boolean {
  if (key.asymmetricKeyType !== signature.keyType) return false;
  const options = signature.pssSaltLength === undefined ? { key } : { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: signature.pssSaltLength };
  try {
    return verify(signature.hash, request.requestInfo, options, request.signature);
  } catch {
    return false;
  }
}

const EC_PUBLIC_KEY = '06072a8648ce3d0201';
const RSA_ENCRYPTION = '06092a864886f70d010101';
const DER_NULL = '0500';

/**
 * The accepted named curves by their SubjectPublicKeyInfo parameters (the curve's OID, DER): the
 * curve OpenSSL read the key on, without asking OpenSSL for it (`asymmetricKeyDetails` costs 50-80 µs
 * per key, a percent of an issuance's CPU; issue 35), and the curve's JWK name and coordinate size.
 */
const EC_CURVES: Record<string, { keyAlgorithm: string; crv: string; coordinateOctets: number }> = {
  '06082a8648ce3d030107': { keyAlgorithm: 'EC-P256', crv: 'P-256', coordinateOctets: 32 },
  '06052b81040022': { keyAlgorithm: 'EC-P384', crv: 'P-384', coordinateOctets: 48 },
};

/** What the RSA key policy looks at, as OpenSSL's `asymmetricKeyDetails` gives it. */
interface RsaDetails {
  modulusLength: number;
  publicExponent: bigint;
}

/**
 * The key, imported once, and its name in the policy; CSR_KEY_POLICY when OpenSSL cannot read it or the
 * policy refuses it. From a JWK when one says exactly what the SPKI says (exactJwk): Node imports an EC
 * P-256 key from DER in ~170 µs and from a JWK in ~83 µs, an RSA key in 163 µs and 6 µs (issue 35).
 * Anything else is imported from the DER as before, so its answers are OpenSSL's as before.
 */
function importKey(info: PublicKeyInfo): { key: KeyObject; keyAlgorithm: string; exact: boolean } {
  const rsaKey = info.algorithm === RSA_ENCRYPTION ? rsaPublicKeyOf(info.subjectPublicKey) : undefined;
  // OpenSSL reads RSAPublicKeys that are not DER; a certificate must not carry one (DECISIONS 9).
  if (info.algorithm === RSA_ENCRYPTION && !rsaKey) {
    throw fail(
      'CSR_INVALID',
      'the RSA public key of the CSR is not an RSAPublicKey in DER: two positive INTEGERs, each in its fewest octets (RFC 8017 A.1.1).',
    );
  }
  const exact = exactJwk(info, rsaKey);
  let key: KeyObject;
  try {
    key = exact ? createPublicKey({ key: exact.jwk, format: 'jwk' }) : createPublicKey({ key: info.der, format: 'der', type: 'spki' });
  } catch {
    throw fail('CSR_KEY_POLICY', 'the key of the CSR is neither EC P-256/P-384 nor RSA 2048/3072/4096.');
  }
  return { key, keyAlgorithm: checkKeyPolicy(key, info, exact?.rsa), exact: exact !== undefined };
}

/**
 * The SPKI in OpenSSL's encoding of the key, for keying it (CheckedCsr.spkiSha256). What exactJwk
 * reads is in that encoding already; a compressed point or an rsaEncryption without its NULL is not.
 * Asked only of a key that signed its CSR (the point at infinity, which OpenSSL reads, has no encoding).
 */
function canonicalSpki(info: PublicKeyInfo, key: KeyObject, exact: boolean): Buffer {
  if (exact) return info.der;
  try {
    // OpenSSL exports a point in the form it was read in; a key made from its JWK has the uncompressed form.
    const canonical = key.asymmetricKeyType === 'ec' ? createPublicKey({ key: key.export({ format: 'jwk' }), format: 'jwk' }) : key;
    return canonical.export({ type: 'spki', format: 'der' });
  } catch {
    throw fail('CSR_KEY_POLICY', 'the key of the CSR is neither EC P-256/P-384 nor RSA 2048/3072/4096.');
  }
}

/**
 * The SPKI's key as a JWK when nothing is lost: a P-256 or P-384 point in uncompressed form (0x04, x, y;
 * Node checks it is on the curve, as the DER import does), or an rsaEncryption key with its NULL whose
 * RSAPublicKey `rsaKey` (read once by importKey) is DER, with the RSA details the policy needs.
 */
function exactJwk(info: PublicKeyInfo, rsaKey: RsaPublicKey | undefined): { jwk: JsonWebKey; rsa?: RsaDetails } | undefined {
  const curve = info.algorithm === EC_PUBLIC_KEY && info.parameters !== undefined ? EC_CURVES[info.parameters] : undefined;
  if (curve) {
    const point = info.subjectPublicKey;
    const size = curve.coordinateOctets;
    if (point.length !== 1 + 2 * size || point[0] !== 0x04) return undefined;
    return { jwk: { kty: 'EC', crv: curve.crv, x: point.subarray(1, 1 + size).toString('base64url'), y: point.subarray(1 + size).toString('base64url') } };
  }
  if (!rsaKey || info.parameters !== DER_NULL) return undefined;
  const { modulus, exponent } = rsaKey;
  return {
    jwk: { kty: 'RSA', n: modulus.toString('base64url'), e: exponent.toString('base64url') },
    rsa: { modulusLength: (modulus.length - 1) * 8 + (32 - Math.clz32(modulus[0])), publicExponent: BigInt(`0x${exponent.toString('hex')}`) },
  };
}

interface RsaPublicKey {
  modulus: Buffer;
  exponent: Buffer;
}

/** RSAPublicKey ::= SEQUENCE { modulus INTEGER, publicExponent INTEGER }, in DER, both positive; else undefined. */
function rsaPublicKeyOf(subjectPublicKey: Buffer): RsaPublicKey | undefined {
  const [modulusBlock, exponentBlock, ...more] = sequenceItems(wholeDerElement(subjectPublicKey)) ?? [];
  const modulus = positiveInteger(modulusBlock);
  const exponent = positiveInteger(exponentBlock);
  return modulus && exponent && more.length === 0 ? { modulus, exponent } : undefined;
}

/** The big-endian octets of a positive INTEGER in DER, without the 0x00 before a set top bit; undefined for anything else. */
function positiveInteger(block: asn1js.AsnType | undefined): Buffer | undefined {
  if (!(block instanceof asn1js.Integer)) return undefined;
  const content = Buffer.from(block.valueBlock.valueHexView);
  if (content.length === 0 || content[0] & 0x80) return undefined;
  if (content[0] !== 0) return content;
  return content.length > 1 && content[1] & 0x80 ? content.subarray(1) : undefined;
}

/** The key's algorithm name (EC-P256 ... RSA-4096), or the CSR_KEY_POLICY refusal. RSA details from the SPKI when exactJwk read them, else from OpenSSL. */
function checkKeyPolicy(key: KeyObject, info: PublicKeyInfo, rsa?: RsaDetails): string {
  if (key.asymmetricKeyType === 'ec') {
    const named = info.parameters !== undefined && EC_CURVES[info.parameters];
    if (named) return named.keyAlgorithm;
    const details = key.asymmetricKeyDetails ?? {};
    const curve = CURVES[details.namedCurve ?? ''];
    if (!curve) throw fail('CSR_KEY_POLICY', `EC curve ${details.namedCurve} is not accepted; use P-256 or P-384.`);
    return `EC-${curve.replace('-', '')}`;
  }
  if (key.asymmetricKeyType === 'rsa') {
    const { modulusLength, publicExponent } = rsa ?? key.asymmetricKeyDetails ?? {};
    if (!RSA_SIZES.has(modulusLength ?? 0)) throw fail('CSR_KEY_POLICY', `RSA ${modulusLength} is not accepted; use 2048, 3072 or 4096 bits.`);
    if (publicExponent !== 65537n) throw fail('CSR_KEY_POLICY', 'the RSA public exponent must be 65537.');
    return `RSA-${modulusLength}`;
  }
  throw fail('CSR_KEY_POLICY', `${key.asymmetricKeyType} keys are not accepted; use EC P-256/P-384 or RSA.`);
}
