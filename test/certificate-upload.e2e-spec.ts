import { X509Certificate, createHash, randomBytes, webcrypto } from 'node:crypto';
import type { Response } from 'supertest';
import {
  TestApp,
  TestCertificate,
  TestKeyType,
  createOrganization,
  createSystemAccount,
  createTestApp,
  makeCertificate,
  platformAdminToken,
  signAssertion,
  tokenRequest,
  uploadCertificate,
  expectScimError,
} from '@app/testing';

/**
 * Certificate upload of DECISIONS 4 / 11 (`POST .../system-accounts/{clientId}/certificates`) and the
 * use of an uploaded certificate for client authentication with a signed JWT (DECISIONS 3.3).
 */

const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const LIST_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const DAY_MS = 86_400_000;

type BodyForm = 'pem-file' | 'text' | 'json';

describe('certificate upload (DECISIONS 4)', () => {
  let t: TestApp;
  let admin: string;
  let counter = 0;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());
  // A fresh platform-administrator token per test: one test moves the clock by a year.
  beforeEach(async () => {
    admin = await platformAdminToken(t.http);
  });

  /** A new organization with one system account (not an organization administrator). */
  async function newAccount(): Promise<{ org: string; clientId: string; tokenUrl: string }> {
    const org = `cert_${++counter}`;
    await createOrganization(t.http, admin, org);
    const account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
    expect(account.tokenUrl).toBe(`https://auth.example.test/authentication/customer/${org}/token`);
    return { org, clientId: account.clientId, tokenUrl: account.tokenUrl };
  }

  /** X.509 carries whole seconds; validity is relative to the service's (fake) clock. */
  function clockSeconds(offsetMs = 0): Date {
    return new Date(Math.floor((t.clock.now().getTime() + offsetMs) / 1000) * 1000);
  }

  function certificate(keyType: TestKeyType = 'EC-P256', validity: { notBefore?: Date; notAfter?: Date } = {}): Promise<TestCertificate> {
    const notBefore = validity.notBefore ?? clockSeconds(-3600_000);
    const notAfter = validity.notAfter ?? clockSeconds(2 * 365 * DAY_MS);
    return makeCertificate({ keyType, notBefore, notAfter, subject: `CN=client-${++counter}, O=Example` });
  }

  function path(org: string, clientId: string): string {
    return `/admin/v1/organizations/${org}/system-accounts/${clientId}/certificates`;
  }

  function upload(org: string, clientId: string, pem: string, form: BodyForm = 'pem-file') {
    const request = t.http.post(path(org, clientId)).auth(admin, { type: 'bearer' }).set('Application-ID', 'e2e.cert-tests').set('Application-Version', '1.0');
    if (form === 'json') return request.send({ pem });
    return request.set('Content-Type', form === 'pem-file' ? 'application/x-pem-file' : 'text/plain').send(pem);
  }

  /** A 400 refusal with a detail that says why; invalidValue, or invalidSyntax for what is not readable at all. */
  function expectRefusal(response: Response, why: RegExp): void {
    expect({ status: response.status, body: response.body }).toEqual({
      status: 400,
      body: { schemas: [SCIM_ERROR], status: '400', scimType: expect.stringMatching(/^invalid(Value|Syntax)$/), detail: expect.stringMatching(why) },
    });
  }

  /** The 201 body of DECISIONS 11, computed independently from the certificate itself. */
  function expectedView(cert: TestCertificate) {
    const x509 = new X509Certificate(cert.pem);
    const now = t.clock.now();
    return {
      id: createHash('sha256').update(x509.raw).digest('base64url'),
      subject: expect.stringContaining(x509.subject.split('\n').find((part) => part.startsWith('CN='))!),
      issuer: expect.stringContaining('O=Example'),
      serialNumber: expect.any(String),
      notBefore: new Date(x509.validFrom).toISOString(),
      notAfter: new Date(x509.validTo).toISOString(),
      expiresAt: expect.stringMatching(ISO_MS_UTC),
      created: now.toISOString(),
    };
  }

  /** The serial number as hexadecimal, compared without case, colons or leading zeros. */
  function expectSerial(serialNumber: string, cert: TestCertificate): void {
    const normalize = (value: string) => value.replace(/:/g, '').replace(/^0+/, '').toUpperCase();
    expect(serialNumber).toMatch(/^[0-9A-Fa-f:]+$/);
    expect(normalize(serialNumber)).toBe(normalize(new X509Certificate(cert.pem).serialNumber));
  }

  /** Credential expiry of DECISIONS 4: one year after upload, by the service's clock. */
  function expectOneYearAhead(expiresAt: string): void {
    const ahead = new Date(expiresAt).getTime() - t.clock.now().getTime();
    expect(ahead).toBeGreaterThanOrEqual(365 * DAY_MS);
    expect(ahead).toBeLessThanOrEqual(366 * DAY_MS);
  }

  async function assertionToken(cert: TestCertificate, org: string, clientId: string, tokenUrl: string) {
    const assertion = await signAssertion(cert, clientId, tokenUrl, { now: t.clock.now() });
    return tokenRequest(t.http, org, { grant_type: 'client_credentials', client_assertion_type: CLIENT_ASSERTION_TYPE, client_assertion: assertion });
  }

  describe('accepted forms', () => {
    it.each<[BodyForm, string]>([
      ['pem-file', 'application/x-pem-file'],
      ['text', 'text/plain'],
      ['json', 'JSON {pem}'],
    ])('%s (%s): 201 with id = x5t#S256 thumbprint, subject, issuer, serial, validity, expiry 1 year after upload', async (form) => {
      const { org, clientId } = await newAccount();
      const cert = await certificate();
      const response = await upload(org, clientId, cert.pem, form);
      expect(response.status).toBe(201);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.body).toEqual(expectedView(cert));
      expect(response.body.id).toBe(cert.thumbprint);
      expectSerial(response.body.serialNumber, cert);
      expectOneYearAhead(response.body.expiresAt);
    });

    it('a PEM with surrounding text and CRLF line ends is accepted', async () => {
      const { org, clientId } = await newAccount();
      const cert = await certificate('EC-P384');
      const response = await upload(org, clientId, `Subject: my client\r\n${cert.pem.replace(/\n/g, '\r\n')}\r\n`);
      expect(response.status).toBe(201);
      expect(response.body.id).toBe(cert.thumbprint);
    });

    it('GET .../certificates lists them as a ListResponse, without PEM material', async () => {
      const { org, clientId } = await newAccount();
      const certs = [await certificate('EC-P256'), await certificate('RSA-2048')];
      const views = [];
      for (const cert of certs) {
        const response = await upload(org, clientId, cert.pem);
        expect(response.status).toBe(201);
        views.push(response.body);
      }
      const list = await t.http.get(path(org, clientId)).auth(admin, { type: 'bearer' });
      expect(list.status).toBe(200);
      expect(list.headers['content-type']).toMatch(/^application\/json/);
      expect(list.body).toEqual({ schemas: [LIST_RESPONSE], totalResults: 2, itemsPerPage: 2, startIndex: 1, Resources: expect.any(Array) });
      expect([...list.body.Resources].sort((a, b) => a.id.localeCompare(b.id))).toEqual([...views].sort((a, b) => a.id.localeCompare(b.id)));
      const text = JSON.stringify(list.body);
      // No PEM armour and no `pem` attribute (ids are random base64url, so a bare /pem/i would match one now and then).
      expect(text).not.toMatch(/BEGIN|PRIVATE|"pem"/i);
      for (const cert of certs) expect(text).not.toContain(cert.pem.split('\n')[1]);
    });
  });

  describe('refusals: 400 saying why, never a 500', () => {
    async function pkcs8Pem(cert: TestCertificate): Promise<string> {
      const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', cert.privateKey));
      return `-----BEGIN PRIVATE KEY-----\n${der
        .toString('base64')
        .match(/.{1,64}/g)!
        .join('\n')}\n-----END PRIVATE KEY-----\n`;
    }

    it('an empty body: no certificate', async () => {
      const { org, clientId } = await newAccount();
      expectRefusal(await upload(org, clientId, ''), /no certificate/i);
      expectRefusal(await upload(org, clientId, '', 'text'), /no certificate/i);
      expectRefusal(await upload(org, clientId, '', 'json'), /no certificate/i);
    });

    it('two certificates in one upload: exactly one is accepted', async () => {
      const { org, clientId } = await newAccount();
      const [a, b] = [await certificate(), await certificate()];
      expectRefusal(await upload(org, clientId, `${a.pem}\n${b.pem}`), /exactly one|more than one|2 certificates/i);
    });

    it('a private key inside', async () => {
      const { org, clientId } = await newAccount();
      const cert = await certificate();
      expectRefusal(await upload(org, clientId, `${cert.pem}\n${await pkcs8Pem(cert)}`), /private key/i);
      expectRefusal(await upload(org, clientId, `${cert.pem}\n${await pkcs8Pem(cert)}`, 'json'), /private key/i);
    });

    it('not PEM: base64 DER without armour, or random text', async () => {
      const { org, clientId } = await newAccount();
      const cert = await certificate();
      const der = new X509Certificate(cert.pem).raw;
      expectRefusal(await upload(org, clientId, der.toString('base64')), /not PEM/i);
      expectRefusal(await upload(org, clientId, 'hello, this is certainly not a certificate'), /not PEM/i);
      expectRefusal(await upload(org, clientId, 'hello, this is certainly not a certificate', 'text'), /not PEM/i);
    });

    it('unparsable: PEM armour around garbage', async () => {
      const { org, clientId } = await newAccount();
      const garbage = `-----BEGIN CERTIFICATE-----\n${randomBytes(300)
        .toString('base64')
        .match(/.{1,64}/g)!
        .join('\n')}\n-----END CERTIFICATE-----\n`;
      expectRefusal(await upload(org, clientId, garbage), /pars/i);
      expectRefusal(await upload(org, clientId, '-----BEGIN CERTIFICATE-----\nTm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n'), /pars/i);
    });

    it('an already expired certificate', async () => {
      const { org, clientId } = await newAccount();
      const cert = await certificate('EC-P256', { notBefore: clockSeconds(-400 * DAY_MS), notAfter: clockSeconds(-DAY_MS) });
      expectRefusal(await upload(org, clientId, cert.pem), /expired/i);
    });

    it('RSA under 2048 bits (RSA-1024)', async () => {
      const { org, clientId } = await newAccount();
      const cert = await certificate('RSA-1024');
      expectRefusal(await upload(org, clientId, cert.pem), /2048/);
    });

    it('an unsupported key type (Ed25519)', async () => {
      const { org, clientId } = await newAccount();
      const cert = await certificate('Ed25519');
      expectRefusal(await upload(org, clientId, cert.pem), /not supported|unsupported/i);
    });

    it('JSON with an unknown attribute, or pem not a string', async () => {
      const { org, clientId } = await newAccount();
      const cert = await certificate();
      const unknown = await t.http.post(path(org, clientId)).auth(admin, { type: 'bearer' }).send({ pem: cert.pem, format: 'pem' });
      expectScimError(unknown, 400, 'invalidValue', /format/);
      const notString = await t.http.post(path(org, clientId)).auth(admin, { type: 'bearer' }).send({ pem: 42 });
      expectScimError(notString, 400, 'invalidValue', /pem/);
    });

    it('a refused upload stores nothing', async () => {
      const { org, clientId } = await newAccount();
      const cert = await certificate('RSA-1024');
      expect((await upload(org, clientId, cert.pem)).status).toBe(400);
      const list = await t.http.get(path(org, clientId)).auth(admin, { type: 'bearer' });
      expect(list.body).toEqual({ schemas: [LIST_RESPONSE], totalResults: 0, itemsPerPage: 0, startIndex: 1, Resources: [] });
    });
  });

  describe('limits and uniqueness', () => {
    it('a 6th certificate is a 409 (at most 5 per account)', async () => {
      const { org, clientId } = await newAccount();
      for (let i = 0; i < 5; i++) expect((await upload(org, clientId, (await certificate()).pem)).status).toBe(201);
      const sixth = await upload(org, clientId, (await certificate()).pem);
      expect(sixth.status).toBe(409);
      expect(sixth.body).toEqual({
        schemas: [SCIM_ERROR],
        status: '409',
        ...(sixth.body.scimType ? { scimType: sixth.body.scimType } : {}),
        detail: expect.stringMatching(/5/),
      });
      const list = await t.http.get(path(org, clientId)).auth(admin, { type: 'bearer' });
      expect(list.body.totalResults).toBe(5);
    });

    it('the same certificate again while active is a 409 uniqueness', async () => {
      const { org, clientId } = await newAccount();
      const cert = await certificate();
      expect((await upload(org, clientId, cert.pem)).status).toBe(201);
      expectScimError(await upload(org, clientId, cert.pem, 'json'), 409, 'uniqueness', /\S/);
      const list = await t.http.get(path(org, clientId)).auth(admin, { type: 'bearer' });
      expect(list.body.totalResults).toBe(1);
    });

    it('one certificate may be uploaded to two different accounts', async () => {
      const first = await newAccount();
      const second = await newAccount();
      const cert = await certificate();
      expect((await upload(first.org, first.clientId, cert.pem)).status).toBe(201);
      expect((await upload(second.org, second.clientId, cert.pem)).status).toBe(201);
    });
  });

  describe('who may upload', () => {
    it('401 without a token, 403 for a non-administrator, 404 for another organization or an unknown account', async () => {
      const { org, clientId } = await newAccount();
      const cert = await certificate();
      const anonymous = await t.http.post(path(org, clientId)).set('Content-Type', 'application/x-pem-file').send(cert.pem);
      expectScimError(anonymous, 401, undefined, /\S/);
      expect(anonymous.headers['www-authenticate']).toMatch(/^Bearer/);

      const plain = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
      const plainToken = (await tokenRequest(t.http, org, { grant_type: 'client_credentials', client_id: plain.clientId, client_secret: plain.secret })).body
        .access_token;
      expectScimError(await uploadCertificate(t.http, plainToken, org, clientId, cert.pem), 403, undefined, /administrator/i);

      const other = await newAccount();
      const otherAdmin = await createSystemAccount(t.http, admin, other.org, { role: 'Administration', organizationAdministrator: true });
      const otherToken = (
        await tokenRequest(t.http, other.org, { grant_type: 'client_credentials', client_id: otherAdmin.clientId, client_secret: otherAdmin.secret })
      ).body.access_token;
      expectScimError(await uploadCertificate(t.http, otherToken, org, clientId, cert.pem), 404, undefined, /\S/);
      expectScimError(await t.http.get(path(org, clientId)).auth(otherToken, { type: 'bearer' }), 404, undefined, /\S/);

      expectScimError(await upload(org, `${org}-nobody`, cert.pem), 404, undefined, /\S/);

      const list = await t.http.get(path(org, clientId)).auth(admin, { type: 'bearer' });
      expect(list.body.totalResults).toBe(0);
    });
  });

  describe('use for client authentication (RFC 7523)', () => {
    it.each<TestKeyType>(['EC-P256', 'EC-P384', 'RSA-2048'])('a client_assertion signed with the %s key gets a token', async (keyType) => {
      const { org, clientId, tokenUrl } = await newAccount();
      const cert = await certificate(keyType);
      expect((await upload(org, clientId, cert.pem)).status).toBe(201);
      const response = await assertionToken(cert, org, clientId, tokenUrl);
      expect(response.status).toBe(200);
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.body).toEqual({ access_token: expect.any(String), id_token: expect.any(String), token_type: 'Bearer', expires_in: 3600 });
      const whoami = await t.http.get(`/authentication/customer/${org}/whoami`).auth(response.body.access_token, { type: 'bearer' });
      expect(whoami.status).toBe(200);
      expect(whoami.body).toMatchObject({ clientId, org });
    });

    it('an assertion signed by a key whose certificate was not uploaded is refused', async () => {
      const { org, clientId, tokenUrl } = await newAccount();
      expect((await upload(org, clientId, (await certificate()).pem)).status).toBe(201);
      const response = await assertionToken(await certificate(), org, clientId, tokenUrl);
      expect(response.status).toBe(401);
      expect(response.body).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
    });

    it('after the credential expiry (1 year) the assertion is refused; re-uploading the same certificate restores function', async () => {
      const { org, clientId, tokenUrl } = await newAccount();
      // Valid for 3 years, so only the credential expiry, not the certificate's notAfter, is passed.
      const cert = await certificate('EC-P256', { notAfter: clockSeconds(3 * 365 * DAY_MS) });
      const uploaded = await upload(org, clientId, cert.pem);
      expect(uploaded.status).toBe(201);
      expect((await assertionToken(cert, org, clientId, tokenUrl)).status).toBe(200);

      t.clock.advance(366 * 86_400);
      admin = await platformAdminToken(t.http);
      const refused = await assertionToken(cert, org, clientId, tokenUrl);
      expect(refused.status).toBe(401);
      expect(refused.body).toEqual({ error: 'invalid_client', error_description: expect.stringMatching(/re-?upload|expir/i) });

      const reuploaded = await upload(org, clientId, cert.pem);
      expect(reuploaded.status).toBe(201);
      expect(reuploaded.body).toEqual(expectedView(cert));
      expectOneYearAhead(reuploaded.body.expiresAt);
      expect(new Date(reuploaded.body.expiresAt).getTime()).toBeGreaterThan(new Date(uploaded.body.expiresAt).getTime());

      const restored = await assertionToken(cert, org, clientId, tokenUrl);
      expect(restored.status).toBe(200);
      expect(restored.body.token_type).toBe('Bearer');
      const list = await t.http.get(path(org, clientId)).auth(admin, { type: 'bearer' });
      expect(list.body.totalResults).toBe(1);
    });
  });
});
