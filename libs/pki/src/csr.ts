import 'reflect-metadata';
import { KeyObject, constants, createHash, createPublicKey, verify } from 'node:crypto';
import { CertificationRequest } from '@peculiar/asn1-csr';
import { RsaSaPssParams } from '@peculiar/asn1-rsa';
import type { SubjectPublicKeyInfo } from '@peculiar/asn1-x509';
import { AsnConvert } from '@peculiar/asn1-schema';
import * as x509 from '@peculiar/x509';
import { DomainError } from '@app/common';

/** Largest CSR accepted (CREDENTIAL-MANAGEMENT.md, "PKI"). */
const MAX_CSR_BYTES = 16 * 1024;
const RSA_SIZES = new Set([2048, 3072, 4096]);
const CURVES: Record<string, string> = { prime256v1: 'P-256', secp384r1: 'P-384' };

/** CSR signature algorithms by OID: the hash, and whether it is strong enough (SHA-1 is read, to prove possession, then refused). */
const SIGNATURES: Record<string, { hash: string; strong: boolean; pss?: true }> = {
  '1.2.840.10045.4.1': { hash: 'SHA-1', strong: false },
  '1.2.840.10045.4.3.2': { hash: 'SHA-256', strong: true },
  '1.2.840.10045.4.3.3': { hash: 'SHA-384', strong: true },
  '1.2.840.10045.4.3.4': { hash: 'SHA-512', strong: true },
  '1.2.840.113549.1.1.5': { hash: 'SHA-1', strong: false },
  '1.2.840.113549.1.1.11': { hash: 'SHA-256', strong: true },
  '1.2.840.113549.1.1.12': { hash: 'SHA-384', strong: true },
  '1.2.840.113549.1.1.13': { hash: 'SHA-512', strong: true },
  '1.2.840.113549.1.1.10': { hash: 'PSS', strong: true, pss: true },
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
  /** SHA-256 of `spki`: the database's unique key on (CA, public key). */
  spkiSha256: Buffer;
  /** The key as CredentialPolicy.keyAlgorithms names it: EC-P256, EC-P384, RSA-2048, RSA-3072, RSA-4096. */
  keyAlgorithm: string;
  /** SHA-1 of the subjectPublicKey bits: the subject key identifier (RFC 5280 §4.2.1.2, method 1). */
  keyIdentifier: Buffer;
  rsa: boolean;
}

const fail = (code: 'CSR_INVALID' | 'CSR_POP_INVALID' | 'CSR_KEY_POLICY', detail: string) => new DomainError('INVALID_VALUE', `${code}: ${detail}`);

/**
 * Reads a PKCS#10 CSR (PEM, base64 DER or DER) and checks it: parsable and at most 16 KiB
 * (CSR_INVALID), key EC P-256/P-384 or RSA 2048/3072/4096 with e=65537 and signature hash SHA-256
 * or stronger (CSR_KEY_POLICY), its signature proves possession of the key (CSR_POP_INVALID).
 * Each failure is a 400 whose detail starts with the code. Subject and SANs of the CSR are ignored.
 * Read with the `@peculiar/asn1-csr` schema and checked with Node's crypto: the key is imported
 * once (an import costs a fifth of a millisecond) and the signature verified over the request info
 * exactly as it was sent.
 */
export function readCsr(input: string | Buffer): CheckedCsr {
  const size = typeof input === 'string' ? Buffer.byteLength(input) : input.length;
  if (size === 0 || size > MAX_CSR_BYTES) throw fail('CSR_INVALID', `the CSR must be 1 byte to ${MAX_CSR_BYTES / 1024} KiB, not ${size} bytes.`);
  let request: CertificationRequest;
  try {
    const der =
      typeof input !== 'string'
        ? input
        : input.includes('-----BEGIN')
          ? Buffer.from(x509.PemConverter.decodeFirst(input))
          : Buffer.from(input.trim(), 'base64');
    request = AsnConvert.parse(der, CertificationRequest);
    if (!request.certificationRequestInfoRaw) throw new Error('no request info');
  } catch {
    throw fail('CSR_INVALID', 'the CSR is not a PKCS#10 certificate request in PEM, base64 DER or DER (openssl req -new makes one).');
  }
  const info = request.certificationRequestInfo.subjectPKInfo;
  const spki = Buffer.from(AsnConvert.serialize(info));
  let key: KeyObject;
  try {
    key = createPublicKey({ key: spki, format: 'der', type: 'spki' });
  } catch {
    throw fail('CSR_KEY_POLICY', 'the key of the CSR is neither EC P-256/P-384 nor RSA 2048/3072/4096.');
  }
  const keyAlgorithm = checkKeyPolicy(key, info);
  const signature = signatureOf(request);
  if (!signature.strong) throw fail('CSR_KEY_POLICY', `the CSR is signed with ${signature.hash}; use SHA-256 or stronger.`);
  if (!verifies(request, key, signature)) throw fail('CSR_POP_INVALID', 'the signature of the CSR does not verify with its own public key.');
  return {
    spki,
    spkiSha256: createHash('sha256').update(spki).digest(),
    keyAlgorithm,
    keyIdentifier: createHash('sha1').update(Buffer.from(info.subjectPublicKey)).digest(),
    rsa: key.asymmetricKeyType === 'rsa',
  };
}

interface CsrSignature {
  hash: string;
  strong: boolean;
  pssSaltLength?: number;
}

function signatureOf(request: CertificationRequest): CsrSignature {
  const algorithm = request.signatureAlgorithm;
  const known = SIGNATURES[algorithm.algorithm];
  if (!known) return { hash: `signature algorithm ${algorithm.algorithm}`, strong: false };
  if (!known.pss) return known;
  try {
    const params = AsnConvert.parse(algorithm.parameters!, RsaSaPssParams);
    const hash = HASH_OIDS[params.hashAlgorithm.algorithm];
    if (!hash) return { hash: `hash ${params.hashAlgorithm.algorithm}`, strong: false };
    return { ...hash, pssSaltLength: params.saltLength };
  } catch {
    return { hash: 'RSA-PSS without readable parameters', strong: false };
  }
}

function verifies(request: CertificationRequest, key: KeyObject, signature: CsrSignature): boolean {
  const options = signature.pssSaltLength === undefined ? { key } : { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: signature.pssSaltLength };
  try {
    return verify(signature.hash, Buffer.from(request.certificationRequestInfoRaw!), options, Buffer.from(request.signature));
  } catch {
    return false;
  }
}

/**
 * The accepted named curves by their SubjectPublicKeyInfo parameters (the curve's OID, DER): the
 * curve OpenSSL read the key on, without asking OpenSSL for it (`asymmetricKeyDetails` costs 50-80 µs
 * per key, a percent of an issuance's CPU; issue 35).
 */
const EC_KEY_ALGORITHMS: Record<string, string> = {
  '06082a8648ce3d030107': 'EC-P256',
  '06052b81040022': 'EC-P384',
};

/** The key's algorithm name (EC-P256 ... RSA-4096), or the CSR_KEY_POLICY refusal. */
function checkKeyPolicy(key: KeyObject, info: SubjectPublicKeyInfo): string {
  if (key.asymmetricKeyType === 'ec') {
    const named = info.algorithm.parameters && EC_KEY_ALGORITHMS[Buffer.from(info.algorithm.parameters).toString('hex')];
    if (named) return named;
    const details = key.asymmetricKeyDetails ?? {};
    const curve = CURVES[details.namedCurve ?? ''];
    if (!curve) throw fail('CSR_KEY_POLICY', `EC curve ${details.namedCurve} is not accepted; use P-256 or P-384.`);
    return `EC-${curve.replace('-', '')}`;
  }
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'rsa') {
    if (!RSA_SIZES.has(details.modulusLength ?? 0)) throw fail('CSR_KEY_POLICY', `RSA ${details.modulusLength} is not accepted; use 2048, 3072 or 4096 bits.`);
    if (details.publicExponent !== 65537n) throw fail('CSR_KEY_POLICY', 'the RSA public exponent must be 65537.');
    return `RSA-${details.modulusLength}`;
  }
  throw fail('CSR_KEY_POLICY', `${key.asymmetricKeyType} keys are not accepted; use EC P-256/P-384 or RSA.`);
}
