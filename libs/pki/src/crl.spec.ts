import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, sign, webcrypto } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import { CertificateList } from '@peculiar/asn1-x509';
import * as x509 from '@peculiar/x509';
import { CRL_REASON_CODES, encodeTbsCertList, type TbsCertListContent } from './crl';
import { signedEnvelope } from './der';
import { SIGNATURE_ALGORITHMS } from './profile';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const issuer = Buffer.from(new x509.Name('CN=Spec Issuing CA, O=Spec').toArrayBuffer());
const algorithm = SIGNATURE_ALGORITHMS['EC-P256'];

function signed(content: Partial<TbsCertListContent>): Buffer {
  const tbs = encodeTbsCertList({
    signatureAlgorithm: algorithm.der,
    issuer,
    thisUpdate: new Date('2026-11-25T10:00:00.000Z'),
    nextUpdate: new Date('2026-12-02T10:00:00.000Z'),
    entries: [],
    authorityKeyId: Buffer.from('0102030405060708090a0b0c0d0e0f1011121314', 'hex'),
    crlNumber: 7n,
    ...content,
  });
  return signedEnvelope(tbs, algorithm.der, sign('sha256', tbs, privateKey));
}

/** Canonical DER: what the ASN.1 schemas read, they write back byte for byte. */
function expectCanonical(der: Buffer): CertificateList {
  const parsed = AsnConvert.parse(der, CertificateList);
  expect(Buffer.from(AsnConvert.serialize(parsed)).equals(der)).toBe(true);
  return parsed;
}

describe('CRL DER written by crl.ts', () => {
  it('entries of every shape: serials with a set top bit or leading zeros, reasons or none, UTCTime through 2049 and GeneralizedTime after', async () => {
    const entries = [
      { serial: 'ee'.padEnd(40, '0'), revokedAt: new Date('2049-12-31T23:59:59.999Z'), reason: CRL_REASON_CODES.keyCompromise },
      { serial: '00'.repeat(19) + '05', revokedAt: new Date('2050-01-01T00:00:00.000Z'), reason: CRL_REASON_CODES.certificateHold },
      { serial: '7f'.repeat(20), revokedAt: new Date('2026-11-25T09:08:07.000Z'), reason: CRL_REASON_CODES.unspecified },
      { serial: '01', revokedAt: new Date('2026-01-02T03:04:05.000Z'), reason: null },
    ];
    const der = signed({ entries, crlNumber: 2n ** 40n + 1n });
    const parsed = expectCanonical(der);
    expect(parsed.tbsCertList.version).toBe(1);
    expect(parsed.tbsCertList.revokedCertificates).toHaveLength(4);
    const crl = new x509.X509Crl(der);
    expect(await crl.verify({ publicKey: await new x509.PublicKey(publicKey.export({ format: 'der', type: 'spki' })).export() })).toBe(true);
    expect(crl.issuer).toBe('CN=Spec Issuing CA, O=Spec');
    expect(crl.thisUpdate.toISOString()).toBe('2026-11-25T10:00:00.000Z');
    expect(crl.nextUpdate?.toISOString()).toBe('2026-12-02T10:00:00.000Z');
    expect(crl.entries.map((entry) => [entry.serialNumber, entry.revocationDate.toISOString(), entry.reason ?? null])).toEqual([
      ['ee'.padEnd(40, '0'), '2049-12-31T23:59:59.000Z', x509.X509CrlReason.keyCompromise],
      ['05', '2050-01-01T00:00:00.000Z', x509.X509CrlReason.certificateHold],
      ['7f'.repeat(20), '2026-11-25T09:08:07.000Z', null],
      ['01', '2026-01-02T03:04:05.000Z', null],
    ]);
    // The INTEGER octets themselves: a zero before the set top bit, none of the redundant leading zeros.
    expect(parsed.tbsCertList.revokedCertificates!.map((entry) => Buffer.from(entry.userCertificate).toString('hex'))).toEqual([
      '00' + 'ee'.padEnd(40, '0'),
      '05',
      '7f'.repeat(20),
      '01',
    ]);
    const times = parsed.tbsCertList.revokedCertificates!.map((entry) => (entry.revocationDate.utcTime ? 'utc' : 'generalized'));
    expect(times).toEqual(['utc', 'generalized', 'utc', 'utc']);
    const number = crl.getExtension('2.5.29.20');
    expect(Buffer.from(number!.value).toString('hex')).toBe('0206010000000001');
    expect(crl.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId).toBe('0102030405060708090a0b0c0d0e0f1011121314');
  });

  it('no entries: the revokedCertificates list is absent, not empty (RFC 5280 §5.1.2.6)', () => {
    const parsed = expectCanonical(signed({ entries: [] }));
    expect(parsed.tbsCertList.revokedCertificates).toBeUndefined();
  });

  it('100,000 entries: long-form lengths, every entry read back by openssl (the ASN.1 schemas stop at their node limit)', () => {
    const entries = Array.from({ length: 100_000 }, (_, i) => ({
      serial: (i + 1).toString(16).padStart(40, '0'),
      revokedAt: new Date(1_764_000_000_000 + i * 1000),
      reason: CRL_REASON_CODES.superseded,
    }));
    const text = execFileSync('openssl', ['crl', '-inform', 'DER', '-noout', '-text'], { input: signed({ entries }), maxBuffer: 256 * 1024 * 1024 }).toString();
    expect(text.match(/Serial Number: /g)).toHaveLength(100_000);
    expect(text.match(/Superseded/g)).toHaveLength(100_000);
    expect(text).toContain('Serial Number: 0186A0');
  });

  it('refuses a serial that is not hex octets or longer than 20 octets instead of writing a broken CRL', () => {
    const at = new Date();
    expect(() => signed({ entries: [{ serial: 'xyz1', revokedAt: at }] })).toThrow(/not hex octets/);
    expect(() => signed({ entries: [{ serial: 'abc', revokedAt: at }] })).toThrow(/not hex octets/);
    expect(() => signed({ entries: [{ serial: '7f'.repeat(21), revokedAt: at, reason: 1 }] })).toThrow(/longer than 20 octets/);
  });
});
