/**
 * The few DER primitives libs/pki writes by hand where the ASN.1 object graphs of
 * `@peculiar/asn1-schema` cost more than the work itself: the envelopes around an already encoded
 * body (certificate, CRL, OCSP response), the fixed-shape CRL entries (crl.ts) and an OCSP answer's
 * ResponseData, whose parts are fixed too (ocsp-responder.ts). Everything with structure worth a
 * schema is still encoded by the `@peculiar/asn1-*` schemas.
 */

export const TAG = {
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  ENUMERATED: 0x0a,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  SEQUENCE: 0x30,
  /** [0] IMPLICIT, primitive. */
  IMPLICIT_0: 0x80,
  /** [0] ... [3] EXPLICIT (constructed). */
  EXPLICIT_0: 0xa0,
  EXPLICIT_1: 0xa1,
  EXPLICIT_2: 0xa2,
  EXPLICIT_3: 0xa3,
  /** [1] IMPLICIT over a SEQUENCE (OCSP's RevokedInfo): the same octet as [1] EXPLICIT. */
  IMPLICIT_CONSTRUCTED_1: 0xa1,
} as const;

function lengthBytes(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** One DER element: tag, definite length, content. */
export function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), lengthBytes(body.length), body]);
}

/** The content octets of a non-negative INTEGER given as big-endian bytes: no redundant leading zeros, a zero added before a set top bit. */
export function integerContent(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = bytes.subarray(start);
  if (trimmed.length === 0) return Buffer.from([0]);
  return trimmed[0] & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed;
}

/** RFC 5280 §4.1.2.5: UTCTime for 1950 through 2049, GeneralizedTime otherwise; whole seconds, Zulu. */
function isUtcTime(date: Date): boolean {
  const year = date.getUTCFullYear();
  return year >= 1950 && year < 2050;
}

/** Octets of a Time element: tag, length, 13 (UTCTime) or 15 (GeneralizedTime) characters. */
export function timeSize(date: Date): number {
  return isUtcTime(date) ? 15 : 17;
}

function writeDigits(target: Buffer, offset: number, value: number, digits: number): number {
  for (let i = digits - 1; i >= 0; i--) {
    target[offset + i] = 0x30 + (value % 10);
    value = Math.floor(value / 10);
  }
  return offset + digits;
}

export function writeTime(target: Buffer, offset: number, date: Date): number {
  const year = date.getUTCFullYear();
  const utc = isUtcTime(date);
  target[offset++] = utc ? TAG.UTC_TIME : TAG.GENERALIZED_TIME;
  target[offset++] = utc ? 13 : 15;
  offset = utc ? writeDigits(target, offset, year % 100, 2) : writeDigits(target, offset, year, 4);
  offset = writeDigits(target, offset, date.getUTCMonth() + 1, 2);
  offset = writeDigits(target, offset, date.getUTCDate(), 2);
  offset = writeDigits(target, offset, date.getUTCHours(), 2);
  offset = writeDigits(target, offset, date.getUTCMinutes(), 2);
  offset = writeDigits(target, offset, date.getUTCSeconds(), 2);
  target[offset++] = 0x5a; // 'Z'
  return offset;
}

/** A GeneralizedTime element whatever the year (OCSP's times are always GeneralizedTime, RFC 6960 4.2.1); whole seconds, Zulu. */
export function generalizedTime(date: Date): Buffer {
  const target = Buffer.alloc(17);
  target[0] = TAG.GENERALIZED_TIME;
  target[1] = 15;
  let offset = writeDigits(target, 2, date.getUTCFullYear(), 4);
  offset = writeDigits(target, offset, date.getUTCMonth() + 1, 2);
  offset = writeDigits(target, offset, date.getUTCDate(), 2);
  offset = writeDigits(target, offset, date.getUTCHours(), 2);
  offset = writeDigits(target, offset, date.getUTCMinutes(), 2);
  writeDigits(target, offset, date.getUTCSeconds(), 2);
  target[16] = 0x5a; // 'Z'
  return target;
}

export function time(date: Date): Buffer {
  const target = Buffer.alloc(timeSize(date));
  writeTime(target, 0, date);
  return target;
}

/** A signed structure: SEQUENCE { tbs, signatureAlgorithm, signatureValue BIT STRING } (certificate, CRL, BasicOCSPResponse). */
export function signedEnvelope(tbs: Buffer, signatureAlgorithm: Buffer, signature: Buffer): Buffer {
  return tlv(TAG.SEQUENCE, tbs, signatureAlgorithm, tlv(TAG.BIT_STRING, Buffer.from([0]), signature));
}
