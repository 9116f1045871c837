import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AsnConvert } from '@peculiar/asn1-schema';
import { Certificate } from '@peculiar/asn1-x509';
import { CertificateAuthority, CertificateSubject } from '@app/pki';
import { KeyStore } from '@app/hsm';
import {
  TestApp,
  createAdminAndPlainAccounts,
  createOrganization,
  createTestApp,
  openssl,
  opensslCsr,
  opensslVerified,
  platformAdminToken,
} from '@app/testing';

const SYSTEM = { name: 'ca-renewal-suite' };

/**
 * CA renewal per organization (issue 26 item 2; CREDENTIAL-MANAGEMENT.md, "PKI", renewal): a new
 * key and certificate issue while the old generation keeps signing its CRL and OCSP answers, and
 * cross-certificates let a relying party that trusts either generation verify both. openssl checks
 * every certificate, cross-certificate, CRL and OCSP answer.
 */
describe('CA renewal', () => {
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
  const issueLeaf = async (org: string) => {
    const issued = await authority.issue(org, subject(), opensslCsr(dir), 'Acme Corp', SYSTEM);
    return { ...issued, file: file('leaf.pem', pemOf(issued.der)) };
  };
  const getBlob = async (path: string) => {
    const response = await t.bare.get(path).responseType('blob');
    expect({ path, status: response.status }).toEqual({ path, status: 200 });
    return response.body as Buffer;
  };
  const caView = (org: string, token = platformAdmin) => t.http.get(`/admin/v1/organizations/${org}/ca`).auth(token, { type: 'bearer' });
  const renew = (org: string, token: string, body: object = {}) =>
    t.http.post(`/admin/v1/organizations/${org}/ca/renewal`).auth(token, { type: 'bearer' }).send(body);
  const install = (org: string, pem: string) =>
    t.http.put(`/admin/v1/organizations/${org}/ca/certificate`).auth(platformAdmin, { type: 'bearer' }).set('Content-Type', 'application/x-pem-file').send(pem);
  /** The SHA-1 of a certificate's subject public key: the OCSP ResponderID byKey of its key. */
  const keyHash = (der: Buffer) =>
    createHash('sha1')
      .update(Buffer.from(AsnConvert.parse(der, Certificate).tbsCertificate.subjectPublicKeyInfo.subjectPublicKey))
      .digest('hex')
      .toUpperCase();
  /** Asks /pki/{org}/ocsp about `leaf` (CertID of `issuer`) and has openssl verify the answer against `trusted`. */
  const ocsp = async (org: string, issuer: string, leaf: string, trusted = issuer) => {
    const request = join(dir, `${randomBytes(3).toString('hex')}-ocsp.req`);
    openssl('ocsp', '-issuer', issuer, '-cert', leaf, '-no_nonce', '-reqout', request);
    const response = await t.bare.post(`/pki/${org}/ocsp`).set('Content-Type', 'application/ocsp-request').send(readFileSync(request)).responseType('blob');
    expect(response.status).toBe(200);
    const answer = file('ocsp.der', response.body as Buffer);
    return opensslVerified('ocsp', '-respin', answer, '-issuer', issuer, '-cert', leaf, '-CAfile', trusted, '-no_nonce', '-resp_text');
  };

  beforeAll(async () => {
    t = await createTestApp();
    authority = t.app.get(CertificateAuthority);
    platformAdmin = await platformAdminToken(t.http);
    dir = join(process.env.TEST_RUN_DIR!, `ca-renewal-${randomBytes(4).toString('hex')}`);
    mkdirSync(dir, { recursive: true });
  });
  afterAll(() => t.close());

  it('a self-signed CA renews: both generations verify each other through the cross-certificates; each key signs its own CRL and OCSP answers', async () => {
    const org = `renew_${randomBytes(3).toString('hex')}`;
    await createOrganization(t.http, platformAdmin, org);
    const { orgAdminToken } = await createAdminAndPlainAccounts(t.http, platformAdmin, org);
    expect((await t.http.post(`/admin/v1/organizations/${org}/ca`).auth(orgAdminToken, { type: 'bearer' }).send({})).status).toBe(201);
    const ca1Der = await getBlob(`/pki/${org}/ca.crt`);
    const ca1 = file('ca1.pem', pemOf(ca1Der));
    const leaf1 = await issueLeaf(org);

    // The new generation may take another key algorithm: the cross-certificates then mix them.
    const renewed = await renew(org, orgAdminToken, { keyAlgorithm: 'EC-P384' });
    expect(renewed.status).toBe(201);
    expect(renewed.body).toMatchObject({
      status: 'active',
      generation: 2,
      keyAlgorithm: 'EC-P384',
      keyLabel: `CA_KEY/${org}/2`,
      subject: `CN=${org} Issuing CA`,
    });
    expect(renewed.body.previousGenerations).toEqual([
      expect.objectContaining({
        generation: 1,
        keyLabel: `CA_KEY/${org}`,
        certificate: expect.stringMatching(/^-----BEGIN CERTIFICATE-----/),
        lastCertificateExpires: leaf1.notAfter.toISOString(),
        crossCertificates: {
          oldWithNew: expect.stringMatching(/^-----BEGIN CERTIFICATE-----/),
          newWithOld: expect.stringMatching(/^-----BEGIN CERTIFICATE-----/),
        },
      }),
    ]);
    expect(await t.app.get(KeyStore).findKeyPair(`CA_KEY/${org}/2`)).toMatchObject({ algorithm: 'EC-P384' });

    // ca.crt is the current generation; each generation keeps its own path.
    const ca2Der = await getBlob(`/pki/${org}/ca.crt`);
    expect(ca2Der.equals(ca1Der)).toBe(false);
    expect((await getBlob(`/pki/${org}/ca/2.crt`)).equals(ca2Der)).toBe(true);
    expect((await getBlob(`/pki/${org}/ca/1.crt`)).equals(ca1Der)).toBe(true);
    expect((await t.bare.get(`/pki/${org}/ca/3.crt`)).status).toBe(404);
    const ca2 = file('ca2.pem', pemOf(ca2Der));
    const oldWithNew = file('old-with-new.pem', renewed.body.previousGenerations[0].crossCertificates.oldWithNew);
    const newWithOld = file('new-with-old.pem', renewed.body.previousGenerations[0].crossCertificates.newWithOld);

    const leaf2 = await issueLeaf(org);
    const generations = await t.db.query('SELECT serial, generation FROM issued_certificates WHERE org_id = $1 ORDER BY generation', [org]);
    expect(generations.rows).toEqual([
      { serial: leaf1.serialNumber, generation: 1 },
      { serial: leaf2.serialNumber, generation: 2 },
    ]);
    const leaf2Text = openssl('x509', '-in', leaf2.file, '-noout', '-text');
    expect(leaf2Text).toContain(`URI:https://api.example.test/pki/${org}/crl/2`);
    expect(leaf2Text).toContain('Signature Algorithm: ecdsa-with-SHA384');
    expect(leaf2Text).toContain(`CA Issuers - URI:https://api.example.test/pki/${org}/ca/2.crt`);
    expect(openssl('x509', '-in', leaf1.file, '-noout', '-text')).toContain(`URI:https://api.example.test/pki/${org}/crl\n`);

    // Each leaf under its own CA; under the other CA only with the cross-certificate as intermediate.
    expect(verify(leaf1.file, '-CAfile', ca1)).toBe('OK');
    expect(verify(leaf2.file, '-CAfile', ca2)).toBe('OK');
    expect(verify(leaf1.file, '-CAfile', ca2)).toMatch(/^failed/);
    expect(verify(leaf2.file, '-CAfile', ca1)).toMatch(/^failed/);
    expect(verify(leaf1.file, '-CAfile', ca2, '-untrusted', oldWithNew)).toBe('OK');
    expect(verify(leaf2.file, '-CAfile', ca1, '-untrusted', newWithOld)).toBe('OK');
    // The cross-certificates themselves, and the published chain as the only intermediates.
    expect(verify(oldWithNew, '-CAfile', ca2)).toBe('OK');
    expect(verify(newWithOld, '-CAfile', ca1)).toBe('OK');
    const chain = await t.bare.get(`/pki/${org}/ca-chain.pem`);
    expect({ status: chain.status, type: chain.headers['content-type'] }).toEqual({ status: 200, type: 'application/pem-certificate-chain' });
    expect(chain.text.match(/BEGIN CERTIFICATE/g)).toHaveLength(4);
    const chainFile = file('chain.pem', chain.text);
    expect(verify(leaf1.file, '-CAfile', ca2, '-untrusted', chainFile)).toBe('OK');
    expect(verify(leaf2.file, '-CAfile', ca1, '-untrusted', chainFile)).toBe('OK');

    // Revoking the old leaf lands on generation 1's CRL (/crl, its distribution point), not on 2's.
    await authority.revoke(org, leaf1.serialNumber, 'superseded', SYSTEM);
    const crl1 = file('crl1.der', await getBlob(`/pki/${org}/crl`));
    const crl2 = file('crl2.der', await getBlob(`/pki/${org}/crl/2`));
    expect(readFileSync(file('crl1-again.der', await getBlob(`/pki/${org}/crl/1`)))).toEqual(readFileSync(crl1));
    const crl1Text = opensslVerified('crl', '-inform', 'DER', '-in', crl1, '-CAfile', ca1, '-noout', '-text');
    const crl2Text = opensslVerified('crl', '-inform', 'DER', '-in', crl2, '-CAfile', ca2, '-noout', '-text');
    expect(crl1Text.toUpperCase()).toContain(leaf1.serialNumber.toUpperCase());
    expect(crl2Text.toUpperCase()).not.toContain(leaf1.serialNumber.toUpperCase());
    expect(spawnSync('openssl', ['crl', '-inform', 'DER', '-in', crl1, '-CAfile', ca2, '-noout'], { encoding: 'utf8' }).stderr).toContain('verify failure');
    expect(verify(leaf1.file, '-crl_check', '-CAfile', ca1, '-CRLfile', file('crl1.pem', openssl('crl', '-inform', 'DER', '-in', crl1)))).toMatch(
      /certificate revoked/,
    );
    // Revoking the new leaf lands on generation 2's.
    await authority.revoke(org, leaf2.serialNumber, 'keyCompromise', SYSTEM);
    const crl2After = file('crl2-after.der', await getBlob(`/pki/${org}/crl/2`));
    expect(opensslVerified('crl', '-inform', 'DER', '-in', crl2After, '-CAfile', ca2, '-noout', '-text').toUpperCase()).toContain(
      leaf2.serialNumber.toUpperCase(),
    );

    // OCSP: each answer signed by the key of the certificate's own generation.
    const old = await ocsp(org, ca1, leaf1.file);
    expect(old).toContain(`${leaf1.file}: revoked`);
    expect(old).toContain(`Responder Id: ${keyHash(ca1Der)}`);
    const current = await ocsp(org, ca2, leaf2.file);
    expect(current).toContain(`${leaf2.file}: revoked`);
    expect(current).toContain(`Responder Id: ${keyHash(ca2Der)}`);
    const fresh = await issueLeaf(org);
    expect(await ocsp(org, ca2, fresh.file)).toContain(`${fresh.file}: good`);
    // A CertID naming generation 1 for a generation 2 certificate is not one generation 1 issued.
    expect(await ocsp(org, ca1, fresh.file)).toContain(`${fresh.file}: unknown`);

    // Once every certificate generation 1 issued has expired, its key signs nothing more.
    t.clock.advance(400 * 86_400);
    try {
      const gone = await t.bare.get(`/pki/${org}/crl`);
      expect({ status: gone.status, detail: gone.body.detail }).toEqual({
        status: 404,
        detail: expect.stringContaining('has retired and every certificate it issued has expired'),
      });
      expect((await t.bare.get(`/pki/${org}/crl/2`)).status).toBe(200);
      // With a nonce: signed afresh, not the pre-produced answer kept up to 60 s (README, "OCSP").
      const request = join(dir, 'late-ocsp.req');
      openssl('ocsp', '-issuer', ca1, '-cert', leaf1.file, '-reqout', request);
      const late = await t.bare.post(`/pki/${org}/ocsp`).set('Content-Type', 'application/ocsp-request').send(readFileSync(request)).responseType('blob');
      const printed = openssl(
        'ocsp',
        '-respin',
        file('late.der', late.body as Buffer),
        '-issuer',
        ca1,
        '-cert',
        leaf1.file,
        '-noverify',
        '-resp_text',
        '-validity_period',
        String(500 * 86_400),
      );
      expect(printed).toContain(`${leaf1.file}: unknown`);
      expect(printed).toContain(`Responder Id: ${keyHash(ca2Der)}`);
    } finally {
      t.clock.advance(-400 * 86_400);
    }
  });

  it('a subordinate CA renews through a CSR for the enterprise root; the current generation issues until the certificate is installed', async () => {
    const org = `renew_sub_${randomBytes(2).toString('hex')}`;
    await createOrganization(t.http, platformAdmin, org);
    const created = await t.http.post(`/admin/v1/organizations/${org}/ca`).auth(platformAdmin, { type: 'bearer' }).send({ mode: 'subordinate' });
    expect(created.status).toBe(201);

    // A CA that awaits its enterprise certificate cannot renew: 409, nothing changed.
    const early = await renew(org, platformAdmin);
    expect({ status: early.status, detail: early.body.detail }).toEqual({ status: 409, detail: expect.stringContaining('awaits its certificate') });
    expect((await caView(org)).body).toEqual(created.body);
    expect(await t.app.get(KeyStore).findKeyPair(`CA_KEY/${org}/2`)).toBeUndefined();

    const rootKey = join(dir, `${org}-root.key`);
    const root = join(dir, `${org}-root.pem`);
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
      '/CN=Enterprise Root',
      '-days',
      '30',
    );
    const ext = file('sub.ext', 'basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash\n');
    const sign = (csrPem: string) => {
      const out = join(dir, `${randomBytes(3).toString('hex')}-sub.pem`);
      openssl(
        'x509',
        '-req',
        '-in',
        file('sub.csr', csrPem),
        '-CA',
        root,
        '-CAkey',
        rootKey,
        '-CAcreateserial',
        '-out',
        out,
        '-days',
        '20',
        '-sha256',
        '-extfile',
        ext,
      );
      return readFileSync(out, 'utf8');
    };
    const sub1 = sign(created.body.csr);
    expect((await install(org, sub1)).status).toBe(200);
    const leafA = await issueLeaf(org);

    const renewing = await renew(org, platformAdmin);
    expect(renewing.status).toBe(201);
    expect(renewing.body).toMatchObject({
      status: 'active',
      generation: 1,
      keyLabel: `CA_KEY/${org}`,
      renewal: {
        generation: 2,
        status: 'awaiting-certificate',
        keyLabel: `CA_KEY/${org}/2`,
        csr: expect.stringMatching(/^-----BEGIN CERTIFICATE REQUEST-----/),
      },
    });
    // Until the root's certificate comes, generation 1 issues.
    const leafB = await issueLeaf(org);
    const sub1File = file('sub1.pem', sub1);
    expect(verify(leafB.file, '-CAfile', root, '-untrusted', sub1File)).toBe('OK');

    // A second renewal while this one awaits its certificate: 409, nothing changed.
    const twice = await renew(org, platformAdmin);
    expect({ status: twice.status, detail: twice.body.detail }).toEqual({ status: 409, detail: expect.stringContaining('awaits its certificate') });
    expect((await caView(org)).body).toEqual(renewing.body);
    // A root-signed certificate for the wrong key (generation 1's): 400, nothing changed.
    const wrongKey = await install(org, sub1);
    expect({ status: wrongKey.status, detail: wrongKey.body.detail }).toEqual({
      status: 400,
      detail: expect.stringContaining(`does not hold the public key of the CA key in the HSM (CA_KEY/${org}/2)`),
    });
    expect((await caView(org)).body).toEqual(renewing.body);

    const sub2 = sign(renewing.body.renewal.csr);
    const installed = await install(org, sub2);
    expect(installed.status).toBe(200);
    expect(installed.body).toMatchObject({ status: 'active', generation: 2, keyLabel: `CA_KEY/${org}/2` });
    expect(installed.body.renewal).toBeUndefined();
    expect(installed.body.previousGenerations).toEqual([expect.objectContaining({ generation: 1, keyLabel: `CA_KEY/${org}` })]);
    const leafC = await issueLeaf(org);
    const sub2File = file('sub2.pem', sub2);
    expect(verify(leafC.file, '-CAfile', root, '-untrusted', sub2File)).toBe('OK');
    expect(verify(leafA.file, '-CAfile', root, '-untrusted', sub1File)).toBe('OK');
    // The generation-1 CA certificate still answers, and its key still signs OCSP for its leaves.
    const ca1 = file('sub-ca1.pem', pemOf(await getBlob(`/pki/${org}/ca/1.crt`)));
    expect(await ocsp(org, ca1, leafA.file)).toContain(`${leafA.file}: good`);
    expect(await ocsp(org, file('sub-ca2.pem', pemOf(await getBlob(`/pki/${org}/ca.crt`))), leafC.file)).toContain(`${leafC.file}: good`);
  });

  it('GET .../ca/generations lists the generations newest first, and answers an organization without a CA with an empty list (no 404 to provoke); administrators only', async () => {
    const org = `renew_list_${randomBytes(2).toString('hex')}`;
    await createOrganization(t.http, platformAdmin, org);
    const { plainToken, orgAdminToken } = await createAdminAndPlainAccounts(t.http, platformAdmin, org);
    const generations = (token = orgAdminToken) => t.http.get(`/admin/v1/organizations/${org}/ca/generations`).auth(token, { type: 'bearer' });
    const none = await generations();
    expect(none.status).toBe(200);
    expect(none.headers['content-type']).toMatch(/^application\/json/);
    expect(none.body).toMatchObject({ totalResults: 0, Resources: [] });
    expect((await t.http.get(`/admin/v1/organizations/${org}/ca/generations`)).status).toBe(401);
    expect((await generations(plainToken)).status).toBe(403);

    expect((await t.http.post(`/admin/v1/organizations/${org}/ca`).auth(orgAdminToken, { type: 'bearer' }).send({})).status).toBe(201);
    const first = (await caView(org)).body;
    const one = await generations();
    expect(one.body).toMatchObject({ totalResults: 1 });
    expect(one.body.Resources).toEqual([
      {
        generation: 1,
        status: 'active',
        mode: 'self-signed',
        keyAlgorithm: 'EC-P256',
        subject: `CN=${org} Issuing CA`,
        notAfter: first.notAfter,
        lastCrl: null,
      },
    ]);
    // Once a CRL is signed (a relying party fetched it), the list says when and when the next one is due.
    const crl = await t.http.get(`/pki/${org}/crl`);
    expect(crl.status).toBe(200);
    const signed = (await generations()).body.Resources[0].lastCrl;
    expect(signed).toEqual({ crlNumber: expect.stringMatching(/^\d+$/), thisUpdate: expect.any(String), nextUpdate: expect.any(String) });
    expect(new Date(signed.nextUpdate).getTime() - new Date(signed.thisUpdate).getTime()).toBe(7 * 86_400_000);
    expect(crl.headers['last-modified']).toBe(new Date(signed.thisUpdate).toUTCString());
    expect((await renew(org, orgAdminToken, { keyAlgorithm: 'EC-P384' })).status).toBe(201);
    const two = await generations();
    expect(two.body.Resources.map((g: { generation: number; status: string; keyAlgorithm: string }) => [g.generation, g.status, g.keyAlgorithm])).toEqual([
      [2, 'active', 'EC-P384'],
      [1, 'retired', 'EC-P256'],
    ]);
    expect(two.body.Resources[1].notAfter).toBe(first.notAfter);
  });

  it('bad input: no CA (404), not an administrator (403), unknown members (400): nothing changes', async () => {
    const org = `renew_bad_${randomBytes(2).toString('hex')}`;
    await createOrganization(t.http, platformAdmin, org);
    const { plainToken, orgAdminToken } = await createAdminAndPlainAccounts(t.http, platformAdmin, org);
    const none = await renew(org, orgAdminToken);
    expect({ status: none.status, detail: none.body.detail }).toEqual({
      status: 404,
      detail: expect.stringContaining(`POST /admin/v1/organizations/${org}/ca`),
    });
    expect(await t.app.get(KeyStore).findKeyPair(`CA_KEY/${org}/2`)).toBeUndefined();

    expect((await t.http.post(`/admin/v1/organizations/${org}/ca`).auth(orgAdminToken, { type: 'bearer' }).send({})).status).toBe(201);
    const before = (await caView(org)).body;
    const forbidden = await renew(org, plainToken);
    expect(forbidden.status).toBe(403);
    const unknown = await renew(org, orgAdminToken, { mode: 'subordinate' });
    expect({ status: unknown.status, detail: unknown.body.detail }).toEqual({ status: 400, detail: expect.stringContaining('mode') });
    const badAlgorithm = await renew(org, orgAdminToken, { keyAlgorithm: 'RSA-1024' });
    expect({ status: badAlgorithm.status, detail: badAlgorithm.body.detail }).toEqual({ status: 400, detail: expect.stringContaining('keyAlgorithm') });
    expect((await caView(org)).body).toEqual(before);
    expect(before.generation).toBe(1);
    expect(await t.app.get(KeyStore).findKeyPair(`CA_KEY/${org}/2`)).toBeUndefined();
    const audited = await t.db.query(
      "SELECT count(*)::int AS n FROM audit_events WHERE org_id = $1 AND action IN ('ca.renew', 'ca.rollover') AND outcome = 'success'",
      [org],
    );
    expect(audited.rows).toEqual([{ n: 0 }]);
  });
});
