/**
 * The DER of a v2 CRL (RFC 5280 §5.1), written here byte by byte instead of through
 * `@peculiar/x509`'s ASN.1 objects: a CRL of 100,000 entries must be built and signed in well under
 * two seconds, and one ASN.1 object graph per entry took half a millisecond each. The entries have a
 * fixed shape (serial, revocation date, optional reason code), so they are written straight into
 * one buffer; the rest of the structure is a handful of fields. `crl.spec.ts` proves the output is
 * the canonical DER `@peculiar/asn1-x509` reads and writes back unchanged, and the e2e suite has
 * openssl read and verify it.
 */
import { TAG, integerContent, time, timeSize, tlv, writeTime } from './der';

/** RFC 5280 §5.3.1 CRLReason codes. */
export const CRL_REASON_CODES = {
  unspecified: 0,
  keyCompromise: 1,
  cACompromise: 2,
  affiliationChanged: 3,
  superseded: 4,
  cessationOfOperation: 5,
  certificateHold: 6,
  removeFromCRL: 8,
  privilegeWithdrawn: 9,
  aACompromise: 10,
} as const;

/** OIDs 2.5.29.35 (authorityKeyIdentifier), 2.5.29.20 (cRLNumber), encoded. */
const OID_AKI = Buffer.from('0603551d23', 'hex');
const OID_CRL_NUMBER = Buffer.from('0603551d14', 'hex');
/** crlEntryExtensions holding one reasonCode (2.5.29.21): SEQUENCE { SEQUENCE { OID, OCTET STRING { ENUMERATED n } } }; n goes last. */
const REASON_EXTENSIONS = Buffer.from('300c300a0603551d1504030a01', 'hex');
const REASON_EXTENSIONS_SIZE = REASON_EXTENSIONS.length + 1;

export interface CrlEntry {
  /** The certificate's serial number, hex (as `issued_certificates.serial` keeps it). */
  serial: string;
  revokedAt: Date;
  /** A CRLReason code; absent or 0 (unspecified) writes no reasonCode extension, as RFC 5280 §5.3.1 asks. */
  reason?: number | null;
}

export interface TbsCertListContent {
  /** DER AlgorithmIdentifier of the signature (the same one goes after the TBSCertList). */
  signatureAlgorithm: Buffer;
  /** DER Name of the issuer: the CA certificate's subject, byte for byte. */
  issuer: Buffer;
  thisUpdate: Date;
  nextUpdate: Date;
  entries: readonly CrlEntry[];
  /** The CA's subject key identifier, for the authorityKeyIdentifier extension. */
  authorityKeyId?: Buffer;
  crlNumber: bigint;
}

function bigintBytes(value: bigint): Buffer {
  if (value < 0n) throw new RangeError('A CRL number is never negative');
  const hex = value.toString(16);
  return Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex');
}

/** revokedCertificates: SEQUENCE OF SEQUENCE { userCertificate INTEGER, revocationDate Time, crlEntryExtensions OPTIONAL }. */
function revokedCertificates(entries: readonly CrlEntry[]): Buffer {
  const serials = entries.map((entry) => {
    if (!/^[0-9a-f]+$/i.test(entry.serial) || entry.serial.length % 2) throw new RangeError(`CRL entry serial "${entry.serial}" is not hex octets`);
    const content = integerContent(Buffer.from(entry.serial, 'hex'));
    // RFC 5280 §4.1.2.2: at most 20 octets, plus the zero a set top bit needs.
    if (content.length > 21 || (content.length === 21 && content[0] !== 0)) throw new RangeError(`CRL entry serial "${entry.serial}" is longer than 20 octets`);
    return content;
  });
  // Each entry's content stays under 128 octets (serial 23, time 17, reason 15), so its length is one octet.
  const sizes = entries.map((entry, i) => 4 + serials[i].length + timeSize(entry.revokedAt) + (entry.reason ? REASON_EXTENSIONS_SIZE : 0));
  const body = Buffer.alloc(sizes.reduce((sum, size) => sum + size, 0));
  let offset = 0;
  entries.forEach((entry, i) => {
    body[offset++] = TAG.SEQUENCE;
    body[offset++] = sizes[i] - 2;
    body[offset++] = TAG.INTEGER;
    body[offset++] = serials[i].length;
    offset += serials[i].copy(body, offset);
    offset = writeTime(body, offset, entry.revokedAt);
    if (entry.reason) {
      offset += REASON_EXTENSIONS.copy(body, offset);
      body[offset++] = entry.reason;
    }
  });
  return tlv(TAG.SEQUENCE, body);
}

function extension(oid: Buffer, value: Buffer): Buffer {
  return tlv(TAG.SEQUENCE, oid, tlv(TAG.OCTET_STRING, value));
}

/** TBSCertList (RFC 5280 §5.1.2), v2, with authorityKeyIdentifier and cRLNumber; the entry list is absent when empty, as §5.1.2.6 asks. */
export function encodeTbsCertList(content: TbsCertListContent): Buffer {
  const extensions = [
    ...(content.authorityKeyId ? [extension(OID_AKI, tlv(TAG.SEQUENCE, tlv(TAG.IMPLICIT_0, content.authorityKeyId)))] : []),
    extension(OID_CRL_NUMBER, tlv(TAG.INTEGER, integerContent(bigintBytes(content.crlNumber)))),
  ];
  return tlv(
    TAG.SEQUENCE,
    tlv(TAG.INTEGER, Buffer.from([1])),
    content.signatureAlgorithm,
    content.issuer,
    time(content.thisUpdate),
    time(content.nextUpdate),
    ...(content.entries.length > 0 ? [revokedCertificates(content.entries)] : []),
    tlv(TAG.EXPLICIT_0, tlv(TAG.SEQUENCE, ...extensions)),
  );
}
