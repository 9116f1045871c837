import * as asn1js from 'asn1js';
import { id_pkix_ocsp_nonce } from '@peculiar/asn1-ocsp';
import { CONTEXT, UNIVERSAL, isTagged, sequenceItems } from './der-reading';

/**
 * One certificate an OCSP request asks about (RFC 6960 4.1.1, CertID): the hash algorithm's OID, the
 * issuer's name and key hashes, the serial number's content octets, and the CertID's DER exactly as
 * sent, which the answer's SingleResponse repeats.
 */
export interface AskedCertificate {
  hashAlgorithm: string;
  issuerNameHash: Buffer;
  issuerKeyHash: Buffer;
  serialNumber: Buffer;
  der: Buffer;
}

/** What a request asks: its certificates and, when it has one, its nonce extension's extnValue (the OCTET STRING's content). */
export interface OcspQuestion {
  certificates: AskedCertificate[];
  nonce?: Buffer;
}

/** The content octets of a primitive OCTET STRING (DER never builds one of pieces). */
function octets(block: asn1js.AsnType | undefined): Buffer | undefined {
  if (!(block instanceof asn1js.OctetString) || block.idBlock.isConstructed) return undefined;
  return Buffer.from(block.valueBlock.valueHexView);
}

/** The items of an EXPLICIT [tagNumber] wrapper around one SEQUENCE (Extensions), or undefined. */
function explicitSequence(block: asn1js.AsnType, tagNumber: number): asn1js.AsnType[] | undefined {
  if (!isTagged(block, CONTEXT, tagNumber) || !(block instanceof asn1js.Constructed)) return undefined;
  const inner = block.valueBlock.value;
  return inner.length === 1 ? sequenceItems(inner[0]) : undefined;
}

function certificateOf(request: asn1js.AsnType): AskedCertificate | undefined {
  // Request ::= SEQUENCE { reqCert CertID, singleRequestExtensions [0] EXPLICIT Extensions OPTIONAL }
  const [certId] = sequenceItems(request) ?? [];
  // CertID ::= SEQUENCE { hashAlgorithm AlgorithmIdentifier, issuerNameHash OCTET STRING, issuerKeyHash OCTET STRING, serialNumber INTEGER }
  const fields = sequenceItems(certId);
  if (!certId || fields?.length !== 4) return undefined;
  const [algorithm] = sequenceItems(fields[0]) ?? [];
  const issuerNameHash = octets(fields[1]);
  const issuerKeyHash = octets(fields[2]);
  const serial = fields[3];
  if (!(algorithm instanceof asn1js.ObjectIdentifier) || !issuerNameHash || !issuerKeyHash || !(serial instanceof asn1js.Integer)) return undefined;
  return {
    hashAlgorithm: algorithm.valueBlock.toString(),
    issuerNameHash,
    issuerKeyHash,
    serialNumber: Buffer.from(serial.valueBlock.valueHexView),
    der: Buffer.from(certId.valueBeforeDecodeView),
  };
}

/** The extnValue of the nonce extension among `extensions` (Extension ::= SEQUENCE { extnID, critical DEFAULT FALSE, extnValue OCTET STRING }). */
function nonceOf(extensions: asn1js.AsnType[]): { found: boolean; value?: Buffer } {
  for (const extension of extensions) {
    const fields = sequenceItems(extension);
    if (!fields || fields.length < 2 || !(fields[0] instanceof asn1js.ObjectIdentifier)) return { found: true };
    if (fields[0].valueBlock.toString() !== id_pkix_ocsp_nonce) continue;
    return { found: true, value: octets(fields[fields.length - 1]) };
  }
  return { found: false };
}

/**
 * Reads an OCSP request (RFC 6960 4.1.1) with asn1js's DER reader, walking the few fields the
 * responder uses, without `@peculiar/asn1-schema`'s schema comparison: that comparison and the
 * object graph were half of the CPU of an answer signed per request (issue 35, docs/performance.md).
 * Undefined when the bytes are not such a request (the answer is then malformedRequest).
 *   OCSPRequest ::= SEQUENCE { tbsRequest TBSRequest, optionalSignature [0] EXPLICIT Signature OPTIONAL }
 *   TBSRequest ::= SEQUENCE { version [0] EXPLICIT DEFAULT v1, requestorName [1] EXPLICIT GeneralName OPTIONAL,
 *                             requestList SEQUENCE OF Request, requestExtensions [2] EXPLICIT Extensions OPTIONAL }
 */
export function readOcspRequest(der: Buffer): OcspQuestion | undefined {
  const parsed = asn1js.fromBER(der);
  // Bytes after the request make it another request than the one read: malformed, as a CSR's would be.
  if (parsed.offset !== der.length || parsed.result.error) return undefined;
  const [tbs] = sequenceItems(parsed.result) ?? [];
  const items = sequenceItems(tbs);
  if (!items) return undefined;
  let next = 0;
  if (items[next] && isTagged(items[next], CONTEXT, 0)) next++;
  if (items[next] && isTagged(items[next], CONTEXT, 1)) next++;
  const requestList = sequenceItems(items[next]);
  if (!requestList || !isTagged(items[next], UNIVERSAL, 16)) return undefined;
  next++;
  let nonce: Buffer | undefined;
  if (items[next]) {
    const extensions = explicitSequence(items[next], 2);
    if (!extensions) return undefined;
    const found = nonceOf(extensions);
    if (found.found && found.value === undefined) return undefined;
    nonce = found.value;
    next++;
  }
  if (next !== items.length) return undefined;
  const certificates: AskedCertificate[] = [];
  for (const request of requestList) {
    const certificate = certificateOf(request);
    if (!certificate) return undefined;
    certificates.push(certificate);
  }
  return { certificates, nonce };
}
