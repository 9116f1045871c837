import 'reflect-metadata';
import { CertID, OCSPRequest, Request, TBSRequest, id_pkix_ocsp_nonce } from '@peculiar/asn1-ocsp';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier, Extension, GeneralName } from '@peculiar/asn1-x509';
import { readOcspRequest } from './ocsp-request';

const SHA1 = '1.3.14.3.2.26';
const certId = (serial: string) =>
  new CertID({
    hashAlgorithm: new AlgorithmIdentifier({ algorithm: SHA1, parameters: null }),
    issuerNameHash: new OctetString(Buffer.alloc(20, 1)),
    issuerKeyHash: new OctetString(Buffer.alloc(20, 2)),
    serialNumber: new Uint8Array(Buffer.from(serial, 'hex')).buffer,
  });
const encode = (tbs: Partial<TBSRequest>) => Buffer.from(AsnConvert.serialize(new OCSPRequest({ tbsRequest: new TBSRequest({ requestList: [], ...tbs }) })));
const nonceExtension = (value: Buffer) =>
  new Extension({ extnID: id_pkix_ocsp_nonce, critical: false, extnValue: new OctetString(AsnConvert.serialize(new OctetString(value))) });

/** RFC 6960 4.1.1 read without the schema (issue 35): what the responder needs, or undefined for anything else. */
describe('readOcspRequest', () => {
  it('reads each CertID (hash algorithm, issuer hashes, serial, its DER as sent) and the nonce', () => {
    const ids = [certId('0a1b'), certId('00ff')];
    const nonce = Buffer.from('0410' + '77'.repeat(16), 'hex');
    const read = readOcspRequest(
      encode({ requestList: ids.map((reqCert) => new Request({ reqCert })), requestExtensions: [nonceExtension(Buffer.alloc(16, 0x77))] }),
    );
    expect(read?.certificates).toEqual(
      ids.map((id) => ({
        hashAlgorithm: SHA1,
        issuerNameHash: Buffer.alloc(20, 1),
        issuerKeyHash: Buffer.alloc(20, 2),
        serialNumber: Buffer.from(id.serialNumber),
        der: Buffer.from(AsnConvert.serialize(id)),
      })),
    );
    // The extnValue's content: the OCTET STRING the client put there, echoed as it is.
    expect(read?.nonce).toEqual(nonce);
  });

  it('skips the version and the requestor name, and other extensions; no nonce is none', () => {
    const other = new Extension({ extnID: '1.3.6.1.5.5.7.48.1.4', critical: false, extnValue: new OctetString(Buffer.from([5, 0])) });
    const read = readOcspRequest(
      encode({
        version: 0,
        requestorName: new GeneralName({ dNSName: 'client.example' }),
        requestList: [new Request({ reqCert: certId('01') })],
        requestExtensions: [other],
      }),
    );
    expect(read?.certificates.map((id) => id.serialNumber.toString('hex'))).toEqual(['01']);
    expect(read?.nonce).toBeUndefined();
  });

  it('is undefined for what is not such a request: garbage, a cut request, bytes after it, wrong types, an element too many', () => {
    const good = encode({ requestList: [new Request({ reqCert: certId('01') })] });
    expect(readOcspRequest(good)).toBeDefined();
    expect(readOcspRequest(Buffer.concat([good, Buffer.from([0])]))).toBeUndefined();
    expect(readOcspRequest(Buffer.concat([good, good]))).toBeUndefined();
    expect(readOcspRequest(Buffer.from('not DER at all'))).toBeUndefined();
    expect(readOcspRequest(Buffer.alloc(0))).toBeUndefined();
    expect(readOcspRequest(good.subarray(0, good.length - 3))).toBeUndefined();
    // An INTEGER where the request list belongs.
    expect(readOcspRequest(Buffer.from('30053003020101', 'hex'))).toBeUndefined();
    // After the request list, something that is not [2] requestExtensions (a NULL).
    expect(readOcspRequest(Buffer.from('3008300630000500', 'hex'))).toBeUndefined();
    // A CertID of three fields (no serial number).
    const threeFields = '300d' + '300706052b0e03021a' + '0400' + '0400';
    expect(readOcspRequest(Buffer.from('3015' + '3013' + '3011' + '300f' + threeFields, 'hex'))).toBeUndefined();
    // The same with its serial number: read.
    expect(
      readOcspRequest(Buffer.from('3018' + '3016' + '3014' + '3012' + '3010' + '300706052b0e03021a' + '0400' + '0400' + '020101', 'hex'))?.certificates,
    ).toHaveLength(1);
    // A nonce extension whose extnValue is not an OCTET STRING.
    const badNonce = new Extension({ extnID: id_pkix_ocsp_nonce, critical: false, extnValue: new OctetString(Buffer.from([4, 0])) });
    const encoded = encode({ requestList: [new Request({ reqCert: certId('01') })], requestExtensions: [badNonce] });
    const broken = Buffer.from(encoded);
    // Rewrite the extnValue's tag (the last OCTET STRING of the request) to a BOOLEAN.
    broken[broken.lastIndexOf(0x04, broken.length - 3)] = 0x01;
    expect(readOcspRequest(broken)).toBeUndefined();
  });
});
