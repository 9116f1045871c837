// Test hooks of the PKI library, for the suites and `npm run bench:pki`: never imported by production code.
import 'reflect-metadata';
import { createHash, webcrypto } from 'node:crypto';
import { CertID, OCSPRequest, Request, TBSRequest, id_pkix_ocsp_nonce } from '@peculiar/asn1-ocsp';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier, Certificate, Extension } from '@peculiar/asn1-x509';
import * as x509 from '@peculiar/x509';

const crypto = webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0];

/** A PKCS#10 CSR (DER) for a fresh P-256 key, as a card makes one. */
export async function p256Csr(): Promise<Buffer> {
  const keys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({ name: 'CN=card', keys, signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' } }, crypto);
  return Buffer.from(csr.rawData);
}

/** An RFC 6960 request (DER) for one certificate of the CA, CertID hashed with SHA-1 as most clients do; with a nonce when one is given. */
export function ocspRequest(options: { caCertificate: Buffer; serial: string; nonce?: Buffer }): Buffer {
  const ca = AsnConvert.parse(options.caCertificate, Certificate).tbsCertificate;
  const sha1 = (data: ArrayBuffer) => new OctetString(createHash('sha1').update(Buffer.from(data)).digest());
  const nonce =
    options.nonce &&
    new Extension({ extnID: id_pkix_ocsp_nonce, critical: false, extnValue: new OctetString(AsnConvert.serialize(new OctetString(options.nonce))) });
  const request = new OCSPRequest({
    tbsRequest: new TBSRequest({
      ...(nonce ? { requestExtensions: [nonce] } : {}),
      requestList: [
        new Request({
          reqCert: new CertID({
            hashAlgorithm: new AlgorithmIdentifier({ algorithm: '1.3.14.3.2.26', parameters: null }),
            issuerNameHash: sha1(AsnConvert.serialize(ca.subject)),
            issuerKeyHash: sha1(ca.subjectPublicKeyInfo.subjectPublicKey),
            serialNumber: new Uint8Array(Buffer.from(options.serial, 'hex')).buffer,
          }),
        }),
      ],
    }),
  });
  return Buffer.from(AsnConvert.serialize(request));
}
