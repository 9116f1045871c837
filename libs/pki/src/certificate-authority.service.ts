import 'reflect-metadata';
import { KeyObject, X509Certificate as NodeX509Certificate, createHash, verify } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AsnConvert } from '@peculiar/asn1-schema';
import { Certificate } from '@peculiar/asn1-x509';
import * as x509 from '@peculiar/x509';
import { Actor, AuditLog, byActor } from '@app/audit';
import { Clock, DomainError, invalidValue, notFound } from '@app/common';
import { AppConfig } from '@app/config';
import { HsmKeyPair, KeyAlgorithm, KeyStore } from '@app/hsm';
import { Metrics } from '@app/observability';
import { signWithCaKey } from './ca-key-sign';
import { ChangeFeed, FeedCache, Database, Transaction } from '@app/persistence';
import {
  CaGenerationRow,
  CaRow,
  CertificateAuthorityRepository,
  CertificateStatus,
  IssuedRow,
  PublishedCrl,
  SigningGeneration,
} from './certificate-authority.repository';
import { CertificateRevocationListeners } from './certificate-revocation-listeners';
import { CRL_REASON_CODES, CrlEntry, encodeTbsCertList } from './crl';
import { signedEnvelope } from './der';
import { CaLeafProfile, CertificateSubject, SIGNATURE_ALGORITHMS, caLeafProfile, leafTbsCertificate, randomSerial, signingAlgorithmOf } from './profile';
import { readCsr } from './csr';

const DAY_MS = 86_400_000;
/**
 * A CA certificate's key identifier (hex): its SKI, or for a root-signed certificate without one
 * the identifier RFC 5280 §4.2.1.2 method 1 derives, the SHA-1 of the subject public key bits.
 */
function keyIdOf(certificateDer: Buffer | ArrayBuffer): string {
  const der = Buffer.isBuffer(certificateDer) ? certificateDer : Buffer.from(certificateDer);
  const ski = new x509.X509Certificate(der).getExtension(x509.SubjectKeyIdentifierExtension)?.keyId;
  return (
    ski ??
    createHash('sha1')
      .update(Buffer.from(AsnConvert.parse(der, Certificate).tbsCertificate.subjectPublicKeyInfo.subjectPublicKey))
      .digest('hex')
  );
}
const wholeSeconds = (ms: number) => new Date(Math.floor(ms / 1000) * 1000);
/** Leaf lifetime when the caller gives none (a sync session gives CredentialPolicy.certificateLifetimeDays). */
export const DEFAULT_CERTIFICATE_LIFETIME_DAYS = 365;
/** nextUpdate of every CRL: thisUpdate + 7 days (CREDENTIAL-MANAGEMENT.md, "PKI"). */
export const CRL_VALIDITY_MS = 7 * DAY_MS;
/** Bounds the per-instance cache of CA rows. */
const MAX_CACHED_CA_ROWS = 10_000;
/** A CRL is re-signed at least this often, even without a change. */
const CRL_REFRESH_MS = DAY_MS;

/** RFC 5280 reason codes of the revocations the lifecycle makes. */
export type RevocationReason = 'keyCompromise' | 'superseded' | 'cessationOfOperation' | 'unspecified' | 'affiliationChanged';

/** A generation number as the admin API's path and the command line take it: 1, 2, ...; else 400. */
export function generationOf(value: string): number {
  if (!/^[1-9][0-9]{0,8}$/.test(value)) throw invalidValue(`The generation must be a positive whole number such as 1 or 2, got "${value.slice(0, 20)}".`);
  return Number(value);
}

/** What a CA generation's revocation did (`POST .../ca/generations/{n}/revocation`). */
export interface GenerationRevocation {
  generation: number;
  reason: 'cACompromise';
  compromisedAt: Date;
  /** How many of its certificates it revoked (those not revoked before). */
  revokedCertificates: number;
  /** The generations whose CRL was re-signed in the revocation's transaction. */
  crlsPublished: number[];
}

export interface CreateCaInput {
  subject?: string;
  keyAlgorithm?: KeyAlgorithm;
  validityDays?: number;
  mode?: 'self-signed' | 'subordinate';
}

/** A renewal keeps the CA's mode; subject and key algorithm default to the current generation's. */
export type RenewCaInput = Omit<CreateCaInput, 'mode'>;

interface SigningState {
  key: string;
  certificate: x509.X509Certificate;
  issuerName: Buffer;
  keyId: Buffer;
  verifyKey: KeyObject;
  leafProfile: CaLeafProfile;
}

export interface IssueOptions {
  /** Issue in the caller's transaction (a sync session's), which then commits or rolls back the certificate with the rest. */
  tx?: Transaction;
  /** CredentialPolicy.certificateLifetimeDays; never past the CA's own notAfter. */
  lifetimeDays?: number;
  /** CredentialPolicy.keyAlgorithms: a CSR key outside them is CSR_KEY_POLICY. */
  keyAlgorithms?: readonly string[];
}

export interface IssuedCertificate {
  serialNumber: string;
  subject: string;
  issuer: string;
  notBefore: Date;
  notAfter: Date;
  der: Buffer;
}

/**
 * The organization's issuing CA (CREDENTIAL-MANAGEMENT.md, "PKI"), the port the issuance
 * lifecycle calls: its key pair is generated and used in the HSM (label `CA_KEY/{org}`), the
 * database keeps certificates, serials and revocations. Every certificate and CRL is verified with
 * the CA public key before it is stored or served.
 */
@Injectable()
export class CertificateAuthority {
  private readonly loaded = new Map<string, SigningState>();

  constructor(
    private readonly db: Database,
    private readonly cas: CertificateAuthorityRepository,
    private readonly keys: KeyStore,
    private readonly clock: Clock,
    private readonly audit: AuditLog,
    private readonly config: AppConfig,
    private readonly changes: ChangeFeed,
    private readonly metrics: Metrics,
    private readonly revocationListeners: CertificateRevocationListeners,
  ) {
    // Every issuance asks for the CA twice: kept per instance, as the OCSP responder keeps it; a CA's
    // creation and certificate installation publish 'ca', an organization's deletion 'organization'.
    this.rows = new FeedCache(changes, {
      evicts: (change) => (change.topic === 'ca' ? { key: change.id } : change.topic === 'organization' ? 'all' : undefined),
      maxEntries: MAX_CACHED_CA_ROWS,
    });
  }

  private readonly rows: FeedCache<CaRow | null>;

  /** The organization's CA row as the cache has it (null: none). */
  private async cached(orgId: string, tx?: Transaction): Promise<CaRow | undefined> {
    return (await this.rows.read(orgId, async () => (await this.cas.find(orgId, tx)) ?? null)) ?? undefined;
  }

  /** Creates the organization's CA: self-signed (active at once) or subordinate (a CSR for the enterprise root). 409 if it has one. */
  async create(orgId: string, input: CreateCaInput, actor: Actor): Promise<CaRow> {
    const algorithm = input.keyAlgorithm ?? 'EC-P256';
    const mode = input.mode ?? 'self-signed';
    const subject = input.subject ?? `CN=${orgId} Issuing CA`;
    const label = `CA_KEY/${orgId}`;
    const created = await this.db.transaction(async (tx) => {
      const now = this.clock.now();
      if (!(await this.cas.insert({ org_id: orgId, key_label: label, key_algorithm: algorithm, mode, subject, created_at: now, updated_at: now }, tx))) {
        throw new DomainError('CONFLICT', `Organization "${orgId}" already has a CA; GET /admin/v1/organizations/${orgId}/ca shows it.`);
      }
      const pair = await this.freshKeyPair(label, algorithm);
      let row: CaRow;
      if (mode === 'self-signed') {
        const certificate = await this.selfSigned(pair, subject, input.validityDays, now);
        row = await this.cas.activate(orgId, Buffer.from(certificate.rawData), certificate.notAfter, now, tx);
      } else {
        row = await this.cas.setCsr(orgId, await this.csr(pair, subject), tx);
      }
      await this.audit.record(
        {
          org: orgId,
          ...byActor(actor),
          action: 'ca.create',
          target: orgId,
          outcome: 'success',
          details: { mode, keyAlgorithm: algorithm, subject },
        },
        tx,
      );
      this.changes.publishOnCommit(tx, 'ca', [orgId]);
      return row;
    });
    return created;
  }

  /**
   * Renews the CA (CREDENTIAL-MANAGEMENT.md, "PKI", renewal): a new key `CA_KEY/{org}/{n}` in the
   * HSM and, for a self-signed CA, its certificate, which takes over issuance at once; for a
   * subordinate CA a CSR for the enterprise root, and the current generation issues until
   * `installCertificate` takes the root's certificate. 409 while the CA or a renewal awaits a certificate.
   */
  async renew(orgId: string, input: RenewCaInput, actor: Actor): Promise<CaRow> {
    return this.db.transaction(async (tx) => {
      const ca = await this.cas.lock(orgId, tx);
      if (!ca) throw this.noCa(orgId);
      this.requireActive(ca);
      const awaiting = await this.awaitingRenewal(orgId, tx);
      if (awaiting) {
        throw new DomainError(
          'CONFLICT',
          `The renewal of the CA of "${orgId}" (generation ${awaiting.generation}) awaits its certificate: have the CSR from GET /admin/v1/organizations/${orgId}/ca signed by the enterprise root and PUT it to .../ca/certificate.`,
        );
      }
      const now = this.clock.now();
      const generation = ca.generation + 1;
      const label = `CA_KEY/${orgId}/${generation}`;
      const algorithm = input.keyAlgorithm ?? ca.key_algorithm;
      const subject = input.subject ?? ca.subject;
      const pair = await this.freshKeyPair(label, algorithm);
      await this.audit.record(
        {
          org: orgId,
          ...byActor(actor),
          action: 'ca.renew',
          target: orgId,
          outcome: 'success',
          details: { generation, keyLabel: label, keyAlgorithm: algorithm, subject, mode: ca.mode },
        },
        tx,
      );
      let row = ca;
      if (ca.mode === 'self-signed') {
        const certificate = await this.selfSigned(pair, subject, input.validityDays, now);
        const next = {
          generation,
          key_label: label,
          key_algorithm: algorithm,
          subject,
          certificate: Buffer.from(certificate.rawData),
          not_after: certificate.notAfter,
        };
        row = await this.rollOver(ca, next, actor, tx);
      } else {
        const csr = await this.csr(pair, subject);
        await this.cas.insertRenewal(
          { org_id: orgId, generation, key_label: label, key_algorithm: algorithm, mode: ca.mode, subject, csr, created_at: now },
          tx,
        );
      }
      this.changes.publishOnCommit(tx, 'ca', [orgId]);
      return row;
    });
  }

  /**
   * Installs the enterprise root's certificate of a subordinate CA, or of its renewal when one
   * awaits it (the new generation then takes over issuance): it must hold the HSM key's public
   * key, basicConstraints cA=true and keyUsage keyCertSign and cRLSign, else 400.
   */
  async installCertificate(orgId: string, pem: string, actor: Actor): Promise<CaRow> {
    const ca = await this.require(orgId, false);
    if (ca.mode !== 'subordinate') throw new DomainError('CONFLICT', `The CA of "${orgId}" is self-signed; only a subordinate CA takes a certificate.`);
    let certificate: x509.X509Certificate;
    try {
      certificate = new x509.X509Certificate(x509.PemConverter.decodeFirst(pem));
    } catch {
      throw new DomainError('INVALID_VALUE', 'The body is not a PEM certificate (-----BEGIN CERTIFICATE-----).');
    }
    const awaiting = ca.status === 'active' ? await this.awaitingRenewal(orgId) : undefined;
    const certified = awaiting ?? ca;
    const pair = await this.keyPair(certified);
    if (!Buffer.from(certificate.publicKey.rawData).equals(pair.publicKeySpki)) {
      throw new DomainError(
        'INVALID_VALUE',
        `The certificate does not hold the public key of the CA key in the HSM (${certified.key_label}); have the CSR from GET .../ca${awaiting ? ' (renewal)' : ''} signed.`,
      );
    }
    const constraints = certificate.getExtension(x509.BasicConstraintsExtension);
    const usages = certificate.getExtension(x509.KeyUsagesExtension);
    const needed = x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign;
    if (!constraints?.ca || !usages || (usages.usages & needed) !== needed) {
      throw new DomainError(
        'INVALID_VALUE',
        'The certificate is not a CA certificate: it needs basicConstraints cA=true and keyUsage keyCertSign and cRLSign.',
      );
    }
    if (awaiting) return this.installRenewal(orgId, awaiting.generation, certificate, actor);
    const installed = await this.db.transaction(async (tx) => {
      const row = await this.cas.activate(orgId, Buffer.from(certificate.rawData), certificate.notAfter, this.clock.now(), tx);
      await this.audit.record(
        {
          org: orgId,
          ...byActor(actor),
          action: 'ca.create',
          target: orgId,
          outcome: 'success',
          details: { mode: 'subordinate', installed: certificate.subject, issuer: certificate.issuer },
        },
        tx,
      );
      this.changes.publishOnCommit(tx, 'ca', [orgId]);
      return row;
    });
    return installed;
  }

  /** The renewal's certificate installed: the awaiting generation takes over issuance, the current one retires. */
  private installRenewal(orgId: string, generation: number, certificate: x509.X509Certificate, actor: Actor): Promise<CaRow> {
    return this.db.transaction(async (tx) => {
      const ca = await this.cas.lock(orgId, tx);
      // Another request installed it (or renewed) while this one checked the certificate.
      const awaiting = ca && (await this.awaitingRenewal(orgId, tx));
      if (!ca || awaiting?.generation !== generation) {
        throw new DomainError('CONFLICT', `The renewal of the CA of "${orgId}" changed meanwhile; GET /admin/v1/organizations/${orgId}/ca shows it.`);
      }
      const next = {
        generation,
        key_label: awaiting.key_label,
        key_algorithm: awaiting.key_algorithm,
        subject: awaiting.subject,
        certificate: Buffer.from(certificate.rawData),
        not_after: certificate.notAfter,
      };
      const row = await this.rollOver(ca, next, actor, tx);
      this.changes.publishOnCommit(tx, 'ca', [orgId]);
      return row;
    });
  }

  /**
   * The rollover (RFC 4210 §4.4): the two cross-certificates, old-with-new (the current key
   * certified by the next) and new-with-old (the next key certified by the current), each verified
   * with its issuer's key; then the next generation becomes the CA row and the current one retires.
   */
  private async rollOver(
    ca: CaRow,
    next: Pick<CaRow, 'generation' | 'key_label' | 'key_algorithm' | 'subject'> & { certificate: Buffer; not_after: Date },
    actor: Actor,
    tx: Transaction,
  ): Promise<CaRow> {
    const now = this.clock.now();
    // A generation revoked as compromised is linked to no other: the next key must not vouch for its
    // key (old-with-new would let a relying party that trusts the new CA accept what the compromised key signs).
    const crosses = ca.compromised_at ? null : await this.crossCertificates(ca, next, now);
    const row = await this.cas.rollOver(ca, next, crosses, now, tx);
    await this.audit.record(
      {
        org: ca.org_id,
        ...byActor(actor),
        action: 'ca.rollover',
        target: ca.org_id,
        outcome: 'success',
        details: {
          from: ca.generation,
          to: next.generation,
          keyLabel: next.key_label,
          retiredKeyLabel: ca.key_label,
          notAfter: next.not_after.toISOString(),
          ...(ca.compromised_at ? { crossCertificates: false } : {}),
        },
      },
      tx,
    );
    return row;
  }

  /** old-with-new (the current key certified by the next) and new-with-old (the next key certified by the current). */
  private async crossCertificates(
    ca: CaRow,
    next: Pick<CaRow, 'key_label' | 'key_algorithm'> & { certificate: Buffer; not_after: Date },
    now: Date,
  ): Promise<{ oldWithNew: Buffer; newWithOld: Buffer }> {
    const current = { certificate: new x509.X509Certificate(ca.certificate!), pair: await this.keyPair(ca), algorithm: ca.key_algorithm };
    const nextPair = await this.keys.findKeyPair(next.key_label);
    if (!nextPair) throw new Error(`The HSM holds no key labelled ${next.key_label} for the renewal of the CA of ${ca.org_id}`);
    const following = { certificate: new x509.X509Certificate(next.certificate), pair: nextPair, algorithm: next.key_algorithm };
    const oldNotAfter = current.certificate.notAfter;
    const oldWithNew = await this.crossCertificate(current.certificate, following, oldNotAfter, now);
    const newWithOld = await this.crossCertificate(following.certificate, current, new Date(Math.min(oldNotAfter.getTime(), next.not_after.getTime())), now);
    return { oldWithNew, newWithOld };
  }

  /** `subject`'s name and key certified by `issuer`'s key: a CA certificate (pathLen 0, as the CA's own), verified before use. */
  private async crossCertificate(
    subject: x509.X509Certificate,
    issuer: { certificate: x509.X509Certificate; pair: HsmKeyPair; algorithm: KeyAlgorithm },
    notAfter: Date,
    now: Date,
  ): Promise<Buffer> {
    const certificate = await x509.X509CertificateGenerator.create(
      {
        serialNumber: randomSerial(),
        subject: subject.subjectName,
        issuer: issuer.certificate.subjectName,
        notBefore: new Date(now.getTime() - 60_000),
        notAfter,
        publicKey: subject.publicKey,
        signingKey: issuer.pair.privateKey,
        signingAlgorithm: signingAlgorithmOf(issuer.algorithm),
        extensions: [
          new x509.BasicConstraintsExtension(true, 0, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
          new x509.SubjectKeyIdentifierExtension(keyIdOf(subject.rawData)),
          new x509.AuthorityKeyIdentifierExtension(keyIdOf(issuer.certificate.rawData), false),
        ],
      },
      this.keys.crypto,
    );
    if (!(await certificate.verify({ publicKey: issuer.certificate.publicKey, signatureOnly: true }, this.keys.crypto))) {
      throw new Error('A cross-certificate does not verify with its issuer key');
    }
    return Buffer.from(certificate.rawData);
  }

  async get(orgId: string): Promise<CaRow> {
    return this.require(orgId, false);
  }

  /** Every generation, the current one first and the older after it; none when the organization has no CA (no error: a portal asks before it knows). */
  async allGenerations(orgId: string): Promise<{ current?: CaRow; others: CaGenerationRow[] }> {
    const current = await this.cached(orgId);
    return { current, others: current ? await this.cas.generations(orgId) : [] };
  }

  /** The last CRL each generation's key signed (number, thisUpdate, nextUpdate), by generation; none before the first fetch of a CRL. */
  async lastCrls(orgId: string): Promise<Map<number, { crl_number: string; this_update: Date; next_update: Date }>> {
    return new Map((await this.cas.publishedCrlTimes(orgId)).map((row) => [row.generation, row]));
  }

  /** The generations besides the current one: a renewal awaiting its certificate, the retired ones. */
  async generations(orgId: string): Promise<CaGenerationRow[]> {
    return this.cas.generations(orgId);
  }

  /** The CA certificate (DER) of the current generation, or of `generation` (current or retired); 404 otherwise. */
  async caCertificate(orgId: string, generation?: number): Promise<Buffer> {
    const ca = await this.require(orgId, true);
    if (generation === undefined || generation === ca.generation) return ca.certificate!;
    return (await this.retired(ca, generation)).certificate!;
  }

  /**
   * Every certificate a relying party needs to link the generations (DER): first the
   * cross-certificates of each retired generation, newest first (new-with-old, old-with-new), then
   * the CA certificates, current first. Cross-certificates come first because a verifier that
   * trusts one generation takes the first issuer it finds among untrusted certificates (openssl
   * does): a self-signed certificate of the other generation found first ends its chain untrusted.
   */
  async chain(orgId: string): Promise<Buffer[]> {
    const ca = await this.require(orgId, true);
    const retired = (await this.cas.generations(orgId)).filter((g) => g.status === 'retired').reverse();
    // No cross-certificate links a generation revoked as compromised (they are on the CRL of the key that signed them).
    const compromised = new Set([ca, ...retired].filter((g) => g.compromised_at).map((g) => g.generation));
    const crosses = retired
      .filter((g) => g.old_with_new && g.new_with_old && !compromised.has(g.generation) && !compromised.has(g.generation + 1))
      .flatMap((g) => [g.new_with_old!, g.old_with_new!]);
    return [...crosses, ca.certificate!, ...retired.map((g) => g.certificate!)];
  }

  /**
   * The organization's CA, when it can issue (active); otherwise the 409 that says how to make it so.
   * A content request that will need a certificate asks this at its creation. The row comes from
   * the per-instance cache; a miss inside a transaction is read on its connection (another from the
   * pool could wait on ones like it).
   */
  async assertCanIssue(orgId: string, tx?: Transaction): Promise<CaRow> {
    const found = await this.cached(orgId, tx);
    if (!found) {
      throw new DomainError('CONFLICT', `Organization "${orgId}" has no CA to issue from; create one with POST /admin/v1/organizations/${orgId}/ca.`);
    }
    if (found.compromised_at) throw this.compromised(found);
    return this.requireActive(found);
  }

  private compromised(ca: Pick<CaRow, 'org_id' | 'generation' | 'compromised_at'>): DomainError {
    return new DomainError(
      'CONFLICT',
      `Generation ${ca.generation} of the CA of "${ca.org_id}" was revoked as compromised at ${ca.compromised_at!.toISOString()}; it issues nothing: ` +
        `a renewal is needed first (POST /admin/v1/organizations/${ca.org_id}/ca/renewal).`,
    );
  }

  /**
   * Issues a certificate for `subject` from a PKCS#10 CSR (PEM, base64 DER or DER), with every check
   * of the contract (CSR_INVALID, CSR_POP_INVALID, CSR_KEY_POLICY, CSR_KEY_REUSED) and the smart-card
   * logon profile; signed in the HSM and verified with the CA public key before it is stored.
   */
  async issue(
    orgId: string,
    subject: CertificateSubject,
    csrInput: string | Buffer,
    organizationName: string,
    actor: Actor,
    options: IssueOptions = {},
  ): Promise<IssuedCertificate> {
    const ca = await this.assertCanIssue(orgId, options.tx);
    const csr = readCsr(csrInput);
    if (options.keyAlgorithms && !options.keyAlgorithms.includes(csr.keyAlgorithm)) {
      throw new DomainError(
        'INVALID_VALUE',
        `CSR_KEY_POLICY: the CSR's key is ${csr.keyAlgorithm}, which CredentialPolicy keyAlgorithms (${options.keyAlgorithms.join(', ')}) does not allow.`,
      );
    }
    const state = this.signingState(ca);
    const now = this.clock.now();
    const lifetimeDays = options.lifetimeDays ?? DEFAULT_CERTIFICATE_LIFETIME_DAYS;
    // Whole seconds: what the certificate can say is what the database keeps.
    const notBefore = wholeSeconds(now.getTime() - 60_000);
    const notAfter = wholeSeconds(Math.min(now.getTime() + lifetimeDays * DAY_MS, state.certificate.notAfter.getTime()));
    const serial = randomSerial();
    const algorithm = SIGNATURE_ALGORITHMS[ca.key_algorithm];
    const leaf = leafTbsCertificate({
      profile: state.leafProfile,
      serial,
      signatureAlgorithm: algorithm.der,
      issuer: state.issuerName,
      notBefore,
      notAfter,
      subject,
      organizationName,
      csr,
    });
    const signature = await signWithCaKey(this.keys, this.metrics, 'certificate', ca.key_label, leaf.tbs, algorithm.hash);
    if (!verify(algorithm.hash, leaf.tbs, state.verifyKey, signature)) {
      throw new Error(`A certificate signed with ${ca.key_label} does not verify with the CA certificate`);
    }
    const der = signedEnvelope(leaf.tbs, algorithm.der, signature);
    const stored = await this.within(options.tx, async (tx) => {
      const outcome = await this.cas.insertIssued(
        {
          org_id: orgId,
          serial,
          user_id: subject.userId,
          subject: leaf.subject,
          public_key_sha256: csr.spkiSha256,
          der,
          not_before: notBefore,
          not_after: notAfter,
          issued_at: now,
          generation: ca.generation,
        },
        tx,
      );
      if (outcome !== 'ok') return outcome;
      await this.audit.record(
        {
          org: orgId,
          ...byActor(actor),
          action: 'certificate.issue',
          target: serial,
          outcome: 'success',
          details: { userId: subject.userId, subject: leaf.subject, notAfter: notAfter.toISOString() },
        },
        tx,
      );
      return outcome;
    });
    if (stored === 'KEY_REUSED') {
      throw new DomainError('INVALID_VALUE', 'CSR_KEY_REUSED: this CA has already certified the public key of the CSR; generate a new key pair on the card.');
    }
    if (stored === 'CA_CHANGED') {
      // The generation was revoked or rolled over while the certificate was signed: what the database says now decides.
      const now = await this.cas.find(orgId, options.tx);
      if (now?.compromised_at) throw this.compromised(now);
      throw new DomainError(
        'CONFLICT',
        `The CA of "${orgId}" changed to generation ${now?.generation} while the certificate was signed; send the request again.`,
      );
    }
    return { serialNumber: serial, subject: leaf.subject, issuer: state.certificate.subject, notBefore, notAfter, der };
  }

  /**
   * Revokes (RFC 5280 reason), puts on hold or releases `serials` in the caller's transaction, with
   * one CRL re-signed for all of them (a device's credentials follow it together). Certificates
   * already in the target status are left as they are.
   */
  async changeWithin(
    orgId: string,
    serials: readonly string[],
    to: 'revoked' | 'on-hold' | 'good',
    reason: RevocationReason | null,
    actor: Actor,
    tx: Transaction,
  ): Promise<string[]> {
    if (serials.length === 0) return [];
    const ca = await this.cas.lock(orgId, tx);
    if (!ca || ca.status !== 'active') throw this.noCa(orgId);
    const action = to === 'revoked' ? 'certificate.revoke' : to === 'on-hold' ? 'certificate.hold' : 'certificate.release';
    const changed: string[] = [];
    const generations = new Set<number>();
    for (const serial of serials) {
      const current = await this.cas.findIssued(orgId, serial, tx);
      if (!current || current.status === to || current.status === 'revoked' || (to === 'good' && current.status !== 'on-hold')) continue;
      await this.cas.setStatus(orgId, serial, to, to === 'on-hold' ? 'certificateHold' : reason, this.clock.now(), tx);
      await this.audit.record({ org: orgId, ...byActor(actor), action, target: serial, outcome: 'success', details: { from: current.status, to, reason } }, tx);
      changed.push(serial);
      generations.add(current.generation);
    }
    if (changed.length === 0) return changed;
    // Each certificate is listed on the CRL of the generation whose key signed it.
    for (const generation of generations) await this.publishCrl(await this.signer(ca, generation, tx), actor, tx);
    // With the commit: every instance's OCSP answers drop what they knew of these certificates.
    this.changes.publishOnCommit(
      tx,
      'certificate',
      changed.map((serial) => `${orgId}/${serial}`),
    );
    return changed;
  }

  /**
   * Revokes a CA generation believed compromised (issue 32 item 4; libs/pki README, "Revoking a
   * compromised CA generation"), in one transaction: the generation is marked compromised (the
   * current one then issues nothing until a renewal: 409), every certificate it issued and not yet
   * revoked is revoked with cACompromise in one statement, what follows them in other libraries
   * follows (CertificateRevocationListeners: credentials, smart-card sessions), and the CRLs are
   * re-signed at once: the generation's own, and those of the generations next to it, which list
   * the cross-certificate their key signed for it. 404 for a generation the CA never had, 409 for
   * one already revoked or awaiting its certificate.
   */
  async revokeGeneration(orgId: string, generation: number, reason: 'cACompromise', actor: Actor): Promise<GenerationRevocation> {
    // Checked before anything is locked, and again under the lock.
    await this.revocable(orgId, generation);
    return this.db.transaction(async (tx) => {
      await this.revocationListeners.lock(orgId, await this.cas.unrevokedSerials(orgId, generation, tx), tx);
      const ca = await this.cas.lock(orgId, tx);
      if (!ca) throw this.noCa(orgId);
      const target = await this.revocable(orgId, generation, ca, tx);
      const now = this.clock.now();
      await this.cas.markCompromised(orgId, generation, target === 'current', now, tx);
      const serials = await this.cas.revokeGeneration(orgId, generation, reason, now, tx);
      await this.audit.record(
        {
          org: orgId,
          ...byActor(actor),
          action: 'ca.revoke',
          target: orgId,
          outcome: 'success',
          details: { generation, reason, current: target === 'current', revokedCertificates: serials.length },
        },
        tx,
      );
      await this.revocationListeners.revoked({ orgId, serials, reason, via: 'ca.revoke', actor }, tx);
      // Read again: the row's version moved, and with it what signs.
      const locked = (await this.cas.find(orgId, tx))!;
      const crlsPublished: number[] = [];
      for (const g of [generation - 1, generation, generation + 1]) {
        const signer = await this.signer(locked, g, tx).catch(() => undefined);
        if (!signer?.certificate) continue;
        await this.publishCrl(signer, actor, tx);
        crlsPublished.push(g);
      }
      // With the commit: every instance forgets the CA row, its OCSP statuses and pre-produced answers (one notice, not one per certificate).
      this.changes.publishOnCommit(tx, 'ca', [orgId]);
      return { generation, reason, compromisedAt: now, revokedCertificates: serials.length, crlsPublished };
    });
  }

  /** Whether `generation` may be revoked: 'current' or 'retired'; else the 404 or 409 that says why not. */
  private async revocable(orgId: string, generation: number, ca?: CaRow, tx?: Transaction): Promise<'current' | 'retired'> {
    const row = ca ?? (await this.cas.find(orgId));
    if (!row) throw this.noCa(orgId);
    const other = generation === row.generation ? undefined : (await this.cas.generations(orgId, tx)).find((g) => g.generation === generation);
    const found = generation === row.generation ? row : other;
    if (!found) throw notFound(`The CA of "${orgId}" has no generation ${generation}; GET /admin/v1/organizations/${orgId}/ca lists them.`);
    if (found.compromised_at) {
      throw new DomainError('CONFLICT', `Generation ${generation} of the CA of "${orgId}" was revoked already, at ${found.compromised_at.toISOString()}.`);
    }
    if (found.status === 'awaiting-certificate') {
      throw new DomainError(
        'CONFLICT',
        `Generation ${generation} of the CA of "${orgId}" awaits its certificate and has issued nothing; there is nothing to revoke (its key may be destroyed in the HSM).`,
      );
    }
    return found === row ? 'current' : 'retired';
  }

  private within<T>(tx: Transaction | undefined, work: (tx: Transaction) => Promise<T>): Promise<T> {
    return tx ? work(tx) : this.db.transaction(work);
  }

  /** Revokes for good (RFC 5280 reason); the CRL is re-signed in the same transaction. */
  revoke(orgId: string, serial: string, reason: RevocationReason, actor: Actor): Promise<IssuedRow> {
    return this.changeStatus(orgId, serial, 'revoked', reason, actor, 'certificate.revoke');
  }

  /** Puts on hold (certificateHold) until released. */
  hold(orgId: string, serial: string, actor: Actor): Promise<IssuedRow> {
    return this.changeStatus(orgId, serial, 'on-hold', 'certificateHold', actor, 'certificate.hold');
  }

  /** Takes a held certificate off the CRL. */
  release(orgId: string, serial: string, actor: Actor): Promise<IssuedRow> {
    return this.changeStatus(orgId, serial, 'good', null, actor, 'certificate.release');
  }

  async status(orgId: string, serial: string): Promise<IssuedRow | undefined> {
    return this.cas.findIssued(orgId, serial);
  }

  /**
   * The CRL (DER) of `generation` (1, the CA's first key, by default: the one `/pki/{org}/crl`
   * serves): re-signed when a revocation changed it (at the change, within its transaction) and
   * at least daily; expired entries are dropped. A retired generation's key signs it until the
   * last certificate that generation issued expires; then 404.
   */
  async crl(orgId: string, generation = 1): Promise<PublishedCrl> {
    const published = await this.cas.publishedCrl(orgId, generation);
    const now = this.clock.now();
    if (published && now.getTime() - published.this_update.getTime() < CRL_REFRESH_MS) return published;
    return this.db.transaction(async (tx) => {
      const ca = await this.cas.lock(orgId, tx);
      if (!ca || ca.status !== 'active') throw this.noCa(orgId);
      const signer = await this.signer(ca, generation, tx);
      if ('last_certificate_expires' in signer && !(signer.last_certificate_expires && signer.last_certificate_expires > now)) {
        throw notFound(
          `Generation ${generation} of the CA of "${orgId}" has retired and every certificate it issued has expired: it signs no more CRLs; /pki/${orgId}/crl/${ca.generation} is the current one.`,
        );
      }
      // Another instance may have re-signed it while this one waited for the lock.
      const current = await this.cas.publishedCrl(orgId, generation, tx);
      if (current && now.getTime() - current.this_update.getTime() < CRL_REFRESH_MS) return current;
      return this.publishCrl(signer, { name: 'system' }, tx);
    });
  }

  private async changeStatus(
    orgId: string,
    serial: string,
    to: CertificateStatus,
    reason: string | null,
    actor: Actor,
    action: 'certificate.revoke' | 'certificate.hold' | 'certificate.release',
  ): Promise<IssuedRow> {
    const changed = await this.db.transaction(async (tx) => {
      const ca = await this.cas.lock(orgId, tx);
      if (!ca || ca.status !== 'active') throw this.noCa(orgId);
      const current = await this.cas.findIssued(orgId, serial, tx);
      if (!current) throw notFound(`The CA of "${orgId}" issued no certificate with serial ${serial.slice(0, 64)}.`);
      if (to === 'good' && current.status !== 'on-hold') {
        throw new DomainError('CONFLICT', `Certificate ${serial} is ${current.status}; only a certificate on hold can be released.`);
      }
      const moved = await this.cas.setStatus(orgId, serial, to, reason, this.clock.now(), tx);
      if (!moved) throw new DomainError('CONFLICT', `Certificate ${serial} is revoked; a revocation is final.`);
      await this.audit.record(
        {
          org: orgId,
          ...byActor(actor),
          action,
          target: serial,
          outcome: 'success',
          details: { from: current.status, to, reason },
        },
        tx,
      );
      await this.publishCrl(await this.signer(ca, current.generation, tx), actor, tx);
      // With the commit: every instance's OCSP answers drop what they knew of this certificate.
      this.changes.publishOnCommit(tx, 'certificate', [`${orgId}/${serial}`]);
      return moved;
    });
    return changed;
  }

  /**
   * Builds (crl.ts writes the DER directly: 100,000 entries in milliseconds), signs in the HSM,
   * verifies with the generation's CA certificate public key and stores the CRL; the caller holds the CA row lock.
   */
  private async publishCrl(ca: SigningGeneration, actor: Actor, tx: Transaction): Promise<PublishedCrl> {
    const now = this.clock.now();
    const state = this.signingState(ca);
    const listed = await this.cas.listed(ca.org_id, ca.generation, now, tx);
    const entries: CrlEntry[] = listed.map((entry) => ({
      serial: entry.serial,
      revokedAt: entry.revoked_at,
      reason: CRL_REASON_CODES[(entry.status === 'on-hold' ? 'certificateHold' : entry.reason) as keyof typeof CRL_REASON_CODES],
    }));
    // The cross-certificates this key signed for a generation revoked as compromised (RFC 5280 5.3.1 cACompromise), while they are valid.
    for (const cross of await this.cas.compromisedCrossCertificates(ca.org_id, ca.generation, tx)) {
      const certificate = new NodeX509Certificate(cross.der);
      if (new Date(certificate.validTo) <= now) continue;
      const serial = certificate.serialNumber.toLowerCase();
      entries.push({ serial: serial.length % 2 ? `0${serial}` : serial, revokedAt: cross.compromised_at, reason: CRL_REASON_CODES.cACompromise });
    }
    const crlNumber = await this.cas.nextCrlNumber(tx);
    const algorithm = SIGNATURE_ALGORITHMS[ca.key_algorithm];
    const tbs = encodeTbsCertList({
      signatureAlgorithm: algorithm.der,
      issuer: state.issuerName,
      thisUpdate: now,
      nextUpdate: new Date(now.getTime() + CRL_VALIDITY_MS),
      entries,
      authorityKeyId: state.keyId,
      crlNumber: BigInt(crlNumber),
    });
    const signature = await signWithCaKey(this.keys, this.metrics, 'crl', ca.key_label, tbs, algorithm.hash);
    if (!verify(algorithm.hash, tbs, state.verifyKey, signature)) {
      throw new Error(`A CRL signed with ${ca.key_label} does not verify with the CA certificate`);
    }
    const published: PublishedCrl = {
      crl_number: crlNumber,
      der: signedEnvelope(tbs, algorithm.der, signature),
      this_update: now,
      next_update: new Date(now.getTime() + CRL_VALIDITY_MS),
    };
    await this.cas.publishCrl(ca.org_id, ca.generation, published, tx);
    await this.audit.record(
      {
        org: ca.org_id,
        ...byActor(actor),
        action: 'crl.publish',
        target: ca.org_id,
        outcome: 'success',
        details: { crlNumber, entries: entries.length, generation: ca.generation },
      },
      tx,
    );
    return published;
  }

  /**
   * What signing needs of a CA generation, kept per generation (its key label, creation and version), so that
   * issuance and CRLs do not parse the certificate each time: the parsed certificate, its subject
   * Name as DER, its key identifier, its public key for Node's verify and the encoded extensions
   * every leaf carries. The HSM key itself is named by label at each signature.
   */
  private signingState(ca: SigningGeneration): SigningState {
    const key = `${ca.key_label}|${ca.created_at.getTime()}|${ca.version}`;
    const cached = this.loaded.get(`${ca.org_id}/${ca.generation}`);
    if (cached?.key === key) return cached;
    const certificate = new x509.X509Certificate(ca.certificate!);
    const tbs = AsnConvert.parse(ca.certificate!, Certificate).tbsCertificate;
    const keyId = keyIdOf(ca.certificate!);
    const state: SigningState = {
      key,
      certificate,
      issuerName: Buffer.from(AsnConvert.serialize(tbs.subject)),
      keyId: Buffer.from(keyId, 'hex'),
      verifyKey: new NodeX509Certificate(ca.certificate!).publicKey,
      leafProfile: caLeafProfile(keyId, this.publicUrls(ca.org_id, ca.generation)),
    };
    this.loaded.set(`${ca.org_id}/${ca.generation}`, state);
    return state;
  }

  /**
   * Where a generation's certificates point relying parties: the first generation's keep the
   * paths every certificate had before renewals (`/crl`, `/ca.crt`), later ones their own, so a
   * certificate's CRL distribution point never changes meaning (CREDENTIAL-MANAGEMENT.md, "PKI").
   */
  private publicUrls(orgId: string, generation: number) {
    const base = this.pkiBaseUrl(orgId);
    return generation === 1
      ? { crl: `${base}/crl`, caIssuers: `${base}/ca.crt`, ocsp: `${base}/ocsp` }
      : { crl: `${base}/crl/${generation}`, caIssuers: `${base}/ca/${generation}.crt`, ocsp: `${base}/ocsp` };
  }

  /** The generation whose key signs for `generation`: the current CA row or a retired generation; 404 otherwise. */
  private async signer(ca: CaRow, generation: number, tx?: Transaction): Promise<SigningGeneration | CaGenerationRow> {
    return generation === ca.generation ? ca : this.retired(ca, generation, tx);
  }

  private async retired(ca: CaRow, generation: number, tx?: Transaction): Promise<CaGenerationRow> {
    const found = (await this.cas.generations(ca.org_id, tx)).find((g) => g.generation === generation && g.status === 'retired');
    if (!found) throw notFound(`The CA of "${ca.org_id}" has no generation ${generation}; the current one is ${ca.generation}.`);
    return found;
  }

  private async awaitingRenewal(orgId: string, tx?: Transaction): Promise<CaGenerationRow | undefined> {
    return (await this.cas.generations(orgId, tx)).find((g) => g.status === 'awaiting-certificate');
  }

  /**
   * A new key pair under `label`. A key under it without a row is what an interrupted creation or
   * renewal left (it certified nothing): it is used if it has the algorithm asked for, else replaced.
   */
  private async freshKeyPair(label: string, algorithm: KeyAlgorithm) {
    const pair = await this.keys.findKeyPair(label);
    if (pair?.algorithm === algorithm) return pair;
    if (pair) await this.keys.destroyKeyPair(label);
    return this.keys.generateKeyPair(label, algorithm);
  }

  /** A self-signed CA certificate (pathLen 0, keyCertSign and cRLSign) for the HSM key pair, verified before use. */
  private async selfSigned(pair: HsmKeyPair, subject: string, validityDays = 3650, now = this.clock.now()) {
    const certificate = await x509.X509CertificateGenerator.createSelfSigned(
      {
        serialNumber: randomSerial(),
        name: subject,
        notBefore: new Date(now.getTime() - 60_000),
        notAfter: new Date(now.getTime() + validityDays * DAY_MS),
        keys: { privateKey: pair.privateKey, publicKey: pair.publicKey },
        signingAlgorithm: signingAlgorithmOf(pair.algorithm),
        extensions: [
          new x509.BasicConstraintsExtension(true, 0, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
          await x509.SubjectKeyIdentifierExtension.create(pair.publicKey, false, this.keys.crypto),
        ],
      },
      this.keys.crypto,
    );
    if (!(await certificate.verify({ publicKey: pair.publicKey, signatureOnly: true }, this.keys.crypto))) {
      throw new Error('The new CA certificate does not verify with the HSM key');
    }
    return certificate;
  }

  /** A PKCS#10 CSR of the HSM key pair for the enterprise root (a subordinate CA). */
  private async csr(pair: HsmKeyPair, subject: string): Promise<Buffer> {
    const keys = { privateKey: pair.privateKey, publicKey: pair.publicKey };
    const csr = await x509.Pkcs10CertificateRequestGenerator.create(
      { name: subject, keys, signingAlgorithm: signingAlgorithmOf(pair.algorithm) },
      this.keys.crypto,
    );
    return Buffer.from(csr.rawData);
  }

  private async keyPair(ca: Pick<CaRow, 'key_label' | 'org_id'>) {
    const pair = await this.keys.findKeyPair(ca.key_label);
    if (!pair) throw new Error(`The HSM holds no key labelled ${ca.key_label} for the CA of ${ca.org_id}`);
    return pair;
  }

  private async require(orgId: string, active: boolean): Promise<CaRow> {
    const ca = await this.cached(orgId);
    if (!ca) throw this.noCa(orgId);
    return active ? this.requireActive(ca) : ca;
  }

  private requireActive(ca: CaRow): CaRow {
    const orgId = ca.org_id;
    if (ca.status !== 'active') {
      throw new DomainError(
        'CONFLICT',
        `The CA of "${orgId}" awaits its certificate: PUT /admin/v1/organizations/${orgId}/ca/certificate with the enterprise root's signature.`,
      );
    }
    return ca;
  }

  private noCa(orgId: string): DomainError {
    return notFound(`Organization "${orgId}" has no CA; create one with POST /admin/v1/organizations/${orgId}/ca.`);
  }

  pkiBaseUrl(orgId: string): string {
    return `${this.config.publicBaseUrl}/pki/${orgId}`;
  }
}
