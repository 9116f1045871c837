import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AsnConvert } from '@peculiar/asn1-schema';
import { Certificate } from '@peculiar/asn1-x509';
import { CertificateAuthority, CertificateSubject } from '@app/pki';
import {
  TestApp,
  createAdminAndPlainAccounts,
  createOrganization,
  createSuiteDatabase,
  createTestApp,
  openssl,
  opensslCsr,
  opensslVerified,
  platformAdminToken,
  tokenBySecret,
} from '@app/testing';

const SYSTEM = { name: 'pki-suite' };

/**
 * The organization's issuing CA (Issue 13; CREDENTIAL-MANAGEMENT.md, "PKI"), proven with tools no
 * one here wrote: openssl parses and verifies the CA certificate, the issued certificates and the
 * CRLs, and makes the CSRs of every failure.
 */
describe('issuing CA', () => {
  let t: TestApp;
  let authority: CertificateAuthority;
  let org: string;
  let orgAdminToken: string;
  let dir: string;
  let caPem: string;

  const file = (name: string, content: string | Buffer) => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };
  /** POST /pki/{org}/ocsp with a DER request; the answer's body as bytes. */
  const postOcsp = (request: Buffer) => t.bare.post(`/pki/${org}/ocsp`).set('Content-Type', 'application/ocsp-request').send(request).responseType('blob');
  /** An issued certificate as a PEM file under a fresh name, for openssl. */
  const leafFile = (der: Buffer) =>
    file(`leaf-${randomBytes(3).toString('hex')}.pem`, `-----BEGIN CERTIFICATE-----\n${der.toString('base64')}\n-----END CERTIFICATE-----\n`);
  /** A CSR made by openssl req: a fresh key of `keyArgs`, the subject it asks for is ignored by the CA. */
  const csr = (keyArgs: string[], digest?: string, extra?: string[]) => opensslCsr(dir, { keyArgs, digest, extra });
  const p256 = () => csr(['ec', '-pkeyopt', 'ec_paramgen_curve:P-256']);
  const subject = (overrides: Partial<CertificateSubject> = {}): CertificateSubject => ({
    userId: '7d444840-9dc0-11d1-b245-5ffdce74fad2',
    userName: 'jane.doe',
    displayName: 'Jane Doe',
    email: 'jane.doe@example.com',
    userPrincipalName: 'jane.doe@corp.example.com',
    objectSid: 'S-1-5-21-1004336348-1177238915-682003330-512',
    ...overrides,
  });

  beforeAll(async () => {
    t = await createTestApp();
    authority = t.app.get(CertificateAuthority);
    const admin = await platformAdminToken(t.http);
    org = `pki_${randomBytes(3).toString('hex')}`;
    await createOrganization(t.http, admin, org);
    ({ orgAdminToken } = await createAdminAndPlainAccounts(t.http, admin, org));
    dir = join(process.env.TEST_RUN_DIR!, `pki-${randomBytes(4).toString('hex')}`);
    mkdirSync(dir, { recursive: true });
  });
  afterAll(() => t.close());

  it('POST .../ca creates a self-signed CA whose key is in the HSM (201); a second is 409; GET shows it; ca.crt is public DER that openssl verifies', async () => {
    const created = await t.http.post(`/admin/v1/organizations/${org}/ca`).auth(orgAdminToken, { type: 'bearer' }).send({ keyAlgorithm: 'EC-P256' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      status: 'active',
      mode: 'self-signed',
      keyAlgorithm: 'EC-P256',
      keyLabel: `CA_KEY/${org}`,
      subject: `CN=${org} Issuing CA`,
    });
    expect(created.body.certificate).toMatch(/^-----BEGIN CERTIFICATE-----/);
    const again = await t.http.post(`/admin/v1/organizations/${org}/ca`).auth(orgAdminToken, { type: 'bearer' }).send({});
    expect({ status: again.status, detail: again.body.detail }).toEqual({ status: 409, detail: expect.stringContaining('already has a CA') });
    expect((await t.http.get(`/admin/v1/organizations/${org}/ca`).auth(orgAdminToken, { type: 'bearer' })).body.certificate).toBe(created.body.certificate);

    const der = await t.bare.get(`/pki/${org}/ca.crt`).responseType('blob');
    expect({ status: der.status, type: der.headers['content-type'] }).toEqual({ status: 200, type: 'application/pkix-cert' });
    const caFile = file('ca.der', der.body as Buffer);
    caPem = openssl('x509', '-inform', 'DER', '-in', caFile);
    const caPemFile = file('ca.pem', caPem);
    expect(openssl('verify', '-CAfile', caPemFile, caPemFile).trim()).toBe(`${caPemFile}: OK`);
    const text = openssl('x509', '-in', caPemFile, '-noout', '-text');
    expect(text).toContain('CA:TRUE');
    expect(text).toMatch(/Certificate Sign, CRL Sign/);
    expect((await t.bare.get(`/pki/nobody_${randomBytes(2).toString('hex')}/ca.crt`)).status).toBe(404);
  });

  it('issues the smart-card logon profile from an openssl CSR: openssl verifies it against ca.crt; subject and SANs come from the user', async () => {
    const issued = await authority.issue(org, subject(), p256(), 'Acme Corp', SYSTEM);
    expect(issued.serialNumber).toMatch(/^[0-7][0-9a-f]{39}$/);
    const leaf = leafFile(issued.der);
    const caFile = file('ca-verify.pem', caPem);
    expect(openssl('verify', '-CAfile', caFile, leaf).trim()).toBe(`${leaf}: OK`);
    expect(openssl('verify', '-CAfile', caFile, '-purpose', 'sslclient', leaf).trim()).toBe(`${leaf}: OK`);
    const text = openssl('x509', '-in', leaf, '-noout', '-text');
    expect(text).toContain('Subject: CN = Jane Doe, O = Acme Corp');
    expect(text).not.toContain('asks-for-anything');
    expect(text).toMatch(/Basic Constraints: critical\s+CA:FALSE/);
    expect(text).toMatch(/Key Usage: critical\s+Digital Signature/);
    expect(text).toMatch(/TLS Web Client Authentication, Microsoft Smartcard Login, E-mail Protection/);
    expect(text).toMatch(/othername: UPN(::|:)jane\.doe@corp\.example\.com/);
    expect(text).toContain('email:jane.doe@example.com');
    expect(text).toContain('1.3.6.1.4.1.311.25.2');
    expect(text).toContain(`URI:https://api.example.test/pki/${org}/crl`);
    expect(text).toContain(`OCSP - URI:https://api.example.test/pki/${org}/ocsp`);
    expect(text).toContain(`CA Issuers - URI:https://api.example.test/pki/${org}/ca.crt`);
    expect(text).toContain('Subject Key Identifier');
    expect(text).toContain('Authority Key Identifier');
    expect(text).toContain('Signature Algorithm: ecdsa-with-SHA256');
  });

  it('names as users write them: UTF8String subjects with commas, a leading # and non-ASCII letters; no email means no emailProtection; AKI is the CA key id', async () => {
    const issued = await authority.issue(
      org,
      subject({ displayName: '#1 Müller, Zoë "Z"', email: null, userPrincipalName: null, objectSid: null }),
      p256(),
      'Acme, Inc.',
      SYSTEM,
    );
    const namesDer = file('names.der', issued.der);
    const names = openssl('x509', '-inform', 'DER', '-in', namesDer, '-noout', '-subject', '-nameopt', 'multiline,utf8,-esc_msb');
    expect(names).toContain('commonName                = #1 Müller, Zoë "Z"');
    expect(names).toContain('organizationName          = Acme, Inc.');
    const parsed = openssl('asn1parse', '-inform', 'DER', '-in', namesDer);
    expect(parsed).toMatch(/UTF8STRING\s+:#1 /);
    const text = openssl('x509', '-inform', 'DER', '-in', namesDer, '-noout', '-text');
    expect(text).toMatch(/TLS Web Client Authentication, Microsoft Smartcard Login\s*\n/);
    expect(text).toMatch(/othername: UPN(::|:)jane\.doe\n/);
    expect(text).not.toContain('1.3.6.1.4.1.311.25.2');
    const caKeyId = /Subject Key Identifier:\s*\n\s*([0-9A-F:]+)/.exec(openssl('x509', '-in', file('ca-names.pem', caPem), '-noout', '-text'))![1];
    expect(text).toMatch(new RegExp(`Authority Key Identifier:\\s*\\n\\s*(keyid:)?${caKeyId}`));
    expect(issued.subject).toContain('Acme');
    expect(issued.notAfter.getTime() % 1000).toBe(0);
  });

  it('refuses bad CSRs with the code first: CSR_INVALID, CSR_POP_INVALID, CSR_KEY_POLICY (curve, RSA size, SHA-1), CSR_KEY_REUSED', async () => {
    const refuse = (input: string | Buffer) => authority.issue(org, subject(), input, 'Acme Corp', SYSTEM);
    await expect(refuse('not a csr')).rejects.toMatchObject({ code: 'INVALID_VALUE', detail: expect.stringMatching(/^CSR_INVALID: /) });
    await expect(refuse('x'.repeat(17 * 1024))).rejects.toMatchObject({ detail: expect.stringMatching(/^CSR_INVALID: .*16 KiB/) });
    // A valid CSR whose signature is altered: possession of the key is not proven.
    const good = Buffer.from(
      p256()
        .replace(/-----[^-]+-----/g, '')
        .replace(/\s/g, ''),
      'base64',
    );
    good[good.length - 5] ^= 0xff;
    await expect(refuse(good)).rejects.toMatchObject({ detail: expect.stringMatching(/^CSR_POP_INVALID: /) });
    await expect(refuse(csr(['ec', '-pkeyopt', 'ec_paramgen_curve:P-521']))).rejects.toMatchObject({ detail: expect.stringMatching(/^CSR_KEY_POLICY: /) });
    await expect(refuse(csr(['ed25519']))).rejects.toMatchObject({ detail: expect.stringMatching(/^CSR_KEY_POLICY: ed25519 keys are not accepted/) });
    await expect(refuse(csr(['rsa:1024']))).rejects.toMatchObject({ detail: expect.stringMatching(/^CSR_KEY_POLICY: RSA 1024/) });
    await expect(refuse(csr(['ec', '-pkeyopt', 'ec_paramgen_curve:P-256'], '-sha1'))).rejects.toMatchObject({
      detail: expect.stringMatching(/^CSR_KEY_POLICY: .*SHA-1/),
    });
    const once = p256();
    await refuse(once);
    await expect(refuse(once)).rejects.toMatchObject({ detail: expect.stringMatching(/^CSR_KEY_REUSED: /) });
    // RSA 2048 is accepted, with keyEncipherment.
    const rsa = await refuse(csr(['rsa:2048']));
    const text = openssl('x509', '-inform', 'DER', '-in', file('rsa.der', rsa.der), '-noout', '-text');
    expect(text).toMatch(/Key Usage: critical\s+Digital Signature, Key Encipherment/);
    // A card that signs its request with RSA-PSS proves possession as well; a tampered PSS signature does not.
    const pss = csr(['rsa:2048'], '-sha256', ['-sigopt', 'rsa_padding_mode:pss', '-sigopt', 'rsa_pss_saltlen:32']);
    expect(openssl('req', '-in', file('pss.csr', pss), '-noout', '-text')).toContain('rsassaPss');
    expect((await refuse(pss)).der.length).toBeGreaterThan(0);
    const tampered = Buffer.from(pss.replace(/-----[^-]+-----/g, '').replace(/\s/g, ''), 'base64');
    tampered[tampered.length - 3] ^= 0x01;
    await expect(refuse(tampered)).rejects.toMatchObject({ detail: expect.stringMatching(/^CSR_POP_INVALID: /) });
  });

  it('parallel issuance never repeats a serial, and one public key is certified once even when asked twice at the same time', async () => {
    const csrs = Array.from({ length: 12 }, p256);
    const issued = await Promise.all(csrs.map((c) => authority.issue(org, subject(), c, 'Acme Corp', SYSTEM)));
    expect(new Set(issued.map((i) => i.serialNumber)).size).toBe(12);
    const same = p256();
    const outcomes = await Promise.allSettled([1, 2, 3].map(() => authority.issue(org, subject(), same, 'Acme Corp', SYSTEM)));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
  });

  it('revoke, hold and release go onto the CRL at once: openssl reads entries, reasons, increasing CRL numbers and a valid signature', async () => {
    const caFile = file('ca-crl.pem', caPem);
    const read = async () => {
      const response = await t.bare.get(`/pki/${org}/crl`).responseType('blob');
      expect({ status: response.status, type: response.headers['content-type'] }).toEqual({ status: 200, type: 'application/pkix-crl' });
      const path = file(`crl-${randomBytes(3).toString('hex')}.der`, response.body as Buffer);
      const text = openssl('crl', '-inform', 'DER', '-in', path, '-noout', '-text');
      opensslVerified('crl', '-inform', 'DER', '-in', path, '-CAfile', caFile, '-noout');
      // nextUpdate is thisUpdate + 7 days; HTTP caches may keep it, never past nextUpdate.
      const update = (label: string) => Date.parse(new RegExp(`${label}: (.+)`).exec(text)![1]);
      expect(update('Next Update') - update('Last Update')).toBe(7 * 86_400_000);
      expect(response.headers['cache-control']).toMatch(/^public, max-age=\d+$/);
      return { text, etag: response.headers.etag as string, number: Number(/X509v3 CRL Number:\s*\n?\s*(\d+)/.exec(text)?.[1]) };
    };
    const first = await read();
    const lost = await authority.issue(org, subject(), p256(), 'Acme Corp', SYSTEM);
    const held = await authority.issue(org, subject(), p256(), 'Acme Corp', SYSTEM);
    await authority.revoke(org, lost.serialNumber, 'keyCompromise', SYSTEM);
    await authority.hold(org, held.serialNumber, SYSTEM);
    const second = await read();
    expect(second.number).toBeGreaterThan(first.number);
    expect(second.etag).not.toBe(first.etag);
    expect(second.text).toContain('Version 2 (0x1)');
    expect(second.text).toContain('X509v3 Authority Key Identifier');
    expect(second.text).toMatch(/Next Update: /);
    expect(second.text.toUpperCase()).toContain(lost.serialNumber.toUpperCase());
    expect(second.text).toContain('Key Compromise');
    expect(second.text.toUpperCase()).toContain(held.serialNumber.toUpperCase());
    expect(second.text).toContain('Certificate Hold');
    await authority.release(org, held.serialNumber, SYSTEM);
    const third = await read();
    expect(third.number).toBeGreaterThan(second.number);
    expect(third.text.toUpperCase()).not.toContain(held.serialNumber.toUpperCase());
    expect(third.text.toUpperCase()).toContain(lost.serialNumber.toUpperCase());
    await expect(authority.release(org, lost.serialNumber, SYSTEM)).rejects.toMatchObject({ code: 'CONFLICT' });
    const notModified = await t.bare.get(`/pki/${org}/crl`).set('If-None-Match', third.etag);
    expect(notModified.status).toBe(304);
    const events = await t.db.query<{ code: number }>('SELECT code FROM audit_events WHERE org_id = $1 ORDER BY id', [org]);
    for (const code of [60001, 60002, 60003, 60004, 60005, 60006]) expect(events.rows.map((r) => r.code)).toContain(code);
  });

  it('OCSP by POST and GET: good, revoked with time and reason, held, unknown; the nonce is echoed and openssl verifies the signature', async () => {
    const caFile = file('ca-ocsp.pem', caPem);
    const good = leafFile((await authority.issue(org, subject(), p256(), 'Acme Corp', SYSTEM)).der);
    const stolen = await authority.issue(org, subject(), p256(), 'Acme Corp', SYSTEM);
    await authority.revoke(org, stolen.serialNumber, 'keyCompromise', SYSTEM);
    const held = await authority.issue(org, subject(), p256(), 'Acme Corp', SYSTEM);
    await authority.hold(org, held.serialNumber, SYSTEM);
    const ask = async (leaf: string, method: 'post' | 'get') => {
      const requestFile = join(dir, `req-${randomBytes(3).toString('hex')}.der`);
      openssl('ocsp', '-issuer', caFile, '-cert', leaf, '-reqout', requestFile);
      const request = readFileSync(requestFile);
      const response =
        method === 'post'
          ? await postOcsp(request)
          : await t.bare.get(`/pki/${org}/ocsp/${encodeURIComponent(request.toString('base64'))}`).responseType('blob');
      expect({ status: response.status, type: response.headers['content-type'] }).toEqual({ status: 200, type: 'application/ocsp-response' });
      const responseFile = file(`resp-${randomBytes(3).toString('hex')}.der`, response.body as Buffer);
      // The nonce the request carried is the nonce the response carries.
      const nonceOf = (text: string) => /OCSP Nonce:\s*\n\s*([0-9A-F]+)/.exec(text)?.[1];
      const sent = nonceOf(openssl('ocsp', '-reqin', requestFile, '-req_text'));
      // -no_nonce: openssl checks status and signature against a request it rebuilds from -cert; the echo is compared here.
      const answer = opensslVerified('ocsp', '-respin', responseFile, '-issuer', caFile, '-cert', leaf, '-CAfile', caFile, '-no_nonce', '-resp_text');
      expect(sent).toMatch(/^[0-9A-F]{20,}$/);
      expect(nonceOf(answer)).toBe(sent);
      return answer;
    };
    const goodAnswer = await ask(good, 'post');
    expect(goodAnswer).toContain(`${good}: good`);
    expect(await ask(good, 'get')).toContain(`${good}: good`);
    const revoked = await ask(leafFile(stolen.der), 'post');
    expect(revoked).toMatch(/: revoked/);
    expect(revoked).toContain('Reason: keyCompromise');
    expect(revoked).toMatch(/Revocation Time: /);
    expect(await ask(leafFile(held.der), 'get')).toContain('Reason: certificateHold');
    // A certificate of another issuer with this CA's name and key hashes: a serial it never issued is unknown.
    const otherKey = join(dir, 'other.key');
    const stranger = join(dir, 'stranger.pem');
    openssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      otherKey,
      '-out',
      stranger,
      '-subj',
      '/CN=stranger',
      '-days',
      '1',
    );
    const unknown = await ask(stranger, 'post');
    expect(unknown).toMatch(/: unknown/);
    const malformed = await postOcsp(Buffer.from('not der'));
    expect(malformed.status).toBe(200);
    const printed = spawnSync('openssl', ['ocsp', '-respin', file('malformed.der', malformed.body as Buffer), '-resp_text', '-noverify'], { encoding: 'utf8' });
    expect(`${printed.stdout}${printed.stderr}`).toMatch(/malformedrequest/i);
  });

  it('one OCSP request for several certificates answers each; more than 32 is malformedRequest; an organization without a CA is 404', async () => {
    const caFile = file('ca-ocsp-many.pem', caPem);
    const good = leafFile((await authority.issue(org, subject(), p256(), 'Acme Corp', SYSTEM)).der);
    const lost = await authority.issue(org, subject(), p256(), 'Acme Corp', SYSTEM);
    await authority.revoke(org, lost.serialNumber, 'superseded', SYSTEM);
    const revoked = leafFile(lost.der);
    const neverIssued = `0x${randomBytes(20)
      .toString('hex')
      .replace(/^[89a-f]/, '1')}`;
    const targets = ['-cert', good, '-cert', revoked, '-serial', neverIssued];
    const post = async (targetOptions: string[]) => {
      const requestFile = join(dir, `req-${randomBytes(3).toString('hex')}.der`);
      openssl('ocsp', '-issuer', caFile, ...targetOptions, '-no_nonce', '-reqout', requestFile);
      const response = await postOcsp(readFileSync(requestFile));
      expect(response.status).toBe(200);
      return file(`resp-${randomBytes(3).toString('hex')}.der`, response.body as Buffer);
    };
    const answer = opensslVerified('ocsp', '-respin', await post(targets), '-issuer', caFile, ...targets, '-CAfile', caFile, '-no_nonce');
    expect(answer).toContain(`${good}: good`);
    expect(answer).toContain(`${revoked}: revoked`);
    expect(answer).toContain('Reason: superseded');
    expect(answer).toContain(`${neverIssued}: unknown`);
    const many = Array.from({ length: 33 }, () => ['-serial', `0x${randomBytes(8).toString('hex')}`]).flat();
    const printed = spawnSync('openssl', ['ocsp', '-respin', await post(many), '-resp_text', '-noverify'], { encoding: 'utf8' });
    expect(`${printed.stdout}${printed.stderr}`).toMatch(/malformedrequest/i);
    const request = readFileSync(
      join(
        dir,
        readdirSync(dir).find((name) => name.startsWith('req-'))!,
      ),
    );
    const noCa = await t.bare
      .post(`/pki/nobody_${randomBytes(2).toString('hex')}/ocsp`)
      .set('Content-Type', 'application/ocsp-request')
      .send(request);
    expect({ status: noCa.status, detail: noCa.body.detail }).toEqual({ status: 404, detail: expect.stringContaining('has no active CA') });
  });

  it('an answer without a nonce is pre-produced and served again until the status changes, also on another instance (change feed); a nonce gets a fresh one', async () => {
    const second = await createTestApp({ databaseUrl: t.databaseUrl, shareHsmWith: t });
    try {
      const caFile = file('ca-ocsp-feed.pem', caPem);
      const issued = await authority.issue(org, subject(), p256(), 'Acme Corp', SYSTEM);
      const leaf = leafFile(issued.der);
      const requestFile = join(dir, `req-feed-${randomBytes(3).toString('hex')}.der`);
      openssl('ocsp', '-issuer', caFile, '-cert', leaf, '-no_nonce', '-reqout', requestFile);
      const status = async () => {
        const response = await postOcsp(readFileSync(requestFile));
        const responseFile = file(`resp-${randomBytes(3).toString('hex')}.der`, response.body as Buffer);
        const answer = opensslVerified('ocsp', '-respin', responseFile, '-issuer', caFile, '-cert', leaf, '-CAfile', caFile, '-no_nonce');
        last = response.body as Buffer;
        return /: (good|revoked|unknown)/.exec(answer)?.[1];
      };
      let last: Buffer = Buffer.alloc(0);
      expect(await status()).toBe('good');
      const first = last;
      expect(await status()).toBe('good');
      expect(last.equals(first)).toBe(true);
      // With a nonce (openssl adds one by default) every answer is signed afresh and echoes it.
      const withNonce = async () => {
        const nonceRequest = join(dir, `req-nonce-${randomBytes(3).toString('hex')}.der`);
        openssl('ocsp', '-issuer', caFile, '-cert', leaf, '-reqout', nonceRequest);
        const response = await postOcsp(readFileSync(nonceRequest));
        return response.body as Buffer;
      };
      const [a, b] = [await withNonce(), await withNonce()];
      expect(a.equals(b)).toBe(false);
      expect(a.equals(first)).toBe(false);
      await second.app.get(CertificateAuthority).revoke(org, issued.serialNumber, 'keyCompromise', SYSTEM);
      const deadline = Date.now() + 1000;
      let seen = await status();
      while (seen === 'good' && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        seen = await status();
      }
      expect(seen).toBe('revoked');
      expect(last.equals(first)).toBe(false);
    } finally {
      await second.close();
    }
  });

  it('the bootstrap organization gets a self-signed CA on first start (BOOTSTRAP_CA), once, also when two instances start together', async () => {
    const databaseUrl = await createSuiteDatabase();
    const [first, second] = await Promise.all([
      createTestApp({ databaseUrl, env: { BOOTSTRAP_CA: 'true' }, shareHsmWith: t }),
      createTestApp({ databaseUrl, env: { BOOTSTRAP_CA: 'true' }, shareHsmWith: t }),
    ]);
    try {
      const der = await first.bare.get('/pki/platform/ca.crt').responseType('blob');
      expect(der.status).toBe(200);
      expect(openssl('x509', '-inform', 'DER', '-in', file('platform-ca.der', der.body as Buffer), '-noout', '-subject').trim()).toBe(
        'subject=CN = platform Issuing CA',
      );
      const rows = await first.db.query("SELECT count(*)::int AS n FROM audit_events WHERE action = 'ca.create' AND org_id = 'platform'");
      expect(rows.rows[0].n).toBe(1);
      expect((await second.bare.get('/pki/platform/ca.crt').responseType('blob')).body).toEqual(der.body);
    } finally {
      await second.close();
      await first.close();
    }
  });

  it('the organization BOOTSTRAP_ORG_ID names gets its self-signed CA at first start too, once, also when two instances start together', async () => {
    const databaseUrl = await createSuiteDatabase();
    const bootOrg = `boot_${randomBytes(3).toString('hex')}`;
    const bootSecret = `boot-secret-${randomBytes(16).toString('hex')}`;
    const env = { BOOTSTRAP_CA: 'true', BOOTSTRAP_ORG_ID: bootOrg, BOOTSTRAP_CLIENT_SECRET: bootSecret };
    const caCreations = async (app: TestApp) =>
      (await app.db.query("SELECT org_id, count(*)::int AS n FROM audit_events WHERE action = 'ca.create' GROUP BY org_id ORDER BY org_id")).rows;
    const [first, second] = await Promise.all([createTestApp({ databaseUrl, env, shareHsmWith: t }), createTestApp({ databaseUrl, env, shareHsmWith: t })]);
    let der: Buffer;
    try {
      const answer = await first.bare.get(`/pki/${bootOrg}/ca.crt`).responseType('blob');
      expect({ status: answer.status, type: answer.headers['content-type'] }).toEqual({ status: 200, type: 'application/pkix-cert' });
      der = answer.body as Buffer;
      expect(openssl('x509', '-inform', 'DER', '-in', file(`${bootOrg}-ca.der`, der), '-noout', '-subject').trim()).toBe(`subject=CN = ${bootOrg} Issuing CA`);
      expect((await second.bare.get(`/pki/${bootOrg}/ca.crt`).responseType('blob')).body).toEqual(der);
      // Its administrator sees the CA, active, through the administration API.
      const token = await tokenBySecret(first.http, bootOrg, `${bootOrg}-admin`, bootSecret);
      const ca = await first.http.get(`/admin/v1/organizations/${bootOrg}/ca`).auth(token, { type: 'bearer' });
      expect({ status: ca.status, body: ca.body }).toEqual({
        status: 200,
        body: expect.objectContaining({ status: 'active', mode: 'self-signed', subject: `CN=${bootOrg} Issuing CA` }),
      });
      expect(await caCreations(first)).toEqual([
        { org_id: bootOrg, n: 1 },
        { org_id: 'platform', n: 1 },
      ]);
    } finally {
      await second.close();
      await first.close();
    }
    // A later start finds both CAs and creates none.
    const later = await createTestApp({ databaseUrl, env, shareHsmWith: t });
    try {
      expect((await later.bare.get(`/pki/${bootOrg}/ca.crt`).responseType('blob')).body).toEqual(der);
      expect(await caCreations(later)).toEqual([
        { org_id: bootOrg, n: 1 },
        { org_id: 'platform', n: 1 },
      ]);
    } finally {
      await later.close();
    }
  });

  it('two instances changing revocations at once never repeat a CRL number', async () => {
    const second = await createTestApp({ databaseUrl: t.databaseUrl, shareHsmWith: t });
    try {
      const serials = await Promise.all(
        Array.from({ length: 6 }, async () => (await authority.issue(org, subject(), p256(), 'Acme Corp', SYSTEM)).serialNumber),
      );
      const other = second.app.get(CertificateAuthority);
      await Promise.all(serials.map((serial, i) => (i % 2 === 0 ? authority : other).hold(org, serial, SYSTEM)));
      const numbers = await t.db.query<{ n: string }>(
        "SELECT details->>'crlNumber' AS n FROM audit_events WHERE org_id = $1 AND action = 'crl.publish' ORDER BY id",
        [org],
      );
      const published = numbers.rows.map((r) => Number(r.n));
      expect(new Set(published).size).toBe(published.length);
      expect(published.length).toBeGreaterThanOrEqual(6);
    } finally {
      await second.close();
    }
  });

  it('a revoked certificate leaves the CRL once it has expired (at the daily re-signing)', async () => {
    const expiring = await authority.issue(org, subject(), p256(), 'Acme Corp', SYSTEM);
    await authority.revoke(org, expiring.serialNumber, 'superseded', SYSTEM);
    const listed = await authority.crl(org);
    const caFile = file('ca-expiry.pem', caPem);
    const textOf = (der: Buffer) => openssl('crl', '-inform', 'DER', '-in', file(`crl-${randomBytes(3).toString('hex')}.der`, der), '-noout', '-text');
    expect(textOf(listed.der).toUpperCase()).toContain(expiring.serialNumber.toUpperCase());
    expect(textOf(listed.der)).toContain('Superseded');
    t.clock.advance(400 * 86_400);
    try {
      const later = await authority.crl(org);
      expect(Number(later.crl_number)).toBeGreaterThan(Number(listed.crl_number));
      expect(textOf(later.der).toUpperCase()).not.toContain(expiring.serialNumber.toUpperCase());
      opensslVerified('crl', '-inform', 'DER', '-in', file('later.der', later.der), '-CAfile', caFile, '-noout');
    } finally {
      t.clock.advance(-400 * 86_400);
    }
  });

  it("a subordinate CA: CSR out, the enterprise root's certificate in (checked), then certificates that openssl verifies up to the root", async () => {
    const sub = `pki_sub_${randomBytes(2).toString('hex')}`;
    const admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, sub);
    const created = await t.http
      .post(`/admin/v1/organizations/${sub}/ca`)
      .auth(admin, { type: 'bearer' })
      .send({ mode: 'subordinate', keyAlgorithm: 'EC-P384' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      status: 'awaiting-certificate',
      mode: 'subordinate',
      csr: expect.stringMatching(/^-----BEGIN CERTIFICATE REQUEST-----/),
    });
    expect(created.body.certificate).toBeUndefined();
    await expect(authority.issue(sub, subject(), p256(), 'Sub Corp', SYSTEM)).rejects.toMatchObject({
      code: 'CONFLICT',
      detail: expect.stringContaining('awaits its certificate'),
    });

    const rootKey = join(dir, 'root.key');
    const root = join(dir, 'root.pem');
    openssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-384',
      '-nodes',
      '-keyout',
      rootKey,
      '-out',
      root,
      '-subj',
      '/CN=Enterprise Root',
      '-days',
      '30',
    );
    const csrFile = file('sub.csr', created.body.csr);
    const sign = (extensions: string, name: string) => {
      const ext = file(`${name}.ext`, extensions);
      const out = join(dir, `${name}.pem`);
      openssl('x509', '-req', '-in', csrFile, '-CA', root, '-CAkey', rootKey, '-CAcreateserial', '-out', out, '-days', '20', '-sha384', '-extfile', ext);
      return readFileSync(out, 'utf8');
    };
    const notCa = sign('basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n', 'not-ca');
    const refused = await t.http
      .put(`/admin/v1/organizations/${sub}/ca/certificate`)
      .auth(admin, { type: 'bearer' })
      .set('Content-Type', 'application/x-pem-file')
      .send(notCa);
    expect({ status: refused.status, detail: refused.body.detail }).toEqual({ status: 400, detail: expect.stringContaining('not a CA certificate') });
    const foreign = readFileSync(root, 'utf8');
    const wrongKey = await t.http
      .put(`/admin/v1/organizations/${sub}/ca/certificate`)
      .auth(admin, { type: 'bearer' })
      .set('Content-Type', 'application/x-pem-file')
      .send(foreign);
    expect({ status: wrongKey.status, detail: wrongKey.body.detail }).toEqual({ status: 400, detail: expect.stringContaining('does not hold the public key') });
    const good = sign('basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash\n', 'sub-ca');
    const installed = await t.http
      .put(`/admin/v1/organizations/${sub}/ca/certificate`)
      .auth(admin, { type: 'bearer' })
      .set('Content-Type', 'application/x-pem-file')
      .send(good);
    expect(installed.status).toBe(200);
    expect(installed.body).toMatchObject({ status: 'active', mode: 'subordinate' });

    const leaf = await authority.issue(sub, subject(), p256(), 'Sub Corp', SYSTEM);
    const leafPem = leafFile(leaf.der);
    const subFile = file('sub-ca-installed.pem', good);
    expect(openssl('verify', '-CAfile', root, '-untrusted', subFile, leafPem).trim()).toBe(`${leafPem}: OK`);
    expect(openssl('x509', '-in', leafPem, '-noout', '-text')).toContain('Signature Algorithm: ecdsa-with-SHA384');
  });

  it('a root-signed CA certificate without a subject key identifier: leaves and CRLs name the CA by the SHA-1 of its key (RFC 5280 4.2.1.2)', async () => {
    const sub = `pki_noski_${randomBytes(2).toString('hex')}`;
    const admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, sub);
    const created = await authority.create(sub, { mode: 'subordinate' }, SYSTEM);
    const rootKey = join(dir, 'root-noski.key');
    const root = join(dir, 'root-noski.pem');
    openssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      rootKey,
      '-out',
      root,
      '-subj',
      '/CN=Plain Root',
      '-days',
      '30',
    );
    const csrFile = file('noski.csr', `-----BEGIN CERTIFICATE REQUEST-----\n${created.csr!.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`);
    const ext = file(
      'noski.ext',
      'basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=none\nauthorityKeyIdentifier=none\n',
    );
    const subPem = join(dir, 'noski.pem');
    openssl('x509', '-req', '-in', csrFile, '-CA', root, '-CAkey', rootKey, '-CAcreateserial', '-out', subPem, '-days', '20', '-sha256', '-extfile', ext);
    expect(openssl('x509', '-in', subPem, '-noout', '-text')).not.toContain('Subject Key Identifier');
    await authority.installCertificate(sub, readFileSync(subPem, 'utf8'), SYSTEM);

    const caDer = execFileSync('openssl', ['x509', '-in', subPem, '-outform', 'DER']);
    const subjectPublicKey = AsnConvert.parse(caDer, Certificate).tbsCertificate.subjectPublicKeyInfo.subjectPublicKey;
    const expected = createHash('sha1').update(Buffer.from(subjectPublicKey)).digest('hex').toUpperCase().match(/../g)!.join(':');
    const akiOf = (text: string) => /Authority Key Identifier:\s*\n\s*(?:keyid:)?([0-9A-F:]+)/.exec(text)?.[1];

    const leaf = await authority.issue(sub, subject(), p256(), 'Plain Corp', SYSTEM);
    const leafPem = leafFile(leaf.der);
    expect(akiOf(openssl('x509', '-in', leafPem, '-noout', '-text'))).toBe(expected);
    expect(openssl('verify', '-CAfile', root, '-untrusted', subPem, leafPem).trim()).toBe(`${leafPem}: OK`);
    await authority.revoke(sub, leaf.serialNumber, 'superseded', SYSTEM);
    const crl = file('noski-crl.der', (await authority.crl(sub)).der);
    expect(akiOf(openssl('crl', '-inform', 'DER', '-in', crl, '-noout', '-text'))).toBe(expected);
  });

  it('issuing without a CA is a 409 saying how to create one', async () => {
    const other = `pki_none_${randomBytes(2).toString('hex')}`;
    await expect(authority.issue(other, subject(), p256(), 'Nobody', SYSTEM)).rejects.toMatchObject({
      code: 'CONFLICT',
      detail: expect.stringContaining(`POST /admin/v1/organizations/${other}/ca`),
    });
  });
});
