import { KeyObject, scrypt } from 'node:crypto';
import { SignJWT } from 'jose';
import type { StoredCertificate } from '@app/accounts';
import { OAuthError } from '@app/common';
import type { AppConfig } from '@app/config';
import { FakeClock, TestCertificate, TestKeyType, makeCertificate } from '@app/testing';
import { AssertionVerifier } from './assertion-verifier';

/** The signature check of client and user assertions (DECISIONS 3.3). */
describe('AssertionVerifier.findSigner', () => {
  const clock = new FakeClock();
  const verifier = new AssertionVerifier(clock, { assertionClockSkewS: 30 } as AppConfig);
  const refuse = (description: string) => OAuthError.invalidClient(description);
  const certificates: Partial<Record<TestKeyType, TestCertificate>> = {};
  let otherRsa: TestCertificate;

  beforeAll(async () => {
    for (const keyType of ['EC-P256', 'EC-P384', 'RSA-2048'] as const) certificates[keyType] = await makeCertificate({ keyType });
    otherRsa = await makeCertificate({ keyType: 'RSA-2048' });
  });

  const tomorrow = new Date(Date.now() + 86_400_000);
  const stored = (certificate: TestCertificate): StoredCertificate => ({
    thumbprint: certificate.thumbprint,
    pem: certificate.pem,
    not_before: new Date(0),
    not_after: tomorrow,
    expires_at: tomorrow,
  });

  async function sign(certificate: TestCertificate, alg: string): Promise<string> {
    const now = Math.floor(clock.now().getTime() / 1000);
    // A WebCrypto key is bound to one algorithm; as a KeyObject the RSA key signs RS384, RS512 and PS256 too.
    return new SignJWT({ iss: 'acme-svc', sub: 'acme-svc', aud: 'https://auth.example.test/token', iat: now, exp: now + 300, jti: 'j'.repeat(32) })
      .setProtectedHeader({ alg })
      .sign(KeyObject.from(certificate.privateKey));
  }

  it.each([
    ['EC-P256', 'ES256'],
    ['EC-P384', 'ES384'],
    ['RSA-2048', 'RS256'],
    ['RSA-2048', 'RS384'],
    ['RSA-2048', 'RS512'],
    ['RSA-2048', 'PS256'],
  ] as const)('a %s key verifies %s; another key, a changed payload and a re-encoded signature do not', async (keyType, alg) => {
    const certificate = certificates[keyType]!;
    const jwt = await sign(certificate, alg);
    expect(verifier.findSigner(verifier.parse(jwt, refuse), [stored(certificate)])).toEqual(stored(certificate));
    const other = keyType === 'RSA-2048' ? otherRsa : certificates[keyType === 'EC-P256' ? 'EC-P384' : 'EC-P256']!;
    expect(verifier.findSigner(verifier.parse(jwt, refuse), [stored(other)])).toBeUndefined();
    const [header, payload, signature] = jwt.split('.');
    const changed = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), sub: 'acme-svc', iss: 'acme-svc', exp: 1 }));
    expect(verifier.findSigner(verifier.parse(`${header}.${changed.toString('base64url')}.${signature}`, refuse), [stored(certificate)])).toBeUndefined();
    // Only canonical unpadded base64url: the same bytes with padding or a stray character are refused.
    for (const variant of [`${signature}=`, `${signature.slice(0, 10)}~${signature.slice(10)}`]) {
      expect(verifier.findSigner(verifier.parse(`${header}.${payload}.${variant}`, refuse), [stored(certificate)])).toBeUndefined();
    }
  });

  it('verifies on the calling thread, never behind work queued on the libuv pool (a password flood fills it)', async () => {
    const certificate = certificates['EC-P256']!;
    const assertion = verifier.parse(await sign(certificate, 'ES256'), refuse);
    // Take every thread of the pool (UV_THREADPOOL_SIZE, default 4) with a hash, as scrypt password checks do.
    let poolTasksDone = 0;
    const poolThreads = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
    const poolTasks = Array.from(
      { length: poolThreads },
      () => new Promise<void>((resolve) => scrypt('flood', 'salt', 32, { N: 2 ** 14, r: 8, p: 1 }, () => (poolTasksDone++, resolve()))),
    );
    const signer = await verifier.findSigner(assertion, [stored(certificate)]);
    expect(signer?.thumbprint).toBe(certificate.thumbprint);
    expect(poolTasksDone).toBe(0);
    await Promise.all(poolTasks);
  });
});
