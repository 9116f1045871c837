import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '@app/persistence';
import type { KeyAlgorithm } from '@app/hsm';

export interface CaRow {
  org_id: string;
  key_label: string;
  key_algorithm: KeyAlgorithm;
  mode: 'self-signed' | 'subordinate';
  status: 'active' | 'awaiting-certificate';
  subject: string;
  certificate: Buffer | null;
  csr: Buffer | null;
  not_after: Date | null;
  created_at: Date;
  updated_at: Date;
  version: number;
  /** 1 for the CA's first key, one more at each renewal; the current generation issues. */
  generation: number;
  /** When the generation was revoked as compromised (its leaves revoked with cACompromise); it then issues nothing. */
  compromised_at: Date | null;
}

/**
 * A generation of the CA other than the current one: a renewal awaiting the enterprise root's
 * certificate, or a retired generation, which signs its CRL and OCSP answers only, with its two
 * cross-certificates with the generation after it (RFC 4210 §4.4).
 */
export interface CaGenerationRow extends Omit<CaRow, 'status'> {
  status: 'awaiting-certificate' | 'retired';
  /** This generation's key certified by the next generation's key (none when this generation retired compromised). */
  old_with_new: Buffer | null;
  /** The next generation's key certified by this generation's key. */
  new_with_old: Buffer | null;
  /** When the last certificate this generation issued expires (null: it issued none); it answers until then. */
  last_certificate_expires: Date | null;
}

/** What signing with one generation's key needs of its row. */
export type SigningGeneration = Pick<CaRow, 'org_id' | 'generation' | 'key_label' | 'key_algorithm' | 'certificate' | 'created_at' | 'version'>;

export type CertificateStatus = 'good' | 'revoked' | 'on-hold';

export interface IssuedRow {
  org_id: string;
  serial: string;
  user_id: string | null;
  subject: string;
  der: Buffer;
  not_before: Date;
  not_after: Date;
  status: CertificateStatus;
  revoked_at: Date | null;
  reason: string | null;
  issued_at: Date;
  /** The CA generation whose key signed it: its CRL lists it, its key answers OCSP for it. */
  generation: number;
}

/** A revoked or held certificate still within its validity: an entry of the CRL. */
export interface ListedRow {
  serial: string;
  status: 'revoked' | 'on-hold';
  revoked_at: Date;
  reason: string | null;
}

/** What OCSP answers of an issued certificate. */
export type IssuedStatus = Pick<IssuedRow, 'status' | 'revoked_at' | 'reason' | 'generation'>;

/** What OCSP needs of one request in one round trip: the CA row and the status of the serials asked for (those issued). */
export interface OcspLookup {
  ca: CaRow;
  issued: Map<string, IssuedStatus>;
}

export interface PublishedCrl {
  crl_number: string;
  der: Buffer;
  this_update: Date;
  next_update: Date;
}

/** The tables of libs/pki: CAs, what they issued, and their published CRLs. */
@Injectable()
export class CertificateAuthorityRepository {
  constructor(private readonly db: Database) {}

  /** Inserts the CA row; false when the organization has one already (the primary key decides, not a prior read). */
  async insert(
    row: Omit<CaRow, 'version' | 'certificate' | 'csr' | 'not_after' | 'status' | 'generation' | 'compromised_at'>,
    tx: Transaction,
  ): Promise<boolean> {
    const inserted = await this.db.query(
      `INSERT INTO certification_authorities (org_id, key_label, key_algorithm, mode, status, subject, created_at, updated_at)
       VALUES ($1, $2, $3, $4, 'awaiting-certificate', $5, $6, $6) ON CONFLICT (org_id) DO NOTHING RETURNING 1`,
      [row.org_id, row.key_label, row.key_algorithm, row.mode, row.subject, row.created_at],
      tx,
    );
    return inserted.length > 0;
  }

  async activate(orgId: string, certificate: Buffer, notAfter: Date, now: Date, tx?: Transaction): Promise<CaRow> {
    const [row] = await this.db.query<CaRow>(
      `UPDATE certification_authorities SET status = 'active', certificate = $2, not_after = $3, updated_at = $4, version = version + 1
        WHERE org_id = $1 RETURNING *`,
      [orgId, certificate, notAfter, now],
      tx,
    );
    return row;
  }

  /** The generations other than the current one, oldest first, with when each retired one's last certificate expires. */
  async generations(orgId: string, tx?: Transaction): Promise<CaGenerationRow[]> {
    return this.db.query<CaGenerationRow>(
      `SELECT g.*, (SELECT max(i.not_after) FROM issued_certificates i WHERE i.org_id = g.org_id AND i.generation = g.generation) AS last_certificate_expires
         FROM ca_generations g WHERE g.org_id = $1 ORDER BY g.generation`,
      [orgId],
      tx,
    );
  }

  /** Records a renewal awaiting its certificate; false when one awaits already (the unique index decides). */
  async insertRenewal(
    row: Pick<CaGenerationRow, 'org_id' | 'generation' | 'key_label' | 'key_algorithm' | 'mode' | 'subject' | 'csr' | 'created_at'>,
    tx: Transaction,
  ): Promise<boolean> {
    const inserted = await this.db.query(
      `INSERT INTO ca_generations (org_id, generation, key_label, key_algorithm, mode, status, subject, csr, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, 'awaiting-certificate', $6, $7, $8, $8) ON CONFLICT DO NOTHING RETURNING 1`,
      [row.org_id, row.generation, row.key_label, row.key_algorithm, row.mode, row.subject, row.csr, row.created_at],
      tx,
    );
    return inserted.length > 0;
  }

  /**
   * The rollover, in the caller's transaction with the CA row locked: the current generation
   * becomes a retired row with its cross-certificates, the next one becomes the CA row (which
   * issues from now on), and the renewal that awaited its certificate, if any, is gone.
   */
  async rollOver(
    current: CaRow,
    next: Pick<CaRow, 'generation' | 'key_label' | 'key_algorithm' | 'subject' | 'certificate' | 'not_after'>,
    crosses: { oldWithNew: Buffer; newWithOld: Buffer } | null,
    now: Date,
    tx: Transaction,
  ): Promise<CaRow> {
    await this.db.query('DELETE FROM ca_generations WHERE org_id = $1 AND generation = $2', [current.org_id, next.generation], tx);
    await this.db.query(
      `INSERT INTO ca_generations (org_id, generation, key_label, key_algorithm, mode, status, subject, certificate, not_after, old_with_new, new_with_old, created_at, updated_at, compromised_at)
       VALUES ($1, $2, $3, $4, $5, 'retired', $6, $7, $8, $9, $10, $11, $12, $13)`,
      [
        current.org_id,
        current.generation,
        current.key_label,
        current.key_algorithm,
        current.mode,
        current.subject,
        current.certificate,
        current.not_after,
        crosses?.oldWithNew ?? null,
        crosses?.newWithOld ?? null,
        current.created_at,
        now,
        current.compromised_at,
      ],
      tx,
    );
    const [row] = await this.db.query<CaRow>(
      `UPDATE certification_authorities SET generation = $2, key_label = $3, key_algorithm = $4, subject = $5, certificate = $6, not_after = $7,
              csr = NULL, status = 'active', compromised_at = NULL, updated_at = $8, version = version + 1
        WHERE org_id = $1 RETURNING *`,
      [current.org_id, next.generation, next.key_label, next.key_algorithm, next.subject, next.certificate, next.not_after, now],
      tx,
    );
    return row;
  }

  async setCsr(orgId: string, csr: Buffer, tx: Transaction): Promise<CaRow> {
    const [row] = await this.db.query<CaRow>('UPDATE certification_authorities SET csr = $2 WHERE org_id = $1 RETURNING *', [orgId, csr], tx);
    return row;
  }

  async find(orgId: string, tx?: Transaction): Promise<CaRow | undefined> {
    const [row] = await this.db.query<CaRow>('SELECT * FROM certification_authorities WHERE org_id = $1', [orgId], tx);
    return row;
  }

  /** Locks the CA row: CRL publication and issuance of one CA take turns. */
  async lock(orgId: string, tx: Transaction): Promise<CaRow | undefined> {
    const [row] = await this.db.query<CaRow>('SELECT * FROM certification_authorities WHERE org_id = $1 FOR UPDATE', [orgId], tx);
    return row;
  }

  /**
   * Stores an issued certificate in the caller's transaction; 'KEY_REUSED' when this CA certified the
   * public key before (the unique key decides, also for two requests at once); 'CA_CHANGED' when the
   * generation that signed it is no longer the current one or was revoked as compromised. The CA
   * row is read FOR KEY SHARE: a generation's revocation holds it FOR UPDATE, so a certificate is
   * either stored before the revocation's UPDATE of the generation's leaves (which then revokes it)
   * or sees the revocation and is refused; none slips between.
   */
  async insertIssued(
    row: Omit<IssuedRow, 'status' | 'revoked_at' | 'reason'> & { public_key_sha256: Buffer },
    tx: Transaction,
  ): Promise<'ok' | 'KEY_REUSED' | 'CA_CHANGED'> {
    const inserted = await this.db.query(
      `INSERT INTO issued_certificates (org_id, serial, user_id, subject, public_key_sha256, der, not_before, not_after, issued_at, generation)
       SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 FROM certification_authorities ca
        WHERE ca.org_id = $1 AND ca.generation = $10 AND ca.compromised_at IS NULL FOR KEY SHARE
       ON CONFLICT (org_id, public_key_sha256) DO NOTHING RETURNING 1`,
      [row.org_id, row.serial, row.user_id, row.subject, row.public_key_sha256, row.der, row.not_before, row.not_after, row.issued_at, row.generation],
      tx,
    );
    if (inserted.length > 0) return 'ok';
    const [ca] = await this.db.query<{ issues: boolean }>(
      'SELECT generation = $2 AND compromised_at IS NULL AS issues FROM certification_authorities WHERE org_id = $1',
      [row.org_id, row.generation],
      tx,
    );
    return ca?.issues ? 'KEY_REUSED' : 'CA_CHANGED';
  }

  /** The serials of `generation`'s certificates not revoked yet (a generation's revocation locks what follows them first). */
  async unrevokedSerials(orgId: string, generation: number, tx: Transaction): Promise<string[]> {
    const rows = await this.db.query<{ serial: string }>(
      "SELECT serial FROM issued_certificates WHERE org_id = $1 AND generation = $2 AND status <> 'revoked'",
      [orgId, generation],
      tx,
    );
    return rows.map((r) => r.serial);
  }

  /** Marks a generation (the current one or a retired one) compromised; false when it is not there or already is. */
  async markCompromised(orgId: string, generation: number, current: boolean, at: Date, tx: Transaction): Promise<boolean> {
    const marked = await this.db.query(
      current
        ? `UPDATE certification_authorities SET compromised_at = $3, updated_at = $3, version = version + 1
            WHERE org_id = $1 AND generation = $2 AND compromised_at IS NULL RETURNING 1`
        : `UPDATE ca_generations SET compromised_at = $3, updated_at = $3, version = version + 1
            WHERE org_id = $1 AND generation = $2 AND status = 'retired' AND compromised_at IS NULL RETURNING 1`,
      [orgId, generation, at],
      tx,
    );
    return marked.length > 0;
  }

  /** Revokes every certificate of `generation` not revoked yet, held ones too, in one statement; answers their serials. */
  async revokeGeneration(orgId: string, generation: number, reason: string, at: Date, tx: Transaction): Promise<string[]> {
    const rows = await this.db.query<{ serial: string }>(
      `UPDATE issued_certificates SET status = 'revoked', reason = $3, revoked_at = $4
        WHERE org_id = $1 AND generation = $2 AND status <> 'revoked' RETURNING serial`,
      [orgId, generation, reason, at],
      tx,
    );
    return rows.map((r) => r.serial);
  }

  /**
   * The cross-certificates `generation`'s key signed for a generation since revoked as compromised,
   * with when it was: its new-with-old when the next generation is compromised, the previous
   * generation's old-with-new when that one is. They go on `generation`'s CRL (an ARL entry, reason
   * cACompromise), so a relying party that trusts `generation` no longer reaches the compromised key through them.
   */
  async compromisedCrossCertificates(orgId: string, generation: number, tx: Transaction): Promise<{ der: Buffer; compromised_at: Date }[]> {
    return this.db.query<{ der: Buffer; compromised_at: Date }>(
      `WITH g AS (
         SELECT generation, compromised_at, old_with_new, new_with_old FROM ca_generations WHERE org_id = $1 AND status = 'retired'
         UNION ALL SELECT generation, compromised_at, NULL, NULL FROM certification_authorities WHERE org_id = $1)
       SELECT c.new_with_old AS der, n.compromised_at FROM g c JOIN g n ON n.generation = c.generation + 1
        WHERE c.generation = $2 AND c.new_with_old IS NOT NULL AND n.compromised_at IS NOT NULL
       UNION ALL
       SELECT p.old_with_new, p.compromised_at FROM g p WHERE p.generation = $2 - 1 AND p.old_with_new IS NOT NULL AND p.compromised_at IS NOT NULL`,
      [orgId, generation],
      tx,
    );
  }

  async findIssued(orgId: string, serial: string, tx?: Transaction): Promise<IssuedRow | undefined> {
    const [row] = await this.db.query<IssuedRow>('SELECT * FROM issued_certificates WHERE org_id = $1 AND serial = $2', [orgId, serial], tx);
    return row;
  }

  /** The CA row and the statuses of `serials` in one query (OCSP answers thousands a second). */
  async ocspLookup(orgId: string, serials: string[]): Promise<OcspLookup | undefined> {
    const [row] = await this.db.query<
      CaRow & { issued: { serial: string; status: CertificateStatus; revoked_at: string | null; reason: string | null; generation: number }[] }
    >(
      `SELECT ca.*, (SELECT coalesce(json_agg(json_build_object('serial', i.serial, 'status', i.status, 'revoked_at', i.revoked_at, 'reason', i.reason, 'generation', i.generation)), '[]')
                       FROM issued_certificates i WHERE i.org_id = ca.org_id AND i.serial = ANY($2::text[])) AS issued
         FROM certification_authorities ca WHERE ca.org_id = $1`,
      [orgId, serials],
    );
    if (!row) return undefined;
    const { issued, ...ca } = row;
    const statuses = new Map(
      issued.map((i) => [i.serial, { status: i.status, revoked_at: i.revoked_at ? new Date(i.revoked_at) : null, reason: i.reason, generation: i.generation }]),
    );
    return { ca, issued: statuses };
  }

  /** Moves a certificate's status; undefined when the move does not apply (unknown, or revoked for good). */
  async setStatus(orgId: string, serial: string, to: CertificateStatus, reason: string | null, at: Date, tx: Transaction): Promise<IssuedRow | undefined> {
    const [row] = await this.db.query<IssuedRow>(
      `UPDATE issued_certificates SET status = $3, reason = $4, revoked_at = CASE WHEN $3 = 'good' THEN NULL ELSE $5::timestamptz END
        WHERE org_id = $1 AND serial = $2 AND status <> 'revoked' RETURNING *`,
      [orgId, serial, to, reason, at],
      tx,
    );
    return row;
  }

  /** The entries of one generation's CRL: revoked or held, not yet expired. */
  async listed(orgId: string, generation: number, now: Date, tx: Transaction): Promise<ListedRow[]> {
    return this.db.query<ListedRow>(
      `SELECT serial, status, revoked_at, reason FROM issued_certificates
        WHERE org_id = $1 AND status <> 'good' AND not_after > $2 AND generation = $3 ORDER BY serial`,
      [orgId, now, generation],
      tx,
    );
  }

  async nextCrlNumber(tx: Transaction): Promise<string> {
    const [row] = await this.db.query<{ n: string }>("SELECT nextval('pki_crl_number')::text AS n", [], tx);
    return row.n;
  }

  async publishedCrl(orgId: string, generation: number, tx?: Transaction): Promise<PublishedCrl | undefined> {
    const [row] = await this.db.query<PublishedCrl>(
      'SELECT crl_number::text, der, this_update, next_update FROM published_crls WHERE org_id = $1 AND generation = $2',
      [orgId, generation],
      tx,
    );
    return row;
  }

  /** When each generation's CRL was last signed and when it says the next comes (without the DER): what the portal shows. */
  async publishedCrlTimes(orgId: string): Promise<{ generation: number; crl_number: string; this_update: Date; next_update: Date }[]> {
    return this.db.query('SELECT generation, crl_number::text, this_update, next_update FROM published_crls WHERE org_id = $1', [orgId]);
  }

  async publishCrl(orgId: string, generation: number, crl: PublishedCrl, tx: Transaction): Promise<void> {
    await this.db.query(
      `INSERT INTO published_crls (org_id, generation, crl_number, der, this_update, next_update) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (org_id, generation) DO UPDATE SET crl_number = EXCLUDED.crl_number, der = EXCLUDED.der, this_update = EXCLUDED.this_update, next_update = EXCLUDED.next_update`,
      [orgId, generation, crl.crl_number, crl.der, crl.this_update, crl.next_update],
      tx,
    );
  }
}
