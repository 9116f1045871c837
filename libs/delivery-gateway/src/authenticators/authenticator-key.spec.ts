import { generateKeyPairSync, sign } from 'node:crypto';
import { calculateJwkThumbprint } from 'jose';
import { DomainError } from '@app/common';
import { parsePublicKey, registrationSigningInput, verifiesEs256 } from './authenticator-key';

const publicJwk = () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' }) as Record<string, string>;

function refusal(raw: unknown): string {
  try {
    parsePublicKey(raw);
  } catch (error) {
    if (error instanceof DomainError) return error.detail;
    throw error;
  }
  throw new Error('accepted');
}

describe('an authenticator key (CREDENTIAL-MANAGEMENT.md "Authenticators")', () => {
  it('is a P-256 JWK; its thumbprint is RFC 7638 (as jose computes it)', async () => {
    const jwk = publicJwk();
    const parsed = parsePublicKey({ ...jwk, alg: 'ES256' });
    expect(parsed.jwk).toEqual({ kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y });
    expect(parsed.thumbprint).toBe(await calculateJwkThumbprint({ kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y }, 'sha256'));
  });

  it('has one spelling: a coordinate whose spare bits are set (the same octets) is refused, so one key has one thumbprint', () => {
    const jwk = publicJwk();
    // 43 base64url characters carry 258 bits: the last character's two low bits are spare.
    const last = jwk.x.at(-1)!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const respelled = jwk.x.slice(0, -1) + alphabet[alphabet.indexOf(last) | 1];
    expect(Buffer.from(respelled, 'base64url')).toEqual(Buffer.from(jwk.x, 'base64url'));
    expect(refusal({ ...jwk, x: respelled })).toContain('publicKey.x: must be a coordinate of 32 octets in base64url');
  });

  it('refuses a private key, other members, another curve or a point off the curve, saying which', () => {
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    expect(refusal(pair.privateKey.export({ format: 'jwk' }))).toContain('publicKey: holds a private key (d)');
    expect(refusal({ ...publicJwk(), use: 'sig' })).toContain('member "use" is not part of an EC public key');
    expect(refusal(generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey.export({ format: 'jwk' }))).toContain('publicKey.crv: must be "P-256"');
    expect(refusal({ ...publicJwk(), alg: 'ES384' })).toContain('publicKey.alg: must be "ES256"');
    const jwk = publicJwk();
    expect(refusal({ ...jwk, y: jwk.x })).toContain('is not a point of the P-256 curve');
    expect(refusal('-----BEGIN PUBLIC KEY-----')).toContain('publicKey: is required: a JWK');
  });

  it('verifies ES256 r||s over the signing input, and refuses a DER signature by its form', () => {
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const { key } = parsePublicKey(pair.publicKey.export({ format: 'jwk' }));
    const input = registrationSigningInput('acme', '7d444840-9dc0-11d1-b245-5ffdce74fad2', 'nonce');
    expect(input).toBe('authenticator-registration.acme.7d444840-9dc0-11d1-b245-5ffdce74fad2.nonce');
    const rs = sign('sha256', Buffer.from(input), { key: pair.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
    expect(verifiesEs256(key, input, rs)).toBe(true);
    expect(verifiesEs256(key, `${input}x`, rs)).toBe(false);
    const der = sign('sha256', Buffer.from(input), pair.privateKey).toString('base64url');
    expect(() => verifiesEs256(key, input, der)).toThrow(/r\|\|s as 64 octets in base64url/);
  });
});
