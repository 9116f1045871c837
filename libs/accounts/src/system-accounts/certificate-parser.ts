import { X509Certificate, createHash } from 'node:crypto';
import { invalidValue } from '@app/common';

export interface ParsedCertificate {
  /** The single certificate, re-encoded as canonical PEM. */
  pem: string;
  /** x5t#S256: base64url SHA-256 of the DER encoding (RFC 7515 4.1.8). */
  thumbprint: string;
  subject: string;
  issuer: string;
  serialNumber: string;
  notBefore: Date;
  notAfter: Date;
}

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g;
const ANY_PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----/;

/**
 * Checks an uploaded PEM as DECISIONS 4 says and says exactly why it is refused: no certificate,
 * more than one, a private key inside, not PEM, unparsable, already expired, RSA under 2048 bits,
 * unsupported key type (RSA, EC P-256 and P-384 are accepted).
 */
export function parseCertificateUpload(text: string, now: Date): ParsedCertificate {
  if (typeof text !== 'string' || text.trim() === '') {
    throw invalidValue('No certificate was uploaded: send one X.509 certificate in PEM form (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----).');
  }
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text)) {
    throw invalidValue('The upload contains a private key. Upload only the certificate; the private key never leaves your system.');
  }
  const blocks = [...text.matchAll(CERTIFICATE_BLOCK)];
  if (blocks.length === 0) {
    const other = ANY_PEM_BLOCK.exec(text);
    throw invalidValue(
      other
        ? `The upload holds no certificate (it holds a PEM "${other[1]}" block). Send one X.509 certificate between BEGIN CERTIFICATE and END CERTIFICATE lines.`
        : 'The upload is not PEM. Send one X.509 certificate, Base64 encoded between -----BEGIN CERTIFICATE----- and -----END CERTIFICATE----- lines (convert DER with: openssl x509 -inform der -in cert.der -out cert.pem).',
    );
  }
  if (blocks.length > 1) {
    throw invalidValue(`The upload holds ${blocks.length} certificates. Upload exactly one: the system account's own certificate, without its chain.`);
  }
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(blocks[0][0]);
  } catch {
    throw invalidValue('The certificate cannot be parsed as X.509: check that the PEM block is complete and not altered.');
  }
  const notBefore = new Date(certificate.validFrom);
  const notAfter = new Date(certificate.validTo);
  if (notAfter.getTime() <= now.getTime()) {
    throw invalidValue(`The certificate expired on ${notAfter.toISOString()}. Upload a certificate that is still valid.`);
  }
  const key = certificate.publicKey;
  if (key.asymmetricKeyType === 'rsa') {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < 2048) throw invalidValue(`The certificate's RSA key has ${bits} bits; at least 2048 are required.`);
  } else if (key.asymmetricKeyType === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve !== 'prime256v1' && curve !== 'secp384r1') {
      throw invalidValue(`The certificate's EC key uses curve ${curve ?? 'unknown'}; only P-256 and P-384 are supported.`);
    }
  } else {
    throw invalidValue(`The certificate's key type ${key.asymmetricKeyType ?? 'unknown'} is not supported; use RSA (2048 bits or more) or EC P-256/P-384.`);
  }
  const der = certificate.raw;
  return {
    pem: certificate.toString(),
    thumbprint: createHash('sha256').update(der).digest('base64url'),
    subject: certificate.subject.split('\n').join(', '),
    issuer: certificate.issuer.split('\n').join(', '),
    serialNumber: certificate.serialNumber,
    notBefore,
    notAfter,
  };
}
