import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { OCSPResponse, OCSPResponseStatus, id_pkix_ocsp_basic, id_pkix_ocsp_nonce } from '@peculiar/asn1-ocsp';
import { AsnConvert, AsnObjectIdentifierConverter } from '@peculiar/asn1-schema';
import { CRLReasons, Certificate } from '@peculiar/asn1-x509';
import { Clock, notFound } from '@app/common';
import { KeyStore } from '@app/hsm';
import { Metrics } from '@app/observability';
import { signWithCaKey } from './ca-key-sign';
import { ChangeFeed, FeedCache } from '@app/persistence';
import { CaRow, CertificateAuthorityRepository, IssuedStatus, SigningGeneration } from './certificate-authority.repository';
import { CRL_VALIDITY_MS } from './certificate-authority.service';
import { TAG, generalizedTime, signedEnvelope, tlv } from './der';
import { AskedCertificate, readOcspRequest } from './ocsp-request';
import { SIGNATURE_ALGORITHMS } from './profile';

/** Hash algorithms a CertID may use (SHA-1 is what most clients send). */
const HASHES: Record<string, string> = { '1.3.14.3.2.26': 'sha1', '2.16.840.1.101.3.4.2.1': 'sha256', '2.16.840.1.101.3.4.2.2': 'sha384' };

const REASONS: Record<string, CRLReasons> = {
  keyCompromise: CRLReasons.keyCompromise,
  cACompromise: CRLReasons.cACompromise,
  superseded: CRLReasons.superseded,
  cessationOfOperation: CRLReasons.cessationOfOperation,
  affiliationChanged: CRLReasons.affiliationChanged,
  certificateHold: CRLReasons.certificateHold,
};

const MAX_CACHED_CAS = 1_000;
const MAX_CACHED_STATUSES = 100_000;
const MAX_PRE_PRODUCED = 20_000;
const MAX_REMEMBERED_REQUEST_BYTES = 512;
/** As long as GET answers may be cached by HTTP caches (`Cache-Control: max-age=60`). */
const PRE_PRODUCED_MAX_AGE_MS = 60_000;

/** More CertIDs in one request are refused as malformedRequest: each is a lookup and a hash. */
const MAX_CERTIFICATES_PER_REQUEST = 32;

const MALFORMED_REQUEST = Buffer.from(AsnConvert.serialize(new OCSPResponse({ responseStatus: OCSPResponseStatus.malformedRequest })));
/** responseStatus successful (ENUMERATED 0) and responseType id-pkix-ocsp-basic, encoded. */
const SUCCESSFUL = Buffer.from([TAG.ENUMERATED, 1, OCSPResponseStatus.successful]);
const ID_PKIX_OCSP_BASIC = Buffer.from(AsnObjectIdentifierConverter.toASN(id_pkix_ocsp_basic).toBER());
const ID_PKIX_OCSP_NONCE = Buffer.from(AsnObjectIdentifierConverter.toASN(id_pkix_ocsp_nonce).toBER());
/** CertStatus good [0] IMPLICIT NULL and unknown [2] IMPLICIT NULL, encoded. */
const GOOD = Buffer.from([0x80, 0x00]);
const UNKNOWN = Buffer.from([0x82, 0x00]);

/** The serial a CertID asks for, as `issued_certificates.serial` keeps it (40 hex digits); undefined when it cannot be one of ours. */
function serialOf(id: AskedCertificate): string | undefined {
  const serial = id.serialNumber
    .toString('hex')
    .replace(/^(00)+/, '')
    .padStart(40, '0');
  return /^[0-9a-f]{40}$/.test(serial) ? serial : undefined;
}

interface Issuer {
  key: string;
  issuerName: Buffer;
  issuerKey: Buffer;
  responderKeyHash: Buffer;
}

/** Whether the CertID names `issuer` (its name and key hashes, with a hash algorithm this responder knows). */
function issuedBy(id: AskedCertificate, issuer: Issuer): boolean {
  const hash = HASHES[id.hashAlgorithm];
  if (!hash) return false;
  const digest = (data: Buffer) => createHash(hash).update(data).digest();
  return digest(issuer.issuerName).equals(id.issuerNameHash) && digest(issuer.issuerKey).equals(id.issuerKeyHash);
}

/** What identifies a CertID besides its serial: the hash algorithm and the issuer's name and key hashes. */
function certIdKey(id: AskedCertificate): string {
  return `${id.hashAlgorithm}|${id.issuerNameHash.toString('hex')}|${id.issuerKeyHash.toString('hex')}`;
}

/** The generations of an organization's CA that may answer: the current CA row, and the retired ones with when their last certificate expires. */
interface Responders {
  ca: CaRow;
  retired: (SigningGeneration & { last_certificate_expires: Date })[];
}

/** GeneralizedTime without fractions of a second. */
const seconds = (date: Date) => new Date(Math.floor(date.getTime() / 1000) * 1000);

/**
 * RFC 6960 answers for the organization's CA: good, revoked (with time and reason; held
 * certificates as revoked with certificateHold) or unknown, the nonce echoed, signed by the CA key
 * in the HSM. A request that cannot be read is answered `malformedRequest`, as the RFC asks. After
 * a renewal the answer is signed by the key of the generation its CertIDs name as issuer (the first
 * that names one of them); a CertID of another generation is unknown in it.
 */
@Injectable()
export class OcspResponder {
  private readonly issuers = new Map<string, Issuer>();

  /** CA generations by organization: a CA's creation, new certificate or renewal publishes `ca`. */
  private readonly caRows: FeedCache<Responders>;
  /** Statuses by `{org}/{serial}`: each revocation, hold and release publishes `certificate`. */
  private readonly statuses: FeedCache<IssuedStatus>;
  /**
   * Pre-produced answers (RFC 6960 §2.4, RFC 5019 §2.2): the signed answer to a request without a
   * nonce for one issued certificate, by `{org}/{serial}`, served again until its status changes
   * (the same feed) or PRE_PRODUCED_MAX_AGE_MS pass. A request with a nonce is always signed afresh.
   */
  private readonly produced: FeedCache<{ certId: string; response: Buffer }>;
  /** Nonce-less requests by `{org}\n{request bytes}`: the `produced` key and CertID they ask for. */
  private readonly nonceless = new Map<string, { key: string; certId: string }>();

  constructor(
    private readonly cas: CertificateAuthorityRepository,
    private readonly keys: KeyStore,
    private readonly clock: Clock,
    changes: ChangeFeed,
    private readonly metrics: Metrics,
  ) {
    // An organization's deletion removes its CA and certificates: everything goes.
    const organizationGone = (topic: string) => (topic === 'organization' ? 'all' : undefined);
    this.caRows = new FeedCache(changes, {
      evicts: (change) => (change.topic === 'ca' ? { key: change.id } : organizationGone(change.topic)),
      maxEntries: MAX_CACHED_CAS,
    });
    // A CA generation's revocation changes all its certificates at once and says so with one `ca` notice.
    this.statuses = new FeedCache(changes, {
      evicts: (change) => (change.topic === 'certificate' ? { key: change.id } : change.topic === 'ca' ? 'all' : organizationGone(change.topic)),
      maxEntries: MAX_CACHED_STATUSES,
    });
    this.produced = new FeedCache(changes, {
      evicts: (change) => (change.topic === 'certificate' ? { key: change.id } : change.topic === 'ca' ? 'all' : organizationGone(change.topic)),
      maxEntries: MAX_PRE_PRODUCED,
      maxAgeMs: PRE_PRODUCED_MAX_AGE_MS,
    });
  }

  async respond(orgId: string, requestDer: Buffer): Promise<Buffer> {
    // A request seen before without a nonce is the same question (RFC 5019 clients repeat it byte
    // for byte): what it asks is remembered, so its pre-produced answer is found without reading
    // the ASN.1 again (asn1js takes a tenth of a millisecond for a hundred bytes).
    const seenKey = requestDer.length <= MAX_REMEMBERED_REQUEST_BYTES ? `${orgId}\n${requestDer.toString('latin1')}` : undefined;
    const seen = seenKey === undefined ? undefined : this.nonceless.get(seenKey);
    if (seen) {
      const ready = this.produced.get(seen.key);
      if (ready?.certId === seen.certId) return ready.response;
    }
    let request = readOcspRequest(requestDer);
    if (request && request.certificates.length > MAX_CERTIFICATES_PER_REQUEST) request = undefined;
    const serials = request?.certificates.map(serialOf) ?? [];
    const nonce = request?.nonce;
    const reusable =
      request && !nonce && serials.length === 1 && serials[0] !== undefined
        ? { key: `${orgId}/${serials[0]}`, certId: certIdKey(request.certificates[0]) }
        : undefined;
    if (reusable) {
      const ready = this.produced.get(reusable.key);
      if (ready?.certId === reusable.certId) {
        if (seenKey !== undefined) this.remember(seenKey, reusable);
        return ready.response;
      }
    }
    const producedMark = this.produced.mark();
    const found = await this.lookup(
      orgId,
      serials.filter((serial): serial is string => serial !== undefined),
    );
    if (!found || found.ca.status !== 'active') throw notFound(`Organization "${orgId}" has no active CA.`);
    if (!request) return MALFORMED_REQUEST;
    const { issued } = found;
    const asked = request.certificates;
    // A retired generation answers until the last certificate it issued expires (CREDENTIAL-MANAGEMENT.md, "PKI", renewal).
    const answering = found.retired.filter((g) => g.last_certificate_expires > this.clock.now());
    const generations = [found.ca, ...answering].map((generation) => ({ generation, issuer: this.issuerOf(generation) }));
    const { generation: ca, issuer } = (generations.length > 1 && generations.find(({ issuer }) => asked.some((id) => issuedBy(id, issuer)))) || generations[0];
    const now = seconds(this.clock.now());
    const thisUpdate = generalizedTime(now);
    const nextUpdate = tlv(TAG.EXPLICIT_0, generalizedTime(new Date(now.getTime() + CRL_VALIDITY_MS)));
    // ResponseData (RFC 6960 4.2.1), written directly like the envelopes around it: its schema's object
    // graph cost a quarter of an answer signed per request (issue 35). Each SingleResponse repeats the
    // CertID as the request sent it.
    //   ResponseData ::= SEQUENCE { responderID byKey [2] EXPLICIT KeyHash, producedAt, responses, responseExtensions [1] EXPLICIT OPTIONAL }
    //   SingleResponse ::= SEQUENCE { certID, certStatus, thisUpdate, nextUpdate [0] EXPLICIT }
    const responses = asked.map((id, i) => tlv(TAG.SEQUENCE, id.der, this.statusOf(id, serials[i], issued, ca.generation, issuer), thisUpdate, nextUpdate));
    const tbs = tlv(
      TAG.SEQUENCE,
      tlv(TAG.EXPLICIT_2, tlv(TAG.OCTET_STRING, issuer.responderKeyHash)),
      thisUpdate,
      tlv(TAG.SEQUENCE, ...responses),
      ...(nonce ? [tlv(TAG.EXPLICIT_1, tlv(TAG.SEQUENCE, tlv(TAG.SEQUENCE, ID_PKIX_OCSP_NONCE, tlv(TAG.OCTET_STRING, nonce))))] : []),
    );
    const algorithm = SIGNATURE_ALGORITHMS[ca.key_algorithm];
    const signature = await signWithCaKey(this.keys, this.metrics, 'ocsp', ca.key_label, tbs, algorithm.hash);
    const basic = signedEnvelope(tbs, algorithm.der, signature);
    const response = tlv(TAG.SEQUENCE, SUCCESSFUL, tlv(TAG.EXPLICIT_0, tlv(TAG.SEQUENCE, ID_PKIX_OCSP_BASIC, tlv(TAG.OCTET_STRING, basic))));
    if (reusable && issued.has(serials[0]!)) {
      this.produced.set(reusable.key, { certId: reusable.certId, response }, producedMark);
      if (seenKey !== undefined) this.remember(seenKey, reusable);
    }
    return response;
  }

  /** Bounded: the oldest request makes room. What a request's bytes ask never changes, so nothing evicts it otherwise. */
  private remember(seenKey: string, asked: { key: string; certId: string }): void {
    if (this.nonceless.size >= MAX_PRE_PRODUCED && !this.nonceless.has(seenKey)) this.nonceless.delete(this.nonceless.keys().next().value!);
    this.nonceless.set(seenKey, asked);
  }

  /**
   * The CA row and the statuses asked for: from memory when this instance knows them all, else in
   * one round trip, remembered. Serials never issued are not remembered (issuing one publishes
   * nothing), so they are asked each time.
   */
  private async lookup(orgId: string, serials: string[]): Promise<(Responders & { issued: Map<string, IssuedStatus> }) | undefined> {
    const responders = this.caRows.get(orgId);
    const issued = new Map<string, IssuedStatus>();
    for (const serial of serials) {
      const known = this.statuses.get(`${orgId}/${serial}`);
      if (known) issued.set(serial, known);
    }
    if (responders && issued.size === serials.length) return { ...responders, issued };
    const caMark = this.caRows.mark();
    const statusMark = this.statuses.mark();
    const found = await this.cas.ocspLookup(orgId, serials);
    if (!found) return undefined;
    // A CA never renewed has no other generation to read; a retired one that issued nothing never answers.
    const retired =
      found.ca.generation === 1
        ? []
        : (await this.cas.generations(orgId)).filter(
            (g): g is typeof g & { last_certificate_expires: Date } => g.status === 'retired' && g.last_certificate_expires !== null,
          );
    this.caRows.set(orgId, { ca: found.ca, retired }, caMark);
    for (const [serial, status] of found.issued) this.statuses.set(`${orgId}/${serial}`, status, statusMark);
    return { ca: found.ca, retired, issued: found.issued };
  }

  /** A generation's name and key as CertIDs hash them, parsed once per generation row (its key label, creation and version). */
  private issuerOf(ca: SigningGeneration): Issuer {
    const key = `${ca.key_label}|${ca.created_at.getTime()}|${ca.version}`;
    const cached = this.issuers.get(`${ca.org_id}/${ca.generation}`);
    if (cached?.key === key) return cached;
    const tbs = AsnConvert.parse(ca.certificate!, Certificate).tbsCertificate;
    const issuerKey = Buffer.from(tbs.subjectPublicKeyInfo.subjectPublicKey);
    const issuer = {
      key,
      issuerName: Buffer.from(AsnConvert.serialize(tbs.subject)),
      issuerKey,
      responderKeyHash: createHash('sha1').update(issuerKey).digest(),
    };
    this.issuers.set(`${ca.org_id}/${ca.generation}`, issuer);
    return issuer;
  }

  /** CertStatus (RFC 6960 4.2.1): good [0] IMPLICIT NULL, revoked [1] IMPLICIT RevokedInfo, unknown [2] IMPLICIT NULL. */
  private statusOf(id: AskedCertificate, serial: string | undefined, issued: Map<string, IssuedStatus>, generation: number, issuer: Issuer): Buffer {
    // A CertID of another issuer, or hashed with an algorithm this responder does not know: unknown.
    if (!issuedBy(id, issuer)) return UNKNOWN;
    const found = serial === undefined ? undefined : issued.get(serial);
    if (found?.generation !== generation) return UNKNOWN;
    if (found.status === 'good') return GOOD;
    // RevokedInfo ::= SEQUENCE { revocationTime GeneralizedTime, revocationReason [0] EXPLICIT CRLReason OPTIONAL }
    const reason = REASONS[found.status === 'on-hold' ? 'certificateHold' : (found.reason ?? '')] ?? CRLReasons.unspecified;
    return tlv(TAG.IMPLICIT_CONSTRUCTED_1, generalizedTime(seconds(found.revoked_at!)), tlv(TAG.EXPLICIT_0, Buffer.from([TAG.ENUMERATED, 1, reason])));
  }
}
