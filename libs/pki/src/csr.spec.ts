import 'reflect-metadata';
import { ECDH, KeyObject, constants, createHash, createPublicKey, generateKeyPairSync, sign, webcrypto } from 'node:crypto';
import * as asn1js from 'asn1js';
import { CertificationRequest } from '@peculiar/asn1-csr';
import { RsaSaPssParams, id_mgf1, id_sha1, id_sha256 } from '@peculiar/asn1-rsa';
import { AsnConvert } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier, SubjectPublicKeyInfo } from '@peculiar/asn1-x509';
import * as x509 from '@peculiar/x509';
import { DomainError } from '@app/common';
import { type CheckedCsr, readCsr } from './csr';
import { integerContent, tlv } from './der';
import { p256Csr } from './testing';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const NOT_A_CSR = 'CSR_INVALID: the CSR is not a PKCS#10 certificate request in PEM, base64 DER or DER (openssl req -new makes one).';
const UNREADABLE_KEY = 'CSR_KEY_POLICY: the key of the CSR is neither EC P-256/P-384 nor RSA 2048/3072/4096.';
const NOT_PROVEN = 'CSR_POP_INVALID: the signature of the CSR does not verify with its own public key.';
const RSA_NOT_DER =
  'CSR_INVALID: the RSA public key of the CSR is not an RSAPublicKey in DER: two positive INTEGERs, each in its fewest octets (RFC 8017 A.1.1).';

const hex = (text: string) => Buffer.from(text, 'hex');
const digest = (algorithm: string, data: Buffer) => createHash(algorithm).update(data).digest();
const oid = (dotted: string) => Buffer.from(new asn1js.ObjectIdentifier({ value: dotted }).toBER());
const algorithm = (dotted: string, ...parameters: Buffer[]) => tlv(0x30, oid(dotted), ...parameters);
const NULL = hex('0500');
const VERSION_1 = hex('020100');
const NO_ATTRIBUTES = hex('a000');
const CN_CARD = tlv(0x30, tlv(0x31, tlv(0x30, oid('2.5.4.3'), tlv(0x0c, Buffer.from('card')))));
const SHA256_WITH_ECDSA = algorithm('1.2.840.10045.4.3.2');
const SHA256_WITH_RSA = algorithm('1.2.840.113549.1.1.11', NULL);
const RSA_ENCRYPTION = algorithm('1.2.840.113549.1.1.1', NULL);
const RSASSA_PSS = '1.2.840.113549.1.1.10';

const spkiOf = (key: KeyObject) => createPublicKey(key).export({ type: 'spki', format: 'der' });
const bitString = (content: Buffer) => tlv(0x03, hex('00'), content);
/** The DER of each element of a SEQUENCE, as they are written. */
const elementsOf = (der: Buffer) =>
  (asn1js.fromBER(der).result as asn1js.Sequence).valueBlock.value.map((element) => Buffer.from(element.valueBeforeDecodeView));

interface RequestParts {
  /** Signs the request; its key is the request's unless `spki` is given. Without it the signature is 64 octets of 0x01. */
  key?: KeyObject;
  spki?: Buffer;
  /** The CertificationRequestInfo's elements, in place of version 0, CN=card, the SPKI and no attributes. */
  info?: Buffer[];
  signatureAlgorithm?: Buffer;
  hash?: string;
  pssSaltLength?: number;
}

/** A PKCS#10 request (RFC 2986) written element by element. */
function request(parts: RequestParts): Buffer {
  const info = tlv(0x30, ...(parts.info ?? [VERSION_1, CN_CARD, parts.spki ?? spkiOf(parts.key!), NO_ATTRIBUTES]));
  const signer = parts.pssSaltLength === undefined ? parts.key : { key: parts.key!, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: parts.pssSaltLength };
  const signature = signer ? sign(parts.hash ?? 'sha256', info, signer) : Buffer.alloc(64, 1);
  return tlv(0x30, info, parts.signatureAlgorithm ?? SHA256_WITH_ECDSA, bitString(signature));
}

/** An RSA SubjectPublicKeyInfo for any modulus and exponent (the key policy is checked before the signature). */
function rsaSpki(modulus: Buffer, exponent: number, keyAlgorithm = RSA_ENCRYPTION): Buffer {
  const exponentHex = exponent.toString(16);
  const exponentBytes = Buffer.from(exponentHex.length % 2 ? `0${exponentHex}` : exponentHex, 'hex');
  return tlv(0x30, keyAlgorithm, bitString(tlv(0x30, tlv(0x02, integerContent(modulus)), tlv(0x02, integerContent(exponentBytes)))));
}

/** The EC point of a key's SPKI, and an SPKI of the same algorithm and curve with another point. */
const pointOf = (key: KeyObject) => Buffer.from(AsnConvert.parse(spkiOf(key), SubjectPublicKeyInfo).subjectPublicKey);
const ecSpki = (key: KeyObject, point: Buffer) => tlv(0x30, elementsOf(spkiOf(key))[0], bitString(point));

/** What readCsr gives for a CSR with this SubjectPublicKeyInfo, worked out with the ASN.1 schemas. */
function checkedFor(spki: Buffer, keyAlgorithm: string, rsa = false): CheckedCsr {
  return {
    spki,
    spkiSha256: digest('sha256', spki),
    keyAlgorithm,
    keyIdentifier: digest('sha1', Buffer.from(AsnConvert.parse(spki, SubjectPublicKeyInfo).subjectPublicKey)),
    rsa,
  };
}

/** The SubjectPublicKeyInfo as the `@peculiar/asn1-schema` reader re-encoded it: for a DER CSR, its SPKI as sent. */
const reencodedSpki = (der: Buffer) => Buffer.from(AsnConvert.serialize(AsnConvert.parse(der, CertificationRequest).certificationRequestInfo.subjectPKInfo));

/** readCsr's refusal: its detail (the code first), also the message; a 400 INVALID_VALUE every time. */
function refusal(input: string | Buffer): string {
  try {
    readCsr(input);
  } catch (error) {
    if (error instanceof DomainError && error.code === 'INVALID_VALUE' && error.message === error.detail) return error.detail;
    throw error;
  }
  throw new Error('the CSR was read');
}

const pem = (der: Buffer) => `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n')}\n-----END CERTIFICATE REQUEST-----\n`;

/** RSASSA-PSS AlgorithmIdentifier parameters (RFC 4055): this hash for the message and MGF1, this salt length. */
function pssParameters(hashOid: string, saltLength: number): Buffer {
  const hash = new AlgorithmIdentifier({ algorithm: hashOid, parameters: null });
  const mgf1 = new AlgorithmIdentifier({ algorithm: id_mgf1, parameters: AsnConvert.serialize(hash) });
  return Buffer.from(AsnConvert.serialize(new RsaSaPssParams({ hashAlgorithm: hash, maskGenAlgorithm: mgf1, saltLength })));
}

/** A point of P-256 with a small x (y² = x³ - 3x + b has a root for about every other x; p ≡ 3 mod 4, so y = (y²)^((p+1)/4)). */
function smallP256Point(): { x: bigint; y: bigint; p: bigint } {
  const p = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn;
  const b = 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn;
  const power = (base: bigint, exponent: bigint) => {
    let result = 1n;
    for (let square = base % p, rest = exponent; rest > 0n; rest >>= 1n, square = (square * square) % p) if (rest & 1n) result = (result * square) % p;
    return result;
  };
  for (let x = 1n; ; x++) {
    const ySquared = (((x * x * x - 3n * x + b) % p) + p) % p;
    const y = power(ySquared, (p + 1n) / 4n);
    if ((y * y) % p === ySquared) return { x, y, p };
  }
}
const octets32 = (value: bigint) => Buffer.from(value.toString(16).padStart(64, '0'), 'hex');

const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey;
const rsa2048 = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
const rsaModulus = Buffer.from(rsa2048.export({ format: 'jwk' }).n!, 'base64url');

/** PKCS#10 read and checked for issuance; every refusal is a 400 with the code first and the same text as before issue 35 changed the reading. */
describe('readCsr', () => {
  it('reads P-256 and P-384 CSRs in DER, base64 DER and PEM: the SPKI as sent (as the schema re-encoded it), its SHA-256, the key identifier', async () => {
    const made = await p256Csr();
    const expected = checkedFor(Buffer.from(new x509.Pkcs10CertificateRequest(made).publicKey.rawData), 'EC-P256');
    expect(readCsr(made)).toEqual(expected);
    expect(reencodedSpki(made)).toEqual(expected.spki);
    expect(readCsr(Buffer.concat([Buffer.alloc(7, 0x30), made]).subarray(7))).toEqual(expected);
    expect(readCsr(made.toString('base64'))).toEqual(expected);
    expect(readCsr(` ${made.toString('base64').replace(/(.{64})/g, '$1\r\n')}\n`)).toEqual(expected);
    expect(readCsr(pem(made))).toEqual(expected);
    expect(readCsr(`Certificate request of card 7\r\n${pem(made).replace(/\n/g, '\r\n')}`)).toEqual(expected);

    const p384Csr = request({ key: p384, signatureAlgorithm: algorithm('1.2.840.10045.4.3.3'), hash: 'sha384' });
    expect(readCsr(p384Csr)).toEqual(checkedFor(spkiOf(p384), 'EC-P384'));
    expect(reencodedSpki(p384Csr)).toEqual(spkiOf(p384));
    // Any hash of SHA-256 or stronger, whatever the curve.
    expect(readCsr(request({ key: p256, signatureAlgorithm: algorithm('1.2.840.10045.4.3.4'), hash: 'sha512' }))).toEqual(checkedFor(spkiOf(p256), 'EC-P256'));
    expect(readCsr(request({ key: p384 }))).toEqual(checkedFor(spkiOf(p384), 'EC-P384'));
  });

  it('reads RSA 2048 CSRs signed with PKCS#1 v1.5 or RSASSA-PSS (the salt length its parameters name)', () => {
    const spki = spkiOf(rsa2048);
    const pkcs1 = request({ key: rsa2048, signatureAlgorithm: SHA256_WITH_RSA });
    expect(readCsr(pkcs1)).toEqual(checkedFor(spki, 'RSA-2048', true));
    expect(reencodedSpki(pkcs1)).toEqual(spki);
    expect(readCsr(pem(pkcs1))).toEqual(checkedFor(spki, 'RSA-2048', true));
    expect(readCsr(request({ key: rsa2048, signatureAlgorithm: algorithm('1.2.840.113549.1.1.12', NULL), hash: 'sha384' }))).toEqual(
      checkedFor(spki, 'RSA-2048', true),
    );

    const pss = request({ key: rsa2048, signatureAlgorithm: algorithm(RSASSA_PSS, pssParameters(id_sha256, 32)), pssSaltLength: 32 });
    expect(readCsr(pss)).toEqual(checkedFor(spki, 'RSA-2048', true));
    expect(reencodedSpki(pss)).toEqual(spki);
    const tampered = Buffer.from(pss);
    tampered[tampered.length - 3] ^= 0x01;
    expect(refusal(tampered)).toBe(NOT_PROVEN);
    expect(refusal(request({ key: rsa2048, signatureAlgorithm: algorithm(RSASSA_PSS, pssParameters(id_sha256, 20)), pssSaltLength: 32 }))).toBe(NOT_PROVEN);
  });

  it('takes RSA 3072 and 4096 to the signature check, and rsaEncryption without its NULL parameters', () => {
    for (const octets of [384, 512]) {
      expect(refusal(request({ spki: rsaSpki(Buffer.alloc(octets, 0xc5), 65537), signatureAlgorithm: SHA256_WITH_RSA }))).toBe(NOT_PROVEN);
    }
    expect(refusal(request({ spki: rsaSpki(rsaModulus, 65537, algorithm('1.2.840.113549.1.1.1')), signatureAlgorithm: SHA256_WITH_RSA }))).toBe(NOT_PROVEN);
  });

  it('reads a P-256 key whose point is compressed (OpenSSL reads it) and keeps its SPKI as sent', () => {
    const compressed = ECDH.convertKey(pointOf(p256), 'prime256v1', undefined, undefined, 'compressed') as Buffer;
    const spki = ecSpki(p256, compressed);
    const csr = request({ key: p256, spki });
    expect(readCsr(csr)).toEqual({ ...checkedFor(spki, 'EC-P256'), spkiSha256: digest('sha256', spkiOf(p256)) });
    expect(reencodedSpki(csr)).toEqual(spki);
  });

  it('refuses keys outside the policy with CSR_KEY_POLICY: other curves, points off their curve, other RSA sizes and exponents, other key types', () => {
    const p521 = generateKeyPairSync('ec', { namedCurve: 'P-521' }).privateKey;
    expect(refusal(request({ spki: spkiOf(p521) }))).toBe('CSR_KEY_POLICY: EC curve secp521r1 is not accepted; use P-256 or P-384.');
    const k256 = generateKeyPairSync('ec', { namedCurve: 'secp256k1' }).privateKey;
    expect(refusal(request({ key: k256 }))).toBe('CSR_KEY_POLICY: EC curve secp256k1 is not accepted; use P-256 or P-384.');

    for (const key of [p256, p384]) {
      const point = pointOf(key);
      const offCurve = Buffer.from(point);
      offCurve[offCurve.length - 1] ^= 0x01;
      expect(refusal(request({ spki: ecSpki(key, offCurve) }))).toBe(UNREADABLE_KEY);
      expect(refusal(request({ spki: ecSpki(key, point.subarray(0, -1)) }))).toBe(UNREADABLE_KEY);
      expect(refusal(request({ spki: ecSpki(key, Buffer.concat([point, hex('00')])) }))).toBe(UNREADABLE_KEY);
      // The point at infinity: OpenSSL reads it, and no signature verifies with it.
      expect(refusal(request({ spki: ecSpki(key, hex('00')) }))).toBe(NOT_PROVEN);
    }
    // A point of P-256 (read, then its signature checked) written with x + p in place of x: on the curve modulo p, but not a field element.
    const { x, y, p } = smallP256Point();
    expect(refusal(request({ spki: ecSpki(p256, Buffer.concat([hex('04'), octets32(x), octets32(y)])) }))).toBe(NOT_PROVEN);
    expect(refusal(request({ spki: ecSpki(p256, Buffer.concat([hex('04'), octets32(x + p), octets32(y)])) }))).toBe(UNREADABLE_KEY);

    const rsaRefusal = (modulus: Buffer, exponent = 65537) => refusal(request({ spki: rsaSpki(modulus, exponent), signatureAlgorithm: SHA256_WITH_RSA }));
    expect(rsaRefusal(Buffer.alloc(128, 0xc5))).toBe('CSR_KEY_POLICY: RSA 1024 is not accepted; use 2048, 3072 or 4096 bits.');
    // Counted in bits: 257 octets starting 0x01 are 2049 bits, 256 octets starting 0x7f are 2047.
    expect(rsaRefusal(Buffer.concat([hex('01'), Buffer.alloc(256, 0xc5)]))).toBe('CSR_KEY_POLICY: RSA 2049 is not accepted; use 2048, 3072 or 4096 bits.');
    expect(rsaRefusal(Buffer.concat([hex('7f'), Buffer.alloc(255, 0xc5)]))).toBe('CSR_KEY_POLICY: RSA 2047 is not accepted; use 2048, 3072 or 4096 bits.');
    for (const exponent of [3, 65539, 0x1000100]) expect(rsaRefusal(rsaModulus, exponent)).toBe('CSR_KEY_POLICY: the RSA public exponent must be 65537.');
    // An RSASSA-PSS key (id-RSASSA-PSS in the SPKI) is another key type.
    expect(refusal(request({ spki: rsaSpki(rsaModulus, 65537, algorithm(RSASSA_PSS)), signatureAlgorithm: SHA256_WITH_RSA }))).toBe(
      'CSR_KEY_POLICY: rsa-pss keys are not accepted; use EC P-256/P-384 or RSA.',
    );
    expect(refusal(request({ spki: spkiOf(generateKeyPairSync('ed25519').privateKey) }))).toBe(
      'CSR_KEY_POLICY: ed25519 keys are not accepted; use EC P-256/P-384 or RSA.',
    );
    expect(refusal(request({ spki: spkiOf(generateKeyPairSync('x25519').privateKey) }))).toBe(
      'CSR_KEY_POLICY: x25519 keys are not accepted; use EC P-256/P-384 or RSA.',
    );
    // An algorithm OpenSSL does not know; an RSA key that is not an RSAPublicKey.
    expect(refusal(request({ spki: tlv(0x30, algorithm('1.2.3.4'), bitString(Buffer.alloc(32, 1))) }))).toBe(UNREADABLE_KEY);
    expect(refusal(request({ spki: tlv(0x30, RSA_ENCRYPTION, bitString(tlv(0x30, tlv(0x02, integerContent(rsaModulus))))) }))).toBe(RSA_NOT_DER);
  });

  it('reads a hybrid point from its DER, keyed as the same key uncompressed; refuses RSAPublicKeys not in DER (DECISIONS 9)', () => {
    const point = pointOf(p256);
    const hybridSpki = ecSpki(p256, Buffer.concat([hex(point[point.length - 1] & 1 ? '07' : '06'), point.subarray(1)]));
    expect(readCsr(request({ key: p256, spki: hybridSpki }))).toEqual({ ...checkedFor(hybridSpki, 'EC-P256'), spkiSha256: digest('sha256', spkiOf(p256)) });

    const modulus = tlv(0x02, integerContent(rsaModulus));
    const exponent = tlv(0x02, hex('010001'));
    const rsaKey = (...integers: Buffer[]) => tlv(0x30, RSA_ENCRYPTION, bitString(tlv(0x30, ...integers)));
    const keys: Record<string, Buffer> = {
      'a modulus with a redundant zero octet': rsaKey(tlv(0x02, Buffer.concat([hex('00'), integerContent(rsaModulus)])), exponent),
      'a negative modulus': rsaKey(tlv(0x02, rsaModulus), exponent),
      'an empty modulus': rsaKey(hex('0200'), exponent),
      'an exponent with a redundant zero octet': rsaKey(modulus, hex('020400010001')),
      'a negative exponent': rsaKey(modulus, hex('0203ff0001')),
      'a zero exponent': rsaKey(modulus, hex('020100')),
      'a third INTEGER': rsaKey(modulus, exponent, exponent),
      'an octet after the RSAPublicKey': tlv(0x30, RSA_ENCRYPTION, bitString(Buffer.concat([tlv(0x30, modulus, exponent), hex('00')]))),
      'the RSAPublicKey length in long form': tlv(0x30, RSA_ENCRYPTION, bitString(Buffer.concat([hex('308300'), tlv(0x30, modulus, exponent).subarray(2)]))),
    };
    for (const [name, spki] of Object.entries(keys)) {
      expect({ name, refusal: refusal(request({ key: rsa2048, spki, signatureAlgorithm: SHA256_WITH_RSA })) }).toEqual({ name, refusal: RSA_NOT_DER });
    }
  });

  it('keys a public key by one encoding of it, whatever encoding the CSR sends (CSR_KEY_REUSED sees the same key)', () => {
    const sameKey = digest('sha256', spkiOf(p256));
    const compressed = ecSpki(p256, ECDH.convertKey(pointOf(p256), 'prime256v1', undefined, undefined, 'compressed') as Buffer);
    const p384Compressed = ecSpki(p384, ECDH.convertKey(pointOf(p384), 'secp384r1', undefined, undefined, 'compressed') as Buffer);
    expect(readCsr(request({ key: p384, spki: p384Compressed })).spkiSha256).toEqual(digest('sha256', spkiOf(p384)));
    const withNull = spkiOf(rsa2048);
    const withoutNull = rsaSpki(rsaModulus, 65537, algorithm('1.2.840.113549.1.1.1'));
    expect(readCsr(request({ key: p256 })).spkiSha256).toEqual(sameKey);
    expect(readCsr(request({ key: p256, spki: compressed })).spkiSha256).toEqual(sameKey);
    expect(readCsr(request({ key: rsa2048, spki: withoutNull, signatureAlgorithm: SHA256_WITH_RSA })).spkiSha256).toEqual(digest('sha256', withNull));
  });

  it('refuses SHA-1 and unknown signature algorithms with CSR_KEY_POLICY, and signatures that do not verify with CSR_POP_INVALID', () => {
    const sha1 = 'CSR_KEY_POLICY: the CSR is signed with SHA-1; use SHA-256 or stronger.';
    expect(refusal(request({ key: p256, signatureAlgorithm: algorithm('1.2.840.10045.4.1'), hash: 'sha1' }))).toBe(sha1);
    expect(refusal(request({ key: rsa2048, signatureAlgorithm: algorithm('1.2.840.113549.1.1.5', NULL), hash: 'sha1' }))).toBe(sha1);
    expect(refusal(request({ key: p256, signatureAlgorithm: algorithm('1.2.3.4') }))).toBe(
      'CSR_KEY_POLICY: the CSR is signed with signature algorithm 1.2.3.4; use SHA-256 or stronger.',
    );
    const pss = (...parameters: Buffer[]) => request({ key: rsa2048, signatureAlgorithm: algorithm(RSASSA_PSS, ...parameters), pssSaltLength: 32 });
    expect(refusal(pss(pssParameters(id_sha1, 32)))).toBe(sha1);
    expect(refusal(pss(pssParameters('1.2.3.4', 32)))).toBe('CSR_KEY_POLICY: the CSR is signed with hash 1.2.3.4; use SHA-256 or stronger.');
    const unreadable = 'CSR_KEY_POLICY: the CSR is signed with RSA-PSS without readable parameters; use SHA-256 or stronger.';
    expect(refusal(pss())).toBe(unreadable);
    expect(refusal(pss(NULL))).toBe(unreadable);
    expect(refusal(pss(hex('020101')))).toBe(unreadable);

    const altered = Buffer.from(request({ key: p256 }));
    altered[altered.length - 5] ^= 0xff;
    expect(refusal(altered)).toBe(NOT_PROVEN);
    // Signed by another key; a signature that is no ECDSA signature at all.
    expect(refusal(request({ key: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey, spki: spkiOf(p256) }))).toBe(NOT_PROVEN);
    expect(refusal(request({ spki: spkiOf(p256) }))).toBe(NOT_PROVEN);
    // A valid signature under another algorithm's name: ECDSA labelled RSA, RSA labelled ECDSA.
    expect(refusal(request({ key: p256, signatureAlgorithm: SHA256_WITH_RSA }))).toBe(NOT_PROVEN);
    expect(refusal(request({ key: rsa2048, signatureAlgorithm: SHA256_WITH_ECDSA }))).toBe(NOT_PROVEN);
  });

  it('refuses what is not a CSR with CSR_INVALID: empty or too large, garbage, cut short, a certificate, fields of the wrong type', async () => {
    expect(refusal('')).toBe('CSR_INVALID: the CSR must be 1 byte to 16 KiB, not 0 bytes.');
    expect(refusal(Buffer.alloc(0))).toBe('CSR_INVALID: the CSR must be 1 byte to 16 KiB, not 0 bytes.');
    expect(refusal('x'.repeat(16 * 1024 + 1))).toBe('CSR_INVALID: the CSR must be 1 byte to 16 KiB, not 16385 bytes.');
    expect(refusal('é'.repeat(8 * 1024 + 1))).toBe('CSR_INVALID: the CSR must be 1 byte to 16 KiB, not 16386 bytes.');
    expect(refusal('not a csr')).toBe(NOT_A_CSR);
    expect(refusal(Buffer.from('not a csr'))).toBe(NOT_A_CSR);
    expect(refusal(Buffer.alloc(16 * 1024, 0x30))).toBe(NOT_A_CSR);
    expect(refusal('-----BEGIN CERTIFICATE REQUEST-----\nbm90IGEgY3Ny\n-----END CERTIFICATE REQUEST-----\n')).toBe(NOT_A_CSR);
    expect(refusal('-----BEGIN CERTIFICATE REQUEST-----\n')).toBe(NOT_A_CSR);
    const good = request({ key: p256 });
    for (const length of [1, 2, 10, good.length - 1]) expect(refusal(good.subarray(0, length))).toBe(NOT_A_CSR);
    expect(refusal(good.toString('base64').slice(0, -8))).toBe(NOT_A_CSR);

    const keys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
    const certificate = await x509.X509CertificateGenerator.createSelfSigned({ name: 'CN=card', keys, signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' } });
    expect(refusal(Buffer.from(certificate.rawData))).toBe(NOT_A_CSR);
    expect(refusal(certificate.toString('pem'))).toBe(NOT_A_CSR);

    const spki = spkiOf(p256);
    const info = (...elements: Buffer[]) => request({ key: p256, info: elements });
    // The version: absent, or not an INTEGER.
    expect(refusal(info(CN_CARD, spki, NO_ATTRIBUTES))).toBe(NOT_A_CSR);
    expect(refusal(info(NULL, CN_CARD, spki, NO_ATTRIBUTES))).toBe(NOT_A_CSR);
    // The subject: an INTEGER, an RDN that is not a SET, an attribute without its value.
    expect(refusal(info(VERSION_1, VERSION_1, spki, NO_ATTRIBUTES))).toBe(NOT_A_CSR);
    expect(refusal(info(VERSION_1, hex('30030201ff'), spki, NO_ATTRIBUTES))).toBe(NOT_A_CSR);
    expect(refusal(info(VERSION_1, tlv(0x30, tlv(0x31, tlv(0x30, oid('2.5.4.3')))), spki, NO_ATTRIBUTES))).toBe(NOT_A_CSR);
    // The key: missing, not a SEQUENCE, an OCTET STRING in place of its BIT STRING, no algorithm OID.
    expect(refusal(info(VERSION_1, CN_CARD, NO_ATTRIBUTES))).toBe(NOT_A_CSR);
    expect(refusal(info(VERSION_1, CN_CARD, bitString(spki), NO_ATTRIBUTES))).toBe(NOT_A_CSR);
    expect(refusal(info(VERSION_1, CN_CARD, tlv(0x30, elementsOf(spki)[0], tlv(0x04, pointOf(p256))), NO_ATTRIBUTES))).toBe(NOT_A_CSR);
    expect(refusal(info(VERSION_1, CN_CARD, tlv(0x30, tlv(0x30, NULL), bitString(pointOf(p256))), NO_ATTRIBUTES))).toBe(NOT_A_CSR);
    // The attributes: a SET in place of [0], [0] primitive, an attribute that is not a SEQUENCE { type, SET OF values }.
    expect(refusal(info(VERSION_1, CN_CARD, spki, hex('3100')))).toBe(NOT_A_CSR);
    expect(refusal(info(VERSION_1, CN_CARD, spki, hex('8000')))).toBe(NOT_A_CSR);
    expect(refusal(info(VERSION_1, CN_CARD, spki, hex('a0030201ff')))).toBe(NOT_A_CSR);
    // The signature algorithm an OID without its SEQUENCE; the signature an OCTET STRING; the request info missing.
    const [requestInfo, signatureAlgorithm, signature] = elementsOf(good);
    expect(refusal(tlv(0x30, requestInfo, oid('1.2.840.10045.4.3.2'), signature))).toBe(NOT_A_CSR);
    expect(refusal(tlv(0x30, requestInfo, signatureAlgorithm, tlv(0x04, signature.subarray(3))))).toBe(NOT_A_CSR);
    expect(refusal(tlv(0x30, signatureAlgorithm, signature))).toBe(NOT_A_CSR);
  });

  it('reads what it does not use as RFC 2986 allows: no attributes, an empty subject, any version, extension requests, NULL after the signature OID', () => {
    const spki = spkiOf(p256);
    const expected = checkedFor(spki, 'EC-P256');
    const info = (...elements: Buffer[]) => request({ key: p256, info: elements });
    expect(readCsr(info(VERSION_1, CN_CARD, spki))).toEqual(expected);
    expect(readCsr(info(VERSION_1, hex('3000'), spki, NO_ATTRIBUTES))).toEqual(expected);
    expect(readCsr(info(hex('020105'), CN_CARD, spki, NO_ATTRIBUTES))).toEqual(expected);
    const keyUsage = tlv(0x30, oid('2.5.29.15'), tlv(0x04, hex('03020780')));
    const extensionRequest = tlv(0xa0, tlv(0x30, oid('1.2.840.113549.1.9.14'), tlv(0x31, tlv(0x30, keyUsage))));
    expect(readCsr(info(VERSION_1, CN_CARD, spki, extensionRequest))).toEqual(expected);
    expect(readCsr(request({ key: p256, signatureAlgorithm: algorithm('1.2.840.10045.4.3.2', NULL) }))).toEqual(expected);
  });

  // The schema reader read most of these, re-encoding the SPKI; it goes into the certificate as sent now, so it must be DER.
  it('refuses malformed DER, and BER, with CSR_INVALID: anything after the request or in its SEQUENCEs, other tags, lengths not in DER, unused bits', () => {
    const spki = spkiOf(p256);
    const expected = checkedFor(spki, 'EC-P256');
    const good = request({ key: p256 });
    const [requestInfo, signatureAlgorithm, signature] = elementsOf(good);
    const info = (...elements: Buffer[]) => request({ key: p256, info: elements });
    const withSpki = (subjectPKInfo: Buffer) => info(VERSION_1, CN_CARD, subjectPKInfo, NO_ATTRIBUTES);
    const header = (tag: string, der: Buffer) => Buffer.concat([hex(tag), der.subarray(der[1] & 0x80 ? 2 + (der[1] & 0x7f) : 2)]);
    const cases: Record<string, Buffer> = {
      'an octet after the request': Buffer.concat([good, hex('00')]),
      'a NULL after the request': Buffer.concat([good, NULL]),
      'a fourth element in the request': tlv(0x30, requestInfo, signatureAlgorithm, signature, NULL),
      'a fifth element in the request info': info(VERSION_1, CN_CARD, spki, NO_ATTRIBUTES, NULL),
      'a third element in the SPKI': withSpki(tlv(0x30, ...elementsOf(spki), NULL)),
      'a third element in the signature algorithm': tlv(0x30, requestInfo, algorithm('1.2.840.10045.4.3.2', NULL, NULL), signature),
      'the request tagged [16]': header('b0' + good.subarray(1, good[1] & 0x80 ? 2 + (good[1] & 0x7f) : 2).toString('hex'), good),
      'the request SEQUENCE primitive': header('10' + good.subarray(1, good[1] & 0x80 ? 2 + (good[1] & 0x7f) : 2).toString('hex'), good),
      'the request of indefinite length': Buffer.concat([header('3080', good), hex('0000')]),
      'the SPKI length in long form': withSpki(header(`3081${spki[1].toString(16)}`, spki)),
      'the SPKI length with a leading zero octet': withSpki(header(`308200${spki[1].toString(16)}`, spki)),
      'the SPKI of indefinite length': withSpki(Buffer.concat([header('3080', spki), hex('0000')])),
      'the SPKI tag in high-tag-number form': withSpki(header(`1f10${spki[1].toString(16)}`, spki)),
      'unused bits in the key BIT STRING': withSpki(tlv(0x30, elementsOf(spki)[0], tlv(0x03, hex('03'), pointOf(p256)))),
      'unused bits in the signature BIT STRING': tlv(
        0x30,
        requestInfo,
        signatureAlgorithm,
        Buffer.concat([signature.subarray(0, 2), hex('05'), signature.subarray(3)]),
      ),
    };
    const outcomes = Object.fromEntries(
      Object.entries(cases).map(([name, der]) => {
        try {
          const read = readCsr(der);
          return [name, read.spki.equals(expected.spki) ? 'read' : `read, SPKI ${read.spki.toString('hex')}`];
        } catch (error) {
          return [name, (error as DomainError).detail];
        }
      }),
    );
    expect(outcomes).toEqual(Object.fromEntries(Object.keys(cases).map((name) => [name, NOT_A_CSR])));
  });
});
