import 'reflect-metadata';
import { randomBytes, type webcrypto } from 'node:crypto';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { GeneralName, GeneralNames, OtherName } from '@peculiar/asn1-x509';
import * as x509 from '@peculiar/x509';
import type { KeyAlgorithm } from '@app/hsm';

/** OIDs of the smart-card logon profile (CREDENTIAL-MANAGEMENT.md, "PKI"). */
export const OID = {
  clientAuth: '1.3.6.1.5.5.7.3.2',
  emailProtection: '1.3.6.1.5.5.7.3.4',
  smartcardLogon: '1.3.6.1.4.1.311.20.2.2',
  /** Microsoft's SID extension (Windows strong certificate mapping) and its otherName type. */
  sidExtension: '1.3.6.1.4.1.311.25.2',
  sidOtherName: '1.3.6.1.4.1.311.25.2.1',
} as const;

/** How the CA key signs: ECDSA with the curve's hash, or RSA PKCS#1 v1.5 with SHA-256. */
export function signingAlgorithmOf(algorithm: KeyAlgorithm): { name: string; hash?: string } {
  if (algorithm === 'RSA-3072') return { name: 'RSASSA-PKCS1-v1_5' };
  return { name: 'ECDSA', hash: algorithm === 'EC-P384' ? 'SHA-384' : 'SHA-256' };
}

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
export function sidExtension(sid: string): x509.Extension {
  const names = new GeneralNames([
    new GeneralName({ otherName: new OtherName({ typeId: OID.sidOtherName, value: AsnConvert.serialize(new OctetString(Buffer.from(sid, 'ascii'))) }) }),
  ]);
  return new x509.Extension(OID.sidExtension, false, AsnConvert.serialize(names));
}

/** The leaf's extensions: everything the smart-card logon profile asks for. */
export async function leafExtensions(options: {
  subject: CertificateSubject;
  publicKey: x509.PublicKey;
  rsa: boolean;
  caKeyIdentifier: string;
  pkiBaseUrl: string;
  crypto: webcrypto.Crypto;
}): Promise<x509.Extension[]> {
  const { subject, rsa, pkiBaseUrl } = options;
  const usage = x509.KeyUsageFlags.digitalSignature | (rsa ? x509.KeyUsageFlags.keyEncipherment : 0);
  const extendedUsages = [OID.clientAuth, OID.smartcardLogon, ...(subject.email ? [OID.emailProtection] : [])];
  const names: x509.JsonGeneralNames = [{ type: 'upn', value: subject.userPrincipalName || subject.userName }];
  if (subject.email) names.push({ type: 'email', value: subject.email });
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(usage, true),
    new x509.ExtendedKeyUsageExtension(extendedUsages, false),
    new x509.SubjectAlternativeNameExtension(names, false),
    await x509.SubjectKeyIdentifierExtension.create(options.publicKey, false, options.crypto),
    new x509.AuthorityKeyIdentifierExtension(options.caKeyIdentifier, false),
    new x509.CRLDistributionPointsExtension([`${pkiBaseUrl}/crl`], false),
    new x509.AuthorityInfoAccessExtension({ caIssuers: `${pkiBaseUrl}/ca.crt`, ocsp: `${pkiBaseUrl}/ocsp` }, false),
  ];
  if (subject.objectSid) extensions.push(sidExtension(subject.objectSid));
  return extensions;
}
