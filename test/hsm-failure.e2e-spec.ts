import { createPublicKey, randomBytes, verify } from 'node:crypto';
import { KeyStore, Pkcs11Hsm, SignerUnavailableError } from '@app/hsm';
import { CertificateAuthority } from '@app/pki';
import { simulateModuleFailure } from '@app/hsm/testing';
import { ocspRequest as ocspRequestFor, p256Csr } from '@app/pki/testing';
import { TestApp, createTestApp, tokenRequest, PLATFORM_ADMIN_SECRET } from '@app/testing';

/** DECISIONS 12: an HSM module error at run time gives 503 with Retry-After, turns readiness red, and heals. */
describe('HSM failure at run time', () => {
  let t: TestApp;
  beforeAll(async () => {
    // Probe an idle HSM every second (default 10 s), for the last test.
    t = await createTestApp({ env: { HSM_HEALTH_CHECK_INTERVAL_S: '1' } });
  });
  afterAll(() => t.close());

  /** The signer reconnects in the background with backoff: polls readiness for up to 6 s. */
  const readyAgain = async () => {
    for (let i = 0; i < 60; i++) {
      if ((await t.http.get('/health/ready')).status === 200) return true;
      await new Promise((r) => setTimeout(r, 100));
    }
    return false;
  };

  const issue = () => tokenRequest(t.http, 'platform', { grant_type: 'client_credentials', client_id: 'platform-admin', client_secret: PLATFORM_ADMIN_SECRET });

  it.each(['sessions-closed', 'module-finalized'] as const)(
    'after %s: 503 temporarily_unavailable with Retry-After, ready 503, then recovers by itself',
    async (failure) => {
      expect((await issue()).status).toBe(200);
      simulateModuleFailure(t.app.get(Pkcs11Hsm), failure);

      const refused = await issue();
      expect(refused.status).toBe(503);
      expect(refused.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.stringMatching(/temporarily unavailable/) });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused.headers['cache-control']).toBe('no-store');

      const ready = await t.http.get('/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body).toEqual({ status: 'unavailable', checks: { database: 'ok', hsm: 'down' } });

      expect(await readyAgain()).toBe(true);
      expect((await issue()).status).toBe(200);
    },
  );

  it.each(['sessions-closed', 'module-finalized'] as const)(
    'a CA key sign meeting %s: SignerUnavailableError with Retry-After, ready 503, then the CA key and tokens are back by themselves',
    async (failure) => {
      const keyStore = t.app.get(KeyStore);
      const label = `CA_KEY/hsm-failure-${failure}`;
      const pair = await keyStore.generateKeyPair(label, 'EC-P256');
      const message = Buffer.from('tbsCertList');
      simulateModuleFailure(t.app.get(Pkcs11Hsm), failure);

      const refused: unknown = await keyStore.sign(label, message, { hash: 'SHA-256', encoding: 'der' }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(SignerUnavailableError);
      expect((refused as SignerUnavailableError).retryAfterSeconds).toBeGreaterThan(0);
      const ready = await t.http.get('/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body).toEqual({ status: 'unavailable', checks: { database: 'ok', hsm: 'down' } });
      const token = await issue();
      expect(token.status).toBe(503);
      expect(Number(token.headers['retry-after'])).toBeGreaterThan(0);

      expect(await readyAgain()).toBe(true);
      const signature = await keyStore.sign(label, message, { hash: 'SHA-256', encoding: 'der' });
      expect(verify('sha256', message, createPublicKey({ key: pair.publicKeySpki, format: 'der', type: 'spki' }), signature)).toBe(true);
      expect((await issue()).status).toBe(200);
    },
  );

  it('the CA signing over HTTP meets a module failure: OCSP with a nonce and issuance are 503 with Retry-After, then work again without a restart', async () => {
    const authority = t.app.get(CertificateAuthority);
    await authority.create('platform', {}, { name: 'test' });
    const caCertificate = (await t.bare.get('/pki/platform/ca.crt').responseType('blob')).body as Buffer;
    const csr = await p256Csr();
    const subject = { userId: '7d444840-9dc0-11d1-b245-5ffdce74fad2', userName: 'card.holder' };
    const issued = await authority.issue('platform', subject, csr, 'Platform', { name: 'test' });
    const ocspRequest = () => ocspRequestFor({ caCertificate, serial: issued.serialNumber, nonce: randomBytes(16) });
    const ocsp = () => t.bare.post('/pki/platform/ocsp').set('Content-Type', 'application/ocsp-request').send(ocspRequest());
    expect((await ocsp()).status).toBe(200);
    simulateModuleFailure(t.app.get(Pkcs11Hsm), 'sessions-closed');

    const refused = await ocsp();
    expect(refused.status).toBe(503);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.body.detail ?? refused.body.error_description).toMatch(/temporarily unavailable/i);
    const another = await authority.issue('platform', subject, csr, 'Platform', { name: 'test' }).catch((error: unknown) => error);
    expect(another).toBeInstanceOf(SignerUnavailableError);

    expect(await readyAgain()).toBe(true);
    expect((await ocsp()).status).toBe(200);
  });

  it('an HSM lost while the service is idle: readiness turns red with no request signing, then heals', async () => {
    expect((await t.http.get('/health/ready')).status).toBe(200);
    simulateModuleFailure(t.app.get(Pkcs11Hsm), 'sessions-closed');

    // Only readiness is asked: the probe sign after a second without signs is what notices.
    const statuses: number[] = [];
    for (let i = 0; i < 100 && statuses.at(-1) !== 503; i++) {
      await new Promise((r) => setTimeout(r, 50));
      statuses.push((await t.http.get('/health/ready')).status);
    }
    expect(statuses.at(-1)).toBe(503);
    for (let i = 0; i < 100 && statuses.at(-1) !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      statuses.push((await t.http.get('/health/ready')).status);
    }
    expect(statuses.at(-1)).toBe(200);
    expect((await issue()).status).toBe(200);
  });
});
