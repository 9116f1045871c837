import 'reflect-metadata';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes, webcrypto } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';

type CryptoKey = webcrypto.CryptoKey;
type Algorithm = webcrypto.Algorithm;
type EcdsaParams = webcrypto.EcdsaParams;
type EcKeyGenParams = webcrypto.EcKeyGenParams;
type RsaHashedKeyGenParams = webcrypto.RsaHashedKeyGenParams;

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export type TestKeyType = 'EC-P256' | 'EC-P384' | 'RSA-2048' | 'RSA-1024' | 'Ed25519';

export interface TestCertificate {
  pem: string;
  privateKey: CryptoKey;
  /** The JWS alg that fits the key. */
  alg: 'ES256' | 'ES384' | 'RS256' | 'EdDSA';
  thumbprint: string;
}

const ALGORITHMS: Record<
  TestKeyType,
  { generate: EcKeyGenParams | RsaHashedKeyGenParams | { name: string }; sign: Algorithm | EcdsaParams; alg: TestCertificate['alg'] }
> = {
  'EC-P256': { generate: { name: 'ECDSA', namedCurve: 'P-256' }, sign: { name: 'ECDSA', hash: 'SHA-256' } as EcdsaParams, alg: 'ES256' },
  'EC-P384': { generate: { name: 'ECDSA', namedCurve: 'P-384' }, sign: { name: 'ECDSA', hash: 'SHA-384' } as EcdsaParams, alg: 'ES384' },
  'RSA-2048': {
    generate: { name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
    sign: { name: 'RSASSA-PKCS1-v1_5' },
    alg: 'RS256',
  },
  'RSA-1024': {
    generate: { name: 'RSASSA-PKCS1-v1_5', modulusLength: 1024, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
    sign: { name: 'RSASSA-PKCS1-v1_5' },
    alg: 'RS256',
  },
  Ed25519: { generate: { name: 'Ed25519' }, sign: { name: 'Ed25519' }, alg: 'EdDSA' },
};

/** A self-signed certificate with a fresh key, valid from `notBefore` to `notAfter`. */
export async function makeCertificate(options: { keyType?: TestKeyType; notBefore?: Date; notAfter?: Date; subject?: string } = {}): Promise<TestCertificate> {
  const spec = ALGORITHMS[options.keyType ?? 'EC-P256'];
  const keys = (await webcrypto.subtle.generateKey(spec.generate as EcKeyGenParams, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const notBefore = options.notBefore ?? new Date(Date.now() - 3600_000);
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomBytes(8).toString('hex'),
    name: options.subject ?? `CN=test-client-${randomBytes(4).toString('hex')}, O=Example`,
    notBefore,
    notAfter: options.notAfter ?? new Date(notBefore.getTime() + 2 * 365 * 86_400_000),
    keys,
    signingAlgorithm: spec.sign,
  });
  const thumbprint = Buffer.from(await certificate.getThumbprint('SHA-256')).toString('base64url');
  return { pem: certificate.toString('pem'), privateKey: keys.privateKey, alg: spec.alg, thumbprint };
}

/** Runs openssl with `args`; its standard output (a non-zero exit throws, with what it printed). */
export function openssl(...args: string[]): string {
  return execFileSync('openssl', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * openssl crl/ocsp with -CAfile: its standard output, after checking the signature verdict it prints
 * on stderr ("verify OK", "Response verify OK"). It exits 0 on "verify failure" too, so the exit code
 * proves nothing.
 */
export function opensslVerified(...args: string[]): string {
  const run = spawnSync('openssl', args, { encoding: 'utf8' });
  expect({ status: run.status, verdict: run.stderr.trim() }).toEqual({ status: 0, verdict: args[0] === 'crl' ? 'verify OK' : 'Response verify OK' });
  return run.stdout;
}

/**
 * A PKCS#10 CSR made by `openssl req` in `dir`, PEM: a fresh key of `keyArgs` (default P-256), signed
 * with `digest`, plus `extra` arguments. The subject it asks for is one the CA ignores.
 */
export function opensslCsr(dir: string, { keyArgs = ['ec', '-pkeyopt', 'ec_paramgen_curve:P-256'], digest = '-sha256', extra = [] as string[] } = {}): string {
  const name = randomBytes(4).toString('hex');
  const csr = join(dir, `${name}.csr`);
  openssl('req', '-new', '-newkey', ...keyArgs, '-nodes', '-keyout', join(dir, `${name}.key`), '-out', csr, '-subj', '/CN=asks-for-anything', digest, ...extra);
  return readFileSync(csr, 'utf8');
}
