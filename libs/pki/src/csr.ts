import 'reflect-metadata';
import type { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { DomainError } from '@app/common';

/** Largest CSR accepted (CREDENTIAL-MANAGEMENT.md, "PKI"). */
const MAX_CSR_BYTES = 16 * 1024;
const STRONG_HASHES = new Set(['SHA-256', 'SHA-384', 'SHA-512']);
const RSA_SIZES = new Set([2048, 3072, 4096]);

const fail = (code: 'CSR_INVALID' | 'CSR_POP_INVALID' | 'CSR_KEY_POLICY', detail: string) => new DomainError('INVALID_VALUE', `${code}: ${detail}`);

/**
 * Reads a PKCS#10 CSR (PEM, base64 DER or DER) and checks it: parsable and at most 16 KiB
 * (CSR_INVALID), its signature proves possession of the key (CSR_POP_INVALID), signature hash
 * SHA-256 or stronger and key EC P-256/P-384 or RSA 2048/3072/4096 with e=65537 (CSR_KEY_POLICY).
 * Each failure is a 400 whose detail starts with the code. Subject and SANs of the CSR are ignored.
 */
export async function readCsr(input: string | Buffer): Promise<x509.Pkcs10CertificateRequest> {
  const size = typeof input === 'string' ? Buffer.byteLength(input) : input.length;
  if (size === 0 || size > MAX_CSR_BYTES) throw fail('CSR_INVALID', `the CSR must be 1 byte to ${MAX_CSR_BYTES / 1024} KiB, not ${size} bytes.`);
  let csr: x509.Pkcs10CertificateRequest;
  try {
    const der =
      typeof input !== 'string'
        ? input
        : input.includes('-----BEGIN')
          ? Buffer.from(x509.PemConverter.decodeFirst(input))
          : Buffer.from(input.trim(), 'base64');
    csr = new x509.Pkcs10CertificateRequest(der);
  } catch {
    throw fail('CSR_INVALID', 'the CSR is not a PKCS#10 certificate request in PEM, base64 DER or DER (openssl req -new makes one).');
  }
  const hash = (csr.signatureAlgorithm as { hash?: { name?: string } }).hash?.name;
  let key: webcrypto.CryptoKey;
  try {
    key = await csr.publicKey.export();
  } catch {
    throw fail('CSR_KEY_POLICY', 'the key of the CSR is neither EC P-256/P-384 nor RSA 2048/3072/4096.');
  }
  const algorithm = key.algorithm as { name: string; namedCurve?: string; modulusLength?: number; publicExponent?: Uint8Array };
  const verified = await csr.verify().catch(() => false);
  if (!verified) throw fail('CSR_POP_INVALID', 'the signature of the CSR does not verify with its own public key.');
  if (!hash || !STRONG_HASHES.has(hash)) throw fail('CSR_KEY_POLICY', `the CSR is signed with ${hash ?? 'an unknown hash'}; use SHA-256 or stronger.`);
  if (algorithm.name === 'ECDSA') {
    if (algorithm.namedCurve !== 'P-256' && algorithm.namedCurve !== 'P-384')
      throw fail('CSR_KEY_POLICY', `EC curve ${algorithm.namedCurve} is not accepted; use P-256 or P-384.`);
  } else if (algorithm.name.startsWith('RSA')) {
    const exponent = Buffer.from(algorithm.publicExponent ?? [])
      .toString('hex')
      .replace(/^0+/, '');
    if (!RSA_SIZES.has(algorithm.modulusLength ?? 0))
      throw fail('CSR_KEY_POLICY', `RSA ${algorithm.modulusLength} is not accepted; use 2048, 3072 or 4096 bits.`);
    if (exponent !== '10001') throw fail('CSR_KEY_POLICY', 'the RSA public exponent must be 65537.');
  } else {
    throw fail('CSR_KEY_POLICY', `${algorithm.name} keys are not accepted; use EC P-256/P-384 or RSA.`);
  }
  return csr;
}
