import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { ECDSASigValue } from '@peculiar/asn1-ecc';
import { AsnConvert } from '@peculiar/asn1-schema';
import { ecdsaDerSignature } from './pkcs11-signing';

/** The ASN.1 schema's own encoding of the same two integers: the reference the direct writer must equal. */
function schemaDer(raw: Buffer): string {
  const half = raw.length / 2;
  const integer = (bytes: Buffer) => {
    let start = 0;
    while (start < bytes.length - 1 && bytes[start] === 0) start += 1;
    const digits = bytes.subarray(start);
    const content = digits[0] & 0x80 ? Buffer.concat([Buffer.from([0]), digits]) : Buffer.from(digits);
    return content.buffer.slice(content.byteOffset, content.byteOffset + content.length) as ArrayBuffer;
  };
  return Buffer.from(AsnConvert.serialize(new ECDSASigValue({ r: integer(raw.subarray(0, half)), s: integer(raw.subarray(half)) }))).toString('hex');
}

describe('ecdsaDerSignature (r||s to ECDSA-Sig-Value)', () => {
  it.each([
    ['high bits set (a zero is added)', Buffer.concat([Buffer.alloc(32, 0xff), Buffer.alloc(32, 0x80)])],
    ['leading zero octets (dropped)', Buffer.concat([Buffer.from([0, 0, 0x12]), Buffer.alloc(29, 1), Buffer.from([0, 0x7f]), Buffer.alloc(30, 2)])],
    ['a zero integer', Buffer.concat([Buffer.alloc(32), Buffer.alloc(32, 5)])],
    ['P-384 sizes', Buffer.concat([Buffer.alloc(48, 0x90), Buffer.alloc(48, 0x10)])],
    ['P-521 sizes (two-octet length)', Buffer.concat([Buffer.alloc(66, 0xa1), Buffer.alloc(66, 0xb2)])],
  ])('%s: the same octets as the ASN.1 schema writes', (_, raw) => {
    expect(ecdsaDerSignature(raw).toString('hex')).toBe(schemaDer(raw));
  });

  it('what P-256 and P-384 keys sign verifies in DER form with Node', () => {
    for (const namedCurve of ['P-256', 'P-384']) {
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve });
      for (let i = 0; i < 200; i++) {
        const message = Buffer.from(`message ${i}`);
        const raw = sign(namedCurve === 'P-256' ? 'sha256' : 'sha384', message, { key: privateKey, dsaEncoding: 'ieee-p1363' });
        expect(verify(namedCurve === 'P-256' ? 'sha256' : 'sha384', message, publicKey, ecdsaDerSignature(raw))).toBe(true);
      }
    }
  });
});
