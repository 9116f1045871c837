import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { createPublicKey, verify, webcrypto } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';
import { KeyStoreError, SignerUnavailableError } from './hsm.errors';
import type { HsmKeyPair, KeyAlgorithm } from './key-store.port';
import { Pkcs11Hsm } from './pkcs11-hsm';
import { Pkcs11KeyStore } from './pkcs11-key-store.adapter';
import { simulateModuleFailure } from './testing/module-failure';
import { createTemporarySoftHsmToken, type TemporarySoftHsmToken } from './testing/temporary-softhsm-token';
import { waitUntil } from './testing/verify-jws';

// CA keys (CREDENTIAL-MANAGEMENT.md, "PKI"): generated in the token, found by label by any process,
// signing in the encodings X.509 (DER) and JWS (raw r||s) need, checked with tools no one here wrote.
let token: TemporarySoftHsmToken;
let hsm: Pkcs11Hsm;
let keyStore: Pkcs11KeyStore;
let folder: string;
const message = Buffer.from('tbsCertificate stand-in: the message, not a digest');

beforeAll(async () => {
  token = createTemporarySoftHsmToken('key-store-spec');
  token.generateKey('JWT_KEY', 'EC');
  hsm = await Pkcs11Hsm.connect({ modulePath: token.modulePath, tokenLabel: token.tokenLabel, pin: token.pin });
  keyStore = new Pkcs11KeyStore(hsm);
  folder = mkdtempSync(join(tmpdir(), 'key-store-spec-'));
});

afterAll(async () => {
  await hsm.close();
  token.remove();
  rmSync(folder, { recursive: true, force: true });
});

function verifies(pair: HsmKeyPair, hash: 'sha256' | 'sha384', signature: Buffer, dsaEncoding: 'der' | 'ieee-p1363', data = message): boolean {
  return verify(hash, data, { key: createPublicKey({ key: pair.publicKeySpki, format: 'der', type: 'spki' }), dsaEncoding }, signature);
}

function openssl(...args: string[]): string {
  return execFileSync('openssl', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

describe.each([
  ['EC-P256', 'prime256v1', 64],
  ['EC-P384', 'secp384r1', 96],
  ['RSA-3072', 'rsaEncryption', 384],
] as const)('%s', (algorithm: KeyAlgorithm, opensslName, rawLength) => {
  const label = `CA_KEY/${algorithm.toLowerCase()}`;
  let pair: HsmKeyPair;

  beforeAll(async () => {
    pair = await keyStore.generateKeyPair(label, algorithm);
  });

  it('generates the pair in the token: a private, sensitive, never extractable token object with a random CKA_ID', () => {
    const seen = token.inspectKey(label);
    // Without a login, another session sees the public key only (CKA_PRIVATE on the private key).
    expect(seen.visibleWithoutLogin).toBe(1);
    expect(seen.privateKeys).toEqual([
      { id: expect.stringMatching(/^[0-9a-f]{32}$/) as unknown, token: true, private: true, sensitive: true, extractable: false, sign: true },
    ]);
    expect(seen.publicKeys).toEqual([{ id: seen.privateKeys[0]?.id, token: true }]);
  });

  it('reads the public key from the HSM as SubjectPublicKeyInfo, and imports it into WebCrypto', async () => {
    expect(pair).toMatchObject({ label, algorithm });
    expect(openssl('pkey', '-pubin', '-inform', 'DER', '-in', writeTemporary(`${algorithm}.spki`, pair.publicKeySpki), '-noout', '-text')).toContain(
      algorithm === 'RSA-3072' ? 'Public-Key: (3072 bit)' : `ASN1 OID: ${opensslName}`,
    );
    expect(Buffer.from(await webcrypto.subtle.exportKey('spki', pair.publicKey))).toEqual(pair.publicKeySpki);
    expect(pair.privateKey).toMatchObject({ type: 'private', extractable: false, usages: ['sign'] });
    expect((await keyStore.findKeyPair(label))?.publicKeySpki).toEqual(pair.publicKeySpki);
  });

  it.each(['SHA-256', 'SHA-384'] as const)('signs the message over %s in DER and raw form, both verified by node:crypto', async (hash) => {
    const nodeHash = hash === 'SHA-256' ? 'sha256' : 'sha384';
    const der = await keyStore.sign(label, message, { hash, encoding: 'der' });
    const raw = await keyStore.sign(label, message, { hash, encoding: 'raw' });
    expect(raw).toHaveLength(rawLength);
    expect(verifies(pair, nodeHash, der, 'der')).toBe(true);
    expect(verifies(pair, nodeHash, raw, 'ieee-p1363')).toBe(true);
    expect(verifies(pair, nodeHash, raw, 'ieee-p1363', Buffer.from('another message'))).toBe(false);
    if (algorithm !== 'RSA-3072') {
      expect(der[0]).toBe(0x30); // ECDSA-Sig-Value: SEQUENCE { r INTEGER, s INTEGER }
      expect(verifies(pair, nodeHash, der, 'ieee-p1363')).toBe(false);
    }
  });

  it('signs certificates through @peculiar/x509 with its crypto: a self-signed CA and a leaf that `openssl verify` accepts', async () => {
    const caCertificate = await x509.X509CertificateGenerator.createSelfSigned(
      {
        serialNumber: '01',
        name: `CN=Test CA ${algorithm}, O=Example`,
        notBefore: new Date(Date.now() - 60_000),
        notAfter: new Date(Date.now() + 86_400_000),
        keys: { privateKey: pair.privateKey, publicKey: pair.publicKey },
        signingAlgorithm: algorithm === 'RSA-3072' ? { name: 'RSASSA-PKCS1-v1_5' } : { name: 'ECDSA', hash: algorithm === 'EC-P384' ? 'SHA-384' : 'SHA-256' },
        extensions: [
          new x509.BasicConstraintsExtension(true, 0, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        ],
      },
      keyStore.crypto,
    );
    const leafKeys = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
    const leaf = await x509.X509CertificateGenerator.create(
      {
        serialNumber: '02',
        subject: 'CN=user@example.com',
        issuer: caCertificate.subject,
        notBefore: new Date(Date.now() - 60_000),
        notAfter: new Date(Date.now() + 3_600_000),
        publicKey: leafKeys.publicKey,
        signingKey: pair.privateKey,
        signingAlgorithm: algorithm === 'RSA-3072' ? { name: 'RSASSA-PKCS1-v1_5' } : { name: 'ECDSA', hash: 'SHA-256' },
      },
      keyStore.crypto,
    );
    const caFile = writeTemporary(`${algorithm}-ca.pem`, caCertificate.toString('pem'));
    const leafFile = writeTemporary(`${algorithm}-leaf.pem`, leaf.toString('pem'));
    expect(openssl('verify', '-CAfile', caFile, caFile).trim()).toBe(`${caFile}: OK`);
    expect(openssl('verify', '-CAfile', caFile, leafFile).trim()).toBe(`${leafFile}: OK`);
    expect(openssl('x509', '-in', leafFile, '-noout', '-text')).toContain(
      algorithm === 'RSA-3072' ? 'Signature Algorithm: sha256WithRSAEncryption' : 'Signature Algorithm: ecdsa-with-SHA256',
    );
  });
});

describe('labels', () => {
  it('refuses a label in use, by this or another process (KEY_LABEL_TAKEN), and keeps the key that had it', async () => {
    const first = await keyStore.generateKeyPair('CA_KEY/taken', 'EC-P256');
    await expect(keyStore.generateKeyPair('CA_KEY/taken', 'EC-P384')).rejects.toMatchObject({ code: 'KEY_LABEL_TAKEN' });
    token.generateKey('CA_KEY/elsewhere', 'EC');
    await expect(keyStore.generateKeyPair('CA_KEY/elsewhere', 'EC-P256')).rejects.toMatchObject({
      name: 'KeyStoreError',
      code: 'KEY_LABEL_TAKEN',
      message: 'a key pair labelled "CA_KEY/elsewhere" already exists on token "key-store-spec"',
    });
    expect(token.inspectKey('CA_KEY/taken').privateKeys).toHaveLength(1);
    expect((await keyStore.findKeyPair('CA_KEY/taken'))?.publicKeySpki).toEqual(first.publicKeySpki);
  });

  it('refuses labels that are empty, too long, not printable ASCII, or the token signer key', async () => {
    for (const label of ['', ' CA_KEY/x', 'CA_KEY/é', 'x'.repeat(129), 'JWT_KEY']) {
      const error: unknown = await keyStore.generateKeyPair(label, 'EC-P256').catch((refused: unknown) => refused);
      expect(error).toBeInstanceOf(KeyStoreError);
      expect(error).toMatchObject({ code: 'KEY_LABEL_INVALID' });
    }
    await expect(keyStore.sign('JWT_KEY', message, { hash: 'SHA-256', encoding: 'raw' })).rejects.toMatchObject({ code: 'KEY_LABEL_INVALID' });
    await expect(keyStore.destroyKeyPair('JWT_KEY')).rejects.toMatchObject({ code: 'KEY_LABEL_INVALID' });
  });

  it('finds nothing under an unknown label, and a sign with it is KEY_NOT_FOUND', async () => {
    expect(await keyStore.findKeyPair('CA_KEY/nobody')).toBeUndefined();
    await expect(keyStore.sign('CA_KEY/nobody', message, { hash: 'SHA-256', encoding: 'der' })).rejects.toMatchObject({
      code: 'KEY_NOT_FOUND',
      message: 'no key pair labelled "CA_KEY/nobody" on token "key-store-spec"',
    });
    expect(hsm.isReady()).toBe(true);
  });

  it('refuses a label under which the token holds a key it cannot use (KEY_UNUSABLE), staying ready', async () => {
    token.generateKey('CA_KEY/rsa2048', 'RSA', 2048);
    await expect(keyStore.findKeyPair('CA_KEY/rsa2048')).rejects.toMatchObject({
      code: 'KEY_UNUSABLE',
      message: expect.stringContaining('is a 2048-bit RSA key: key type not supported (EC P-256, EC P-384 or RSA-3072 only)') as unknown,
    });
    expect(hsm.isReady()).toBe(true);
  });

  it('destroys both halves of the pair; the label is free again', async () => {
    const before = await keyStore.generateKeyPair('CA_KEY/destroyed', 'EC-P256');
    await keyStore.destroyKeyPair('CA_KEY/destroyed');
    expect(token.inspectKey('CA_KEY/destroyed')).toEqual({ visibleWithoutLogin: 0, privateKeys: [], publicKeys: [] });
    expect(await keyStore.findKeyPair('CA_KEY/destroyed')).toBeUndefined();
    await expect(keyStore.sign('CA_KEY/destroyed', message, { hash: 'SHA-256', encoding: 'raw' })).rejects.toMatchObject({ code: 'KEY_NOT_FOUND' });
    // A certificate signer still holding the old pair's WebCrypto key cannot sign with a new key under the label.
    const after = await keyStore.generateKeyPair('CA_KEY/destroyed', 'EC-P256');
    expect(after.publicKeySpki).not.toEqual(before.publicKeySpki);
    await expect(keyStore.crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, before.privateKey, message)).rejects.toMatchObject({ code: 'KEY_NOT_FOUND' });
    await keyStore.destroyKeyPair('CA_KEY/nothing-here');
  });
});

describe('two processes on one token', () => {
  it('a key generated by another process after this one initialized the module is found and signs', async () => {
    const { keyId } = token.generateKey('CA_KEY/other-process', 'EC');
    const pair = await keyStore.findKeyPair('CA_KEY/other-process');
    expect(pair?.algorithm).toBe('EC-P256');
    expect(token.inspectKey('CA_KEY/other-process').privateKeys[0]?.id).toBe(keyId);
    expect(verifies(pair!, 'sha256', await keyStore.sign('CA_KEY/other-process', message, { hash: 'SHA-256', encoding: 'der' }), 'der')).toBe(true);
  });

  it('a key generated here is seen by another process, with the same CKA_ID for both halves', async () => {
    await keyStore.generateKeyPair('CA_KEY/seen-elsewhere', 'EC-P384');
    const seen = token.inspectKey('CA_KEY/seen-elsewhere');
    expect(seen.privateKeys).toHaveLength(1);
    expect(seen.publicKeys.map((key) => key.id)).toEqual(seen.privateKeys.map((key) => key.id));
  });

  it('a key another process destroyed stops signing here within about a second, although this process holds a session copy', async () => {
    const { keyId } = token.generateKey('CA_KEY/destroyed-elsewhere', 'EC');
    await keyStore.sign('CA_KEY/destroyed-elsewhere', message, { hash: 'SHA-256', encoding: 'raw' });
    token.pkcs11Tool('--delete-object', '--type', 'privkey', '--id', keyId);
    token.pkcs11Tool('--delete-object', '--type', 'pubkey', '--id', keyId);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await expect(keyStore.sign('CA_KEY/destroyed-elsewhere', message, { hash: 'SHA-256', encoding: 'raw' })).rejects.toMatchObject({ code: 'KEY_NOT_FOUND' });
    expect(await keyStore.findKeyPair('CA_KEY/destroyed-elsewhere')).toBeUndefined();
    expect(hsm.isReady()).toBe(true);
  });
});

describe('module failure while signing with a CA key', () => {
  it.each(['sessions-closed', 'module-finalized'] as const)(
    'after %s: SignerUnavailableError with Retry-After, readiness red, then every key is back by itself',
    async (failure) => {
      const p256 = (await keyStore.findKeyPair('CA_KEY/ec-p256'))!;
      const rsa = (await keyStore.findKeyPair('CA_KEY/rsa-3072'))!;
      simulateModuleFailure(hsm, failure);

      const refused: unknown = await keyStore.sign(p256.label, message, { hash: 'SHA-256', encoding: 'der' }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(SignerUnavailableError);
      expect((refused as SignerUnavailableError).retryAfterSeconds).toBeGreaterThanOrEqual(1);
      expect(hsm.isReady()).toBe(false);
      await expect(keyStore.findKeyPair(p256.label)).rejects.toBeInstanceOf(SignerUnavailableError);
      await expect(keyStore.generateKeyPair('CA_KEY/during-outage', 'EC-P256')).rejects.toBeInstanceOf(SignerUnavailableError);

      await waitUntil(() => hsm.isReady(), 5_000);
      expect(verifies(p256, 'sha256', await keyStore.sign(p256.label, message, { hash: 'SHA-256', encoding: 'der' }), 'der')).toBe(true);
      expect(verifies(rsa, 'sha256', await keyStore.sign(rsa.label, message, { hash: 'SHA-256', encoding: 'der' }), 'der')).toBe(true);
      // The same pair objects keep working through the WebCrypto path.
      const signature = await keyStore.crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, p256.privateKey, message);
      expect(await webcrypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, p256.publicKey, signature, message)).toBe(true);
    },
  );

  it('RSA signs at once on the pool; after a module failure every one is unavailable, then RSA signing is back', async () => {
    const rsa = (await keyStore.findKeyPair('CA_KEY/rsa-3072'))!;
    const signing = Array.from({ length: 12 }, () => keyStore.sign(rsa.label, message, { hash: 'SHA-384', encoding: 'der' }));
    const results = await Promise.allSettled(signing);
    expect(results.every((result) => result.status === 'fulfilled')).toBe(true);
    simulateModuleFailure(hsm);
    const failed = await Promise.allSettled(Array.from({ length: 6 }, () => keyStore.sign(rsa.label, message, { hash: 'SHA-256', encoding: 'der' })));
    expect(failed.every((result) => result.status === 'rejected' && result.reason instanceof SignerUnavailableError)).toBe(true);
    await waitUntil(() => hsm.isReady(), 5_000);
    expect(verifies(rsa, 'sha256', await keyStore.sign(rsa.label, message, { hash: 'SHA-256', encoding: 'raw' }), 'ieee-p1363')).toBe(true);
  });
});

function writeTemporary(name: string, content: string | Buffer): string {
  const path = join(folder, name.replace(/\//g, '_'));
  writeFileSync(path, content);
  return path;
}
