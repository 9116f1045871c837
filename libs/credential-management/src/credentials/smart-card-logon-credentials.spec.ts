import 'reflect-metadata';
import { randomBytes, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import type { Database } from '@app/persistence';
import { CertificateAuthority, OID } from '@app/pki';
import { SmartCardLogonCredentials } from './smart-card-logon-credentials';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const EC = { name: 'ECDSA', namedCurve: 'P-256' };
const SIGNING = { name: 'ECDSA', hash: 'SHA-256' };
const NOW = new Date('2026-11-27T12:00:00Z');

/**
 * The smart-card logon check's extended key usage rule (DECISIONS 14.1). The organization's CA issues
 * every leaf with smart-card logon today, so the end-to-end suite (test/login-smart-card) cannot make
 * one without it: here a CA of the test's own stands in for the organization's, every other rule
 * passing, so that the extended key usage alone decides.
 */
describe('SmartCardLogonCredentials: extended key usage', () => {
  let check: SmartCardLogonCredentials;
  let issue: (usages: string[] | undefined) => Promise<Buffer>;

  beforeAll(async () => {
    const caKeys = (await webcrypto.subtle.generateKey(EC, false, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
    const ca = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: '01',
      name: 'CN=Test Organization CA',
      notBefore: new Date(NOW.getTime() - 86_400_000),
      notAfter: new Date(NOW.getTime() + 365 * 86_400_000),
      keys: caKeys,
      signingAlgorithm: SIGNING,
      extensions: [new x509.BasicConstraintsExtension(true, 0, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true)],
    });
    const issued = new Map<string, Buffer>();
    issue = async (usages) => {
      const keys = (await webcrypto.subtle.generateKey(EC, false, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
      // Sixteen hex digits, the first 5: positive, so its DER has no leading zero to strip.
      const serial = `5${randomBytes(8).toString('hex').slice(1)}`;
      const leaf = await x509.X509CertificateGenerator.create({
        serialNumber: serial,
        issuer: ca.subject,
        subject: 'CN=ada',
        notBefore: new Date(NOW.getTime() - 3600_000),
        notAfter: new Date(NOW.getTime() + 30 * 86_400_000),
        publicKey: keys.publicKey,
        signingKey: caKeys.privateKey,
        signingAlgorithm: SIGNING,
        extensions: usages ? [new x509.ExtendedKeyUsageExtension(usages, false)] : [],
      });
      const der = Buffer.from(leaf.rawData);
      issued.set(serial, der);
      return der;
    };
    // Every rule but the extended key usage passes: the CA signed it, its record is good, one wallet holds it.
    const authority = {
      caCertificate: () => Promise.resolve(Buffer.from(ca.rawData)),
      generations: () => Promise.resolve([]),
      status: (_org: string, serial: string) => Promise.resolve(issued.has(serial) ? { status: 'good', der: issued.get(serial) } : undefined),
    } as unknown as CertificateAuthority;
    const db = { query: () => Promise.resolve([{ owner_user_id: 'user-ada' }]) } as unknown as Database;
    check = new SmartCardLogonCredentials(db, authority);
  });

  it('signs in the holder of a certificate that names smart-card logon (with client authentication, as the profile issues it)', async () => {
    const holder = await check.holderOf('org', await issue([OID.clientAuth, OID.smartcardLogon]), NOW);
    expect(holder).toEqual({ userId: 'user-ada', serial: expect.stringMatching(/^5[0-9a-f]{15}$/) });
  });

  it.each([
    ['client authentication alone', [OID.clientAuth]],
    ['e-mail protection alone', [OID.emailProtection]],
    ['no extended key usage extension at all', undefined],
  ])('refuses a certificate of the CA with %s', async (_name, usages) => {
    expect(await check.holderOf('org', await issue(usages), NOW)).toEqual({ refusal: 'not a smart-card logon certificate (extended key usage)' });
  });
});
