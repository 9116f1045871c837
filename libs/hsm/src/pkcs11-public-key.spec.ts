import { generateKeyPairSync } from 'node:crypto';
import { HsmConfigurationError } from './hsm.errors';
import { ecPublicKeyMembers, jwkThumbprint, P256_EC_PARAMS, rsaPublicKeyMembers } from './pkcs11-public-key';

const keyName = 'key "JWT_KEY" on token "t"';

it('computes the thumbprint of the RFC 7638 §3.1 example key', () => {
  const n =
    '0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw';
  expect(jwkThumbprint({ kty: 'RSA', n, e: 'AQAB' })).toBe('NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs');
});

describe('EC P-256', () => {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
  const point = Buffer.concat([Buffer.from([0x04]), Buffer.from(jwk.x ?? '', 'base64url'), Buffer.from(jwk.y ?? '', 'base64url')]);

  it('reads CKA_EC_POINT as a DER OCTET STRING, or bare', () => {
    const expected = { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y };
    expect(ecPublicKeyMembers(P256_EC_PARAMS, Buffer.concat([Buffer.from([0x04, 0x41]), point]), keyName)).toEqual(expected);
    expect(ecPublicKeyMembers(P256_EC_PARAMS, point, keyName)).toEqual(expected);
  });

  it('refuses another curve, naming its OID', () => {
    const p384 = Buffer.from('06052b81040022', 'hex');
    expect(() => ecPublicKeyMembers(p384, point, keyName)).toThrow(
      new HsmConfigurationError(
        'HSM_KEY_UNSUPPORTED',
        'key "JWT_KEY" on token "t" is an EC key on curve OID 1.3.132.0.34: key type not supported (EC P-256 or RSA >= 2048 only)',
      ),
    );
  });

  it('refuses a compressed point', () => {
    const compressed = Buffer.concat([Buffer.from([0x02]), point.subarray(1, 33)]);
    expect(() => ecPublicKeyMembers(P256_EC_PARAMS, compressed, keyName)).toThrow(/not an uncompressed P-256 point/);
  });
});

describe('RSA', () => {
  it('drops leading zero octets from n and e (RFC 7518 §6.3.1)', () => {
    const jwk = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'jwk' });
    const modulus = Buffer.concat([Buffer.alloc(1), Buffer.from(jwk.n ?? '', 'base64url')]);
    expect(rsaPublicKeyMembers(modulus, Buffer.from([0x00, 0x01, 0x00, 0x01]), keyName)).toEqual({ kty: 'RSA', n: jwk.n, e: 'AQAB' });
  });

  it('refuses a modulus under 2048 bits', () => {
    const modulus = Buffer.concat([Buffer.from([0x7f]), Buffer.alloc(255, 0xff)]);
    expect(() => rsaPublicKeyMembers(modulus, Buffer.from([1, 0, 1]), keyName)).toThrow('is a 2047-bit RSA key');
  });
});
