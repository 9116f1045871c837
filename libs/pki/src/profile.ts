import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { AsnConvert, AsnUtf8StringConverter, OctetString } from '@peculiar/asn1-schema';
import {
  AttributeTypeAndValue,
  AttributeValue,
  Extension,
  GeneralName,
  GeneralNames,
  Name,
  OtherName,
  RelativeDistinguishedName,
  id_ce_subjectAltName,
  id_ce_subjectKeyIdentifier,
} from '@peculiar/asn1-x509';
import * as x509 from '@peculiar/x509';
import type { KeyAlgorithm, KeyStoreHash } from '@app/hsm';
import type { CheckedCsr } from './csr';
import { TAG, integerContent, time, tlv } from './der';

/** OIDs of the smart-card logon profile (CREDENTIAL-MANAGEMENT.md, "PKI"). */
export const OID = {
  clientAuth: '1.3.6.1.5.5.7.3.2',
  emailProtection: '1.3.6.1.5.5.7.3.4',
  smartcardLogon: '1.3.6.1.4.1.311.20.2.2',
  /** Microsoft's SID extension (Windows strong certificate mapping) and its otherName type. */
  sidExtension: '1.3.6.1.4.1.311.25.2',
  sidOtherName: '1.3.6.1.4.1.311.25.2.1',
  upn: '1.3.6.1.4.1.311.20.2.3',
  commonName: '2.5.4.3',
  organizationName: '2.5.4.10',
} as const;

/** How the CA key signs, as WebCrypto names it (for @peculiar/x509's generators): ECDSA with the curve's hash, or RSA PKCS#1 v1.5. */
export function signingAlgorithmOf(algorithm: KeyAlgorithm): { name: string; hash?: string } {
  if (algorithm === 'RSA-3072') return { name: 'RSASSA-PKCS1-v1_5' };
  return { name: 'ECDSA', hash: SIGNATURE_ALGORITHMS[algorithm].hash };
}

/**
 * The signature algorithm of each CA key as certificates, CRLs and OCSP responses name it: the DER
 * AlgorithmIdentifier of ecdsa-with-SHA256 (1.2.840.10045.4.3.2), ecdsa-with-SHA384 (...4.3.3) and
 * sha256WithRSAEncryption (1.2.840.113549.1.1.11; NULL parameters for RSA, none for ECDSA: RFC 5758
 * §3.2, RFC 4055 §5), and the hash the HSM signs with.
 */
export const SIGNATURE_ALGORITHMS: Record<KeyAlgorithm, { der: Buffer; hash: KeyStoreHash }> = {
  'EC-P256': { der: Buffer.from('300a06082a8648ce3d040302', 'hex'), hash: 'SHA-256' },
  'EC-P384': { der: Buffer.from('300a06082a8648ce3d040303', 'hex'), hash: 'SHA-384' },
  'RSA-3072': { der: Buffer.from('300d06092a864886f70d01010b0500', 'hex'), hash: 'SHA-256' },
};

/** A serial of 20 random octets with the top bit cleared (positive, RFC 5280 4.1.2.2), never a leading zero octet. */
export function randomSerial(): string {
  const bytes = randomBytes(20);
  bytes[0] = (bytes[0] & 0x7f) | 0x01;
  return bytes.toString('hex');
}

/** The user a certificate is for, as the credential-management domain knows them. */
export interface CertificateSubject {
  userId: string;
  userName: string;
  displayName?: string | null;
  email?: string | null;
  /** EnrollmentData `userPrincipalName`, else the userName is the UPN. */
  userPrincipalName?: string | null;
  /** EnrollmentData `objectSid` (S-1-5-...), put in the SID extension when present. */
  objectSid?: string | null;
}

/** The SID extension: SEQUENCE { [0] otherName { 1.3.6.1.4.1.311.25.2.1, [0] OCTET STRING sid } }. */
function sidExtension(sid: string): Buffer {
  const names = new GeneralNames([
    new GeneralName({ otherName: new OtherName({ typeId: OID.sidOtherName, value: AsnConvert.serialize(new OctetString(Buffer.from(sid, 'ascii'))) }) }),
  ]);
  return extension(OID.sidExtension, names);
}

/**
 * The extensions every leaf of one CA carries whatever the user and key, encoded once per CA (the
 * certificate authority keeps them with the CA's signing state): basicConstraints, keyUsage and
 * extendedKeyUsage in their two variants, authorityKeyIdentifier, CRL distribution point and AIA.
 */
export interface CaLeafProfile {
  basicConstraints: Buffer;
  keyUsage: { ec: Buffer; rsa: Buffer };
  extendedKeyUsage: { plain: Buffer; withEmail: Buffer };
  authorityKeyIdentifier: Buffer;
  crlDistributionPoints: Buffer;
  authorityInfoAccess: Buffer;
}

export function caLeafProfile(caKeyIdentifier: string, urls: { crl: string; caIssuers: string; ocsp: string }): CaLeafProfile {
  const der = (extension: x509.Extension) => Buffer.from(extension.rawData);
  const usages = [OID.clientAuth, OID.smartcardLogon];
  return {
    basicConstraints: der(new x509.BasicConstraintsExtension(false, undefined, true)),
    keyUsage: {
      ec: der(new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true)),
      rsa: der(new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true)),
    },
    extendedKeyUsage: {
      plain: der(new x509.ExtendedKeyUsageExtension(usages, false)),
      withEmail: der(new x509.ExtendedKeyUsageExtension([...usages, OID.emailProtection], false)),
    },
    authorityKeyIdentifier: der(new x509.AuthorityKeyIdentifierExtension(caKeyIdentifier, false)),
    crlDistributionPoints: der(new x509.CRLDistributionPointsExtension([urls.crl], false)),
    authorityInfoAccess: der(new x509.AuthorityInfoAccessExtension({ caIssuers: urls.caIssuers, ocsp: urls.ocsp }, false)),
  };
}

/** One extension, encoded with the schemas: SEQUENCE { extnID, critical DEFAULT FALSE, extnValue OCTET STRING }. */
function extension(extnID: string, value: unknown): Buffer {
  return Buffer.from(AsnConvert.serialize(new Extension({ extnID, critical: false, extnValue: new OctetString(AsnConvert.serialize(value)) })));
}

/** A Name of UTF8String attributes (RFC 5280 §4.1.2.6 asks new certificates for UTF8String). */
function utf8Name(attributes: [type: string, value: string][]): Buffer {
  return Buffer.from(
    AsnConvert.serialize(
      new Name(
        attributes.map(
          ([type, value]) => new RelativeDistinguishedName([new AttributeTypeAndValue({ type, value: new AttributeValue({ utf8String: value }) })]),
        ),
      ),
    ),
  );
}

const VERSION_3 = Buffer.from('a003020102', 'hex');

/**
 * The leaf's TBSCertificate (RFC 5280 §4.1), everything the smart-card logon profile asks for:
 * v3, the serial, issuer and validity, subject `CN={displayName or userName}, O={organization}`,
 * the CSR's public key as sent, and the extensions in the order BC, KU, EKU, SAN (UPN, email), SKI,
 * AKI, CDP, AIA, SID. The per-user parts are encoded with the `@peculiar/asn1-x509` schemas, the
 * per-CA parts come encoded from `CaLeafProfile`; the DER is assembled around them directly (one
 * object graph per certificate cost more than the HSM signature).
 */
export function leafTbsCertificate(options: {
  profile: CaLeafProfile;
  serial: string;
  signatureAlgorithm: Buffer;
  issuer: Buffer;
  notBefore: Date;
  notAfter: Date;
  subject: CertificateSubject;
  organizationName: string;
  csr: CheckedCsr;
}): { tbs: Buffer; subject: string } {
  const { profile, subject, csr } = options;
  const names = [
    new GeneralName({
      otherName: new OtherName({ typeId: OID.upn, value: AsnConvert.serialize(AsnUtf8StringConverter.toASN(subject.userPrincipalName || subject.userName)) }),
    }),
  ];
  if (subject.email) names.push(new GeneralName({ rfc822Name: subject.email }));
  const extensions = [
    profile.basicConstraints,
    csr.rsa ? profile.keyUsage.rsa : profile.keyUsage.ec,
    subject.email ? profile.extendedKeyUsage.withEmail : profile.extendedKeyUsage.plain,
    extension(id_ce_subjectAltName, new GeneralNames(names)),
    extension(id_ce_subjectKeyIdentifier, new OctetString(csr.keyIdentifier)),
    profile.authorityKeyIdentifier,
    profile.crlDistributionPoints,
    profile.authorityInfoAccess,
    ...(subject.objectSid ? [sidExtension(subject.objectSid)] : []),
  ];
  const subjectName = utf8Name([
    [OID.commonName, subject.displayName || subject.userName],
    [OID.organizationName, options.organizationName],
  ]);
  const tbs = tlv(
    TAG.SEQUENCE,
    VERSION_3,
    tlv(TAG.INTEGER, integerContent(Buffer.from(options.serial, 'hex'))),
    options.signatureAlgorithm,
    options.issuer,
    tlv(TAG.SEQUENCE, time(options.notBefore), time(options.notAfter)),
    subjectName,
    csr.spki,
    tlv(TAG.EXPLICIT_3, tlv(TAG.SEQUENCE, ...extensions)),
  );
  return { tbs, subject: new x509.Name(subjectName).toString() };
}
