import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import {
  BasicOCSPResponse,
  CertID,
  CertStatus,
  OCSPRequest,
  OCSPResponse,
  OCSPResponseStatus,
  ResponderID,
  ResponseBytes,
  ResponseData,
  RevokedInfo,
  SingleResponse,
  id_pkix_ocsp_basic,
  id_pkix_ocsp_nonce,
} from '@peculiar/asn1-ocsp';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier, CRLReason, CRLReasons, Certificate, Extension } from '@peculiar/asn1-x509';
import { Clock, notFound } from '@app/common';
import { KeyStore } from '@app/hsm';
import { CaRow, CertificateAuthorityRepository } from './certificate-authority.repository';
import { CRL_VALIDITY_MS } from './certificate-authority.service';

/** Hash algorithms a CertID may use (SHA-1 is what most clients send). */
const HASHES: Record<string, string> = { '1.3.14.3.2.26': 'sha1', '2.16.840.1.101.3.4.2.1': 'sha256', '2.16.840.1.101.3.4.2.2': 'sha384' };

/** The signature algorithm identifiers of the CA keys. */
const SIGNATURES = {
  'EC-P256': { oid: '1.2.840.10045.4.3.2', hash: 'SHA-256' },
  'EC-P384': { oid: '1.2.840.10045.4.3.3', hash: 'SHA-384' },
  'RSA-3072': { oid: '1.2.840.113549.1.1.11', hash: 'SHA-256' },
} as const;

const REASONS: Record<string, CRLReasons> = {
  keyCompromise: CRLReasons.keyCompromise,
  superseded: CRLReasons.superseded,
  cessationOfOperation: CRLReasons.cessationOfOperation,
  affiliationChanged: CRLReasons.affiliationChanged,
  certificateHold: CRLReasons.certificateHold,
};

/** GeneralizedTime without fractions of a second. */
const seconds = (date: Date) => new Date(Math.floor(date.getTime() / 1000) * 1000);

/**
 * RFC 6960 answers for the organization's CA: good, revoked (with time and reason; held
 * certificates as revoked with certificateHold) or unknown, the nonce echoed, signed by the CA key
 * in the HSM. A request that cannot be read is answered `malformedRequest`, as the RFC asks.
 */
@Injectable()
export class OcspResponder {
  private readonly issuers = new Map<string, { key: string; issuerName: Buffer; issuerKey: Buffer; responderKeyHash: Buffer }>();

  constructor(
    private readonly cas: CertificateAuthorityRepository,
    private readonly keys: KeyStore,
    private readonly clock: Clock,
  ) {}

  async respond(orgId: string, requestDer: Buffer): Promise<Buffer> {
    const ca = await this.cas.find(orgId);
    if (!ca || ca.status !== 'active') throw notFound(`Organization "${orgId}" has no active CA.`);
    let request: OCSPRequest;
    try {
      request = AsnConvert.parse(requestDer, OCSPRequest);
    } catch {
      return Buffer.from(AsnConvert.serialize(new OCSPResponse({ responseStatus: OCSPResponseStatus.malformedRequest })));
    }
    const { issuerName, issuerKey, responderKeyHash } = this.issuerOf(ca);
    const now = seconds(this.clock.now());
    const responses: SingleResponse[] = [];
    for (const { reqCert } of request.tbsRequest.requestList) {
      responses.push(
        new SingleResponse({
          certID: reqCert,
          certStatus: await this.statusOf(ca, reqCert, issuerName, issuerKey),
          thisUpdate: now,
          nextUpdate: new Date(now.getTime() + CRL_VALIDITY_MS),
        }),
      );
    }
    const nonce = request.tbsRequest.requestExtensions?.find((extension) => extension.extnID === id_pkix_ocsp_nonce);
    const data = new ResponseData({
      responderID: new ResponderID({ byKey: new OctetString(responderKeyHash) }),
      producedAt: now,
      responses,
      ...(nonce ? { responseExtensions: [new Extension({ extnID: id_pkix_ocsp_nonce, critical: false, extnValue: nonce.extnValue })] } : {}),
    });
    const tbs = Buffer.from(AsnConvert.serialize(data));
    const algorithm = SIGNATURES[ca.key_algorithm];
    const signature = await this.keys.sign(ca.key_label, tbs, { hash: algorithm.hash, encoding: 'der' });
    const basic = new BasicOCSPResponse({
      tbsResponseData: data,
      signatureAlgorithm: new AlgorithmIdentifier({ algorithm: algorithm.oid, ...(ca.key_algorithm === 'RSA-3072' ? { parameters: null } : {}) }),
      signature: new Uint8Array(signature).buffer,
    });
    const response = new OCSPResponse({
      responseStatus: OCSPResponseStatus.successful,
      responseBytes: new ResponseBytes({ responseType: id_pkix_ocsp_basic, response: new OctetString(AsnConvert.serialize(basic)) }),
    });
    return Buffer.from(AsnConvert.serialize(response));
  }

  /** The CA's name and key as CertIDs hash them, parsed once per CA row (its creation and version). */
  private issuerOf(ca: CaRow): { issuerName: Buffer; issuerKey: Buffer; responderKeyHash: Buffer } {
    const key = `${ca.created_at.getTime()}|${ca.version}`;
    const cached = this.issuers.get(ca.org_id);
    if (cached?.key === key) return cached;
    const tbs = AsnConvert.parse(ca.certificate!, Certificate).tbsCertificate;
    const issuerKey = Buffer.from(tbs.subjectPublicKeyInfo.subjectPublicKey);
    const issuer = {
      key,
      issuerName: Buffer.from(AsnConvert.serialize(tbs.subject)),
      issuerKey,
      responderKeyHash: createHash('sha1').update(issuerKey).digest(),
    };
    this.issuers.set(ca.org_id, issuer);
    return issuer;
  }

  private async statusOf(ca: CaRow, id: CertID, issuerName: Buffer, issuerKey: Buffer): Promise<CertStatus> {
    const hash = HASHES[id.hashAlgorithm.algorithm];
    const digest = (data: Buffer) => (hash ? createHash(hash).update(data).digest() : undefined);
    // A CertID of another issuer, or hashed with an algorithm this responder does not know: unknown.
    if (!hash || !digest(issuerName)!.equals(Buffer.from(id.issuerNameHash.buffer)) || !digest(issuerKey)!.equals(Buffer.from(id.issuerKeyHash.buffer))) {
      return new CertStatus({ unknown: null });
    }
    const serial = Buffer.from(id.serialNumber)
      .toString('hex')
      .replace(/^(00)+/, '')
      .padStart(40, '0');
    const issued = /^[0-9a-f]{40}$/.test(serial) ? await this.cas.findIssued(ca.org_id, serial) : undefined;
    if (!issued) return new CertStatus({ unknown: null });
    if (issued.status === 'good') return new CertStatus({ good: null });
    return new CertStatus({
      revoked: new RevokedInfo({
        revocationTime: seconds(issued.revoked_at!),
        revocationReason: new CRLReason(REASONS[issued.status === 'on-hold' ? 'certificateHold' : (issued.reason ?? '')] ?? CRLReasons.unspecified),
      }),
    });
  }
}
