import { spawnSync } from 'node:child_process';
import { X509Certificate, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CertificateAuthority, CertificateSubject } from '@app/pki';
import {
  IssuedPerson,
  TestApp,
  cookiePair,
  createAdminAndPlainAccounts,
  createIssuingOrganization,
  createOrganization,
  createPersonWithCard,
  createTestApp,
  hiddenField,
  openssl,
  opensslCsr,
  opensslVerified,
  platformAdminToken,
} from '@app/testing';

const SYSTEM = { name: 'ca-compromise-suite' };
const ORIGIN = 'https://auth.example.test';

/**
 * A CA generation believed compromised is revoked (issue 32 item 4; libs/pki README, "Revoking a
 * compromised CA generation"): its leaves revoked with cACompromise on its CRL and over OCSP (openssl
 * reads both), their credentials revoked and smart-card sessions ended as a device's revocation does,
 * issuance refused (409) until a renewal, after which new leaves verify under the new generation.
 */
describe('CA generation revocation (compromise)', () => {
  let t: TestApp;
  let authority: CertificateAuthority;
  let platformAdmin: string;
  let dir: string;

  const file = (name: string, content: string | Buffer) => {
    const path = join(dir, `${randomBytes(3).toString('hex')}-${name}`);
    writeFileSync(path, content);
    return path;
  };
  const pemOf = (der: Buffer) => `-----BEGIN CERTIFICATE-----\n${der.toString('base64')}\n-----END CERTIFICATE-----\n`;
  const serialOf = (pem: string) => new X509Certificate(pem).serialNumber.toLowerCase();
  /** openssl verify's verdict: `OK`, or the error it reports. */
  const verify = (certificate: string, ...options: string[]) => {
    const run = spawnSync('openssl', ['verify', ...options, certificate], { encoding: 'utf8' });
    return run.status === 0 ? run.stdout.trim().replace(`${certificate}: `, '') : `failed: ${run.stderr.trim()}`;
  };
  const subject = (): CertificateSubject => ({
    userId: '7d444840-9dc0-11d1-b245-5ffdce74fad2',
    userName: 'jane.doe',
    displayName: 'Jane Doe',
    email: null,
    userPrincipalName: null,
    objectSid: null,
  });
  const getBlob = async (path: string) => {
    const response = await t.bare.get(path).responseType('blob');
    expect({ path, status: response.status }).toEqual({ path, status: 200 });
    return response.body as Buffer;
  };
  const revoke = (org: string, generation: string | number, token: string | undefined, body: unknown = { reason: 'cACompromise' }) => {
    const request = t.http.post(`/admin/v1/organizations/${org}/ca/generations/${generation}/revocation`);
    if (token) request.auth(token, { type: 'bearer' });
    return request.send(body as object);
  };
  /** The CRL at `path`, read and verified by openssl against `caFile`: its text. */
  const crlText = async (path: string, caFile: string) => {
    const crl = file('crl.der', await getBlob(path));
    opensslVerified('crl', '-inform', 'DER', '-in', crl, '-CAfile', caFile, '-noout');
    return openssl('crl', '-inform', 'DER', '-in', crl, '-noout', '-text');
  };
  /** The revoked entry of `serial` in openssl's CRL text: its serial line and the lines of its entry up to the next serial. */
  const entryOf = (text: string, serial: string) => {
    const at = text.toUpperCase().indexOf(`SERIAL NUMBER: ${serial.toUpperCase()}`);
    if (at < 0) return undefined;
    const next = text.indexOf('Serial Number:', at + 10);
    return text.slice(at, next < 0 ? undefined : next);
  };
  /** openssl's OCSP verdict for `leaf` at /pki/{org}/ocsp (signature checked against `caFile`). */
  const ocsp = async (org: string, caFile: string, leaf: string) => {
    const request = join(dir, `${randomBytes(3).toString('hex')}-ocsp.req`);
    openssl('ocsp', '-issuer', caFile, '-cert', leaf, '-no_nonce', '-reqout', request);
    const response = await t.bare.post(`/pki/${org}/ocsp`).set('Content-Type', 'application/ocsp-request').send(readFileSync(request)).responseType('blob');
    expect(response.status).toBe(200);
    return opensslVerified(
      'ocsp',
      '-respin',
      file('ocsp.der', response.body as Buffer),
      '-issuer',
      caFile,
      '-cert',
      leaf,
      '-CAfile',
      caFile,
      '-no_nonce',
      '-resp_text',
    );
  };
  /** Signs `person` in at the hosted login page with their card; answers the session cookie. */
  const signInWithCard = async (org: string, person: IssuedPerson) => {
    const form = await t.bare.get(`/authentication/customer/${org}/login`);
    const formCookie = cookiePair(form.headers['set-cookie'], '__Host-Http-login-form')!;
    const answer = await t.bare
      .post(`/authentication/customer/${org}/login/certificate`)
      .set({ Cookie: formCookie, Origin: ORIGIN, 'X-Client-Certificate': encodeURIComponent(person.certificatePem!) })
      .type('form')
      .send({ form_token: hiddenField(form.text, 'form_token')! });
    const cookie = cookiePair(answer.headers['set-cookie'], '__Host-Http-session');
    expect(cookie).toBeDefined();
    return cookie!;
  };

  beforeAll(async () => {
    // The suite's requests come from the loopback address: here, the trusted proxy of smart-card sign-in.
    t = await createTestApp({ env: { TRUSTED_PROXIES: 'loopback', CLIENT_CERTIFICATE_FROM_PROXY: 'true' } });
    authority = t.app.get(CertificateAuthority);
    platformAdmin = await platformAdminToken(t.http);
    dir = join(process.env.TEST_RUN_DIR!, `ca-compromise-${randomBytes(4).toString('hex')}`);
    mkdirSync(dir, { recursive: true });
  }, 60_000);
  afterAll(() => t.close());

  it('revoking the current generation revokes its two leaves (CRL and OCSP say CA Compromise), their credentials and sessions; issuance is 409 until a renewal', async () => {
    const org = `cacomp_${randomBytes(3).toString('hex')}`;
    const {
      tokens: { helpdesk },
    } = await createIssuingOrganization(t, platformAdmin, org, { helpdesk: 'Help Desk' });
    const { orgAdminToken } = await createAdminAndPlainAccounts(t.http, platformAdmin, org);
    const ada = await createPersonWithCard(t, platformAdmin, org, 'ada', { smartCard: true, totp: false });
    const bob = await createPersonWithCard(t, platformAdmin, org, 'bob', { smartCard: true, totp: false });
    const serials = [serialOf(ada.certificatePem!), serialOf(bob.certificatePem!)];
    const ca1 = file('ca1.pem', pemOf(await getBlob(`/pki/${org}/ca.crt`)));
    const adaLeaf = file('ada.pem', ada.certificatePem!);
    expect(await ocsp(org, ca1, adaLeaf)).toContain(`${adaLeaf}: good`);
    const session = await signInWithCard(org, ada);

    // Bad input, and who may: nothing changes.
    expect((await revoke(org, 1, undefined)).status).toBe(401);
    const forbidden = await revoke(org, 1, helpdesk);
    expect(forbidden.status).toBe(403);
    const missing = await revoke(org, 1, orgAdminToken, {});
    expect({ status: missing.status, detail: missing.body.detail }).toEqual({ status: 400, detail: expect.stringContaining('reason') });
    expect(missing.body.detail).toContain('cACompromise');
    expect((await revoke(org, 1, orgAdminToken, { reason: 'keyCompromise' })).status).toBe(400);
    expect((await revoke(org, 1, orgAdminToken, { reason: 'cACompromise', extra: true })).status).toBe(400);
    const notANumber = await revoke(org, 'first', orgAdminToken);
    expect({ status: notANumber.status, detail: notANumber.body.detail }).toEqual({
      status: 404,
      detail: 'Nothing is named "first": the path parameter generation must be a number the service assigned, such as 12.',
    });
    const unknown = await revoke(org, 7, orgAdminToken);
    expect({ status: unknown.status, detail: unknown.body.detail }).toEqual({
      status: 404,
      detail: `The CA of "${org}" has no generation 7; GET /admin/v1/organizations/${org}/ca lists them.`,
    });
    expect((await revoke(`noca_${randomBytes(2).toString('hex')}`, 1, platformAdmin)).status).toBe(404);
    const untouched = await t.db.query("SELECT count(*)::int AS n FROM issued_certificates WHERE org_id = $1 AND status = 'good'", [org]);
    expect(untouched.rows[0].n).toBe(2);

    const revoked = await revoke(org, 1, orgAdminToken);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({
      generation: 1,
      reason: 'cACompromise',
      compromisedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      revokedCertificates: 2,
      crlsPublished: [1],
      certificateAuthority: { generation: 1, status: 'active', compromisedAt: revoked.body.compromisedAt },
    });

    // The CRL (published in the revocation's transaction) lists both serials with reason CA Compromise.
    const text = await crlText(`/pki/${org}/crl`, ca1);
    for (const serial of serials) expect(entryOf(text, serial)).toContain('CA Compromise');
    // OCSP: revoked, with the reason.
    const answer = await ocsp(org, ca1, adaLeaf);
    expect(answer).toContain(`${adaLeaf}: revoked`);
    expect(answer).toContain('Reason: cACompromise');
    expect(await ocsp(org, ca1, file('bob.pem', bob.certificatePem!))).toContain('Reason: cACompromise');

    // The credentials follow as they follow a device's revocation; the card's session ended.
    const credentials = await t.db.query(
      "SELECT certificate_serial, status, revocation_reason FROM credentials WHERE org_id = $1 AND type = 'PKI_CERTIFICATE' ORDER BY certificate_serial",
      [org],
    );
    expect(credentials.rows).toEqual(
      [...serials].sort().map((serial) => ({ certificate_serial: serial, status: 'REVOKED', revocation_reason: 'cACompromise' })),
    );
    const [ended] = (await t.db.query('SELECT end_reason, ended_at FROM sign_in_sessions WHERE user_id = $1', [ada.id])).rows;
    expect(ended).toMatchObject({ end_reason: 'certificate_revoked', ended_at: expect.any(Date) });
    expect((await t.bare.get(`/authentication/customer/${org}/login`).set('Cookie', session)).text).toContain('name="password"');
    const audit = await t.db.query<{ action: string; code: number; details: Record<string, unknown> }>(
      "SELECT action, code, details FROM audit_events WHERE org_id = $1 AND action IN ('ca.revoke', 'credential.revoke', 'session.end') ORDER BY id",
      [org],
    );
    expect(audit.rows.filter((r) => r.action === 'ca.revoke')).toEqual([
      { action: 'ca.revoke', code: 60009, details: { generation: 1, reason: 'cACompromise', current: true, revokedCertificates: 2 } },
    ]);
    expect(audit.rows.filter((r) => r.action === 'credential.revoke').map((r) => r.details)).toEqual([
      expect.objectContaining({ to: 'REVOKED', via: 'ca.revoke', reason: 'cACompromise' }),
      expect.objectContaining({ to: 'REVOKED', via: 'ca.revoke', reason: 'cACompromise' }),
    ]);
    expect(audit.rows.filter((r) => r.action === 'session.end').map((r) => r.details)).toEqual([
      expect.objectContaining({ reason: 'certificate_revoked', certificateSerial: serialOf(ada.certificatePem!) }),
    ]);

    // Twice: 409, nothing more.
    const again = await revoke(org, 1, platformAdmin);
    expect({ status: again.status, detail: again.body.detail }).toEqual({ status: 409, detail: expect.stringContaining('was revoked already') });

    // Issuance is refused until a renewal: the CA directly, and a content request over the API.
    const refusal = `Generation 1 of the CA of "${org}" was revoked as compromised at ${revoked.body.compromisedAt}; it issues nothing: a renewal is needed first (POST /admin/v1/organizations/${org}/ca/renewal).`;
    await expect(authority.issue(org, subject(), opensslCsr(dir), 'Acme Corp', SYSTEM)).rejects.toMatchObject({ code: 'CONFLICT', detail: refusal });
    await expect(createPersonWithCard(t, platformAdmin, org, 'dora', { smartCard: true, totp: false })).rejects.toThrow(
      /content request: 409 .*renewal is needed first/,
    );

    // The renewal: a new generation, linked by no cross-certificate to the compromised one.
    const renewed = await t.http.post(`/admin/v1/organizations/${org}/ca/renewal`).auth(orgAdminToken, { type: 'bearer' }).send({});
    expect(renewed.status).toBe(201);
    expect(renewed.body).toMatchObject({ generation: 2, status: 'active' });
    expect(renewed.body.compromisedAt).toBeUndefined();
    expect(renewed.body.previousGenerations).toEqual([expect.objectContaining({ generation: 1, compromisedAt: revoked.body.compromisedAt })]);
    expect(renewed.body.previousGenerations[0].crossCertificates).toBeUndefined();
    const chain = (await t.bare.get(`/pki/${org}/ca-chain.pem`)).text;
    expect(chain.match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
    const ca2 = file('ca2.pem', pemOf(await getBlob(`/pki/${org}/ca.crt`)));

    // Issuance works again, under generation 2: openssl verifies the new leaf with the new CA, not with the old one.
    const carl = await createPersonWithCard(t, platformAdmin, org, 'carl', { smartCard: true, totp: false });
    const carlLeaf = file('carl.pem', carl.certificatePem!);
    expect(verify(carlLeaf, '-CAfile', ca2)).toBe('OK');
    expect(verify(carlLeaf, '-CAfile', ca1, '-untrusted', file('chain.pem', chain))).toMatch(/^failed/);
    expect(await ocsp(org, ca2, carlLeaf)).toContain(`${carlLeaf}: good`);
    // The compromised generation's CRL still lists its leaves (signed by its key until they expire).
    const after = await crlText(`/pki/${org}/crl`, ca1);
    for (const serial of serials) expect(entryOf(after, serial)).toContain('CA Compromise');
  });

  it('revoking a retired generation puts the cross-certificate the current key signed for it on the current CRL (CA Compromise); the current generation keeps issuing', async () => {
    const org = `cacross_${randomBytes(3).toString('hex')}`;
    await createOrganization(t.http, platformAdmin, org);
    const { orgAdminToken, plainToken } = await createAdminAndPlainAccounts(t.http, platformAdmin, org);
    expect((await t.http.post(`/admin/v1/organizations/${org}/ca`).auth(orgAdminToken, { type: 'bearer' }).send({})).status).toBe(201);
    const ca1 = file('ca1.pem', pemOf(await getBlob(`/pki/${org}/ca.crt`)));
    const old = await authority.issue(org, subject(), opensslCsr(dir), 'Acme Corp', SYSTEM);
    const renewed = await t.http.post(`/admin/v1/organizations/${org}/ca/renewal`).auth(orgAdminToken, { type: 'bearer' }).send({});
    expect(renewed.status).toBe(201);
    const ca2 = file('ca2.pem', pemOf(await getBlob(`/pki/${org}/ca.crt`)));
    const oldWithNew = renewed.body.previousGenerations[0].crossCertificates.oldWithNew as string;
    const newWithOld = renewed.body.previousGenerations[0].crossCertificates.newWithOld as string;
    const current = await authority.issue(org, subject(), opensslCsr(dir), 'Acme Corp', SYSTEM);
    // Before: a relying party that trusts only generation 2 verifies generation 1's leaf through old-with-new.
    const oldLeaf = file('old.pem', pemOf(old.der));
    expect(verify(oldLeaf, '-CAfile', ca2, '-untrusted', file('own.pem', oldWithNew))).toBe('OK');

    expect((await revoke(org, 1, plainToken)).status).toBe(403);
    const revoked = await revoke(org, 1, orgAdminToken);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ generation: 1, revokedCertificates: 1, crlsPublished: [1, 2], certificateAuthority: { generation: 2 } });
    expect(revoked.body.certificateAuthority.compromisedAt).toBeUndefined();

    // Generation 2's CRL lists old-with-new (the compromised key certified by the current one): with it, that chain fails.
    const crl2 = await crlText(`/pki/${org}/crl/2`, ca2);
    expect(entryOf(crl2, serialOf(oldWithNew))).toContain('CA Compromise');
    expect(entryOf(crl2, serialOf(newWithOld))).toBeUndefined();
    expect(entryOf(crl2, current.serialNumber)).toBeUndefined();
    const crlPem = file('crl2.pem', openssl('crl', '-inform', 'DER', '-in', file('crl2.der', await getBlob(`/pki/${org}/crl/2`))));
    const crossFile = file('own.pem', oldWithNew);
    expect(verify(crossFile, '-CAfile', ca2)).toBe('OK');
    expect(verify(crossFile, '-CAfile', ca2, '-CRLfile', crlPem, '-crl_check')).toMatch(/^failed.*certificate revoked/s);
    // Generation 1's own CRL lists its leaf.
    expect(entryOf(await crlText(`/pki/${org}/crl`, ca1), old.serialNumber)).toContain('CA Compromise');
    // The chain offers no cross-certificate of the compromised generation any more.
    expect((await t.bare.get(`/pki/${org}/ca-chain.pem`)).text.match(/BEGIN CERTIFICATE/g)).toHaveLength(2);

    // The current generation was not compromised: it issues, and its leaf is good.
    const fresh = await authority.issue(org, subject(), opensslCsr(dir), 'Acme Corp', SYSTEM);
    const freshLeaf = file('fresh.pem', pemOf(fresh.der));
    expect(verify(freshLeaf, '-CAfile', ca2)).toBe('OK');
    expect(await ocsp(org, ca2, freshLeaf)).toContain(`${freshLeaf}: good`);
    expect((await revoke(org, 1, orgAdminToken)).status).toBe(409);
  });

  it('revoking the current generation after a renewal puts the new-with-old the previous key signed for it on the previous CRL', async () => {
    const org = `caprev_${randomBytes(3).toString('hex')}`;
    await createOrganization(t.http, platformAdmin, org);
    expect((await t.http.post(`/admin/v1/organizations/${org}/ca`).auth(platformAdmin, { type: 'bearer' }).send({})).status).toBe(201);
    const ca1 = file('ca1.pem', pemOf(await getBlob(`/pki/${org}/ca.crt`)));
    const old = await authority.issue(org, subject(), opensslCsr(dir), 'Acme Corp', SYSTEM);
    const renewed = await t.http.post(`/admin/v1/organizations/${org}/ca/renewal`).auth(platformAdmin, { type: 'bearer' }).send({});
    const newWithOld = renewed.body.previousGenerations[0].crossCertificates.newWithOld as string;
    const current = await authority.issue(org, subject(), opensslCsr(dir), 'Acme Corp', SYSTEM);

    // Two administrators at once: one revocation, the other 409 (decided under the CA row's lock).
    const both = await Promise.all([revoke(org, 2, platformAdmin), revoke(org, 2, platformAdmin)]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 409]);
    const revoked = both.find((r) => r.status === 200)!;
    expect(revoked.body).toMatchObject({ generation: 2, revokedCertificates: 1, crlsPublished: [1, 2] });
    expect((await t.db.query("SELECT count(*)::int AS n FROM audit_events WHERE org_id = $1 AND action = 'ca.revoke'", [org])).rows[0].n).toBe(1);
    const crl1 = await crlText(`/pki/${org}/crl`, ca1);
    expect(entryOf(crl1, serialOf(newWithOld))).toContain('CA Compromise');
    // Generation 1 was not compromised: its leaf stays good, off its CRL.
    expect(entryOf(crl1, old.serialNumber)).toBeUndefined();
    expect(await ocsp(org, ca1, file('old.pem', pemOf(old.der)))).toContain(': good');
    const ca2 = file('ca2.pem', pemOf(await getBlob(`/pki/${org}/ca/2.crt`)));
    expect(entryOf(await crlText(`/pki/${org}/crl/2`, ca2), current.serialNumber)).toContain('CA Compromise');
    await expect(authority.issue(org, subject(), opensslCsr(dir), 'Acme Corp', SYSTEM)).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('an issuance that read the CA before another instance revoked it is refused when the certificate is stored (the database decides, not the cached row)', async () => {
    const org = `castale_${randomBytes(3).toString('hex')}`;
    await createOrganization(t.http, platformAdmin, org);
    expect((await t.http.post(`/admin/v1/organizations/${org}/ca`).auth(platformAdmin, { type: 'bearer' }).send({})).status).toBe(201);
    // This instance now keeps the CA row in memory.
    await authority.issue(org, subject(), opensslCsr(dir), 'Acme Corp', SYSTEM);
    // Another instance's revocation, whose change notice this one has not heard yet.
    await t.db.query('UPDATE certification_authorities SET compromised_at = now() WHERE org_id = $1', [org]);
    await expect(authority.issue(org, subject(), opensslCsr(dir), 'Acme Corp', SYSTEM)).rejects.toMatchObject({
      code: 'CONFLICT',
      detail: expect.stringContaining(`Generation 1 of the CA of "${org}" was revoked as compromised`),
    });
    expect((await t.db.query('SELECT count(*)::int AS n FROM issued_certificates WHERE org_id = $1', [org])).rows[0].n).toBe(1);
  });
});
