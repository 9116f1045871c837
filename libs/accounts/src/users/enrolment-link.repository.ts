import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '@app/persistence';

/** A stored enrolment link: never the link itself, only the SHA-256 of its secret. */
export interface EnrolmentLinkRow {
  id: string;
  org_id: string;
  user_id: string;
  user_name: string;
  expires_at: Date;
  used_at: Date | null;
  replaced_at: Date | null;
  purpose: EnrolmentLinkPurpose;
  /** The browser session an add-factor ticket belongs to; null for an enrolment link. */
  session_id: string | null;
}

/** An enrolment link (password, then a second factor) or a signed-in person's add-factor ticket (the factor step only; DECISIONS 14.6). */
export type EnrolmentLinkPurpose = 'enrolment' | 'add_factor';

const COLUMNS = 'l.id, l.org_id, l.user_id, u.user_name, l.expires_at, l.used_at, l.replaced_at, l.purpose, l.session_id';

/** Enrolment links (DECISIONS 14.4); the partial unique index `enrolment_links_open_key` keeps one open link per person. */
@Injectable()
export class EnrolmentLinkRepository {
  constructor(private readonly db: Database) {}

  /** Marks the person's open link of `purpose` (if any) replaced; answers how many were. Run under the person's row lock. */
  async replaceOpen(userId: string, now: Date, tx: Transaction, purpose: EnrolmentLinkPurpose = 'enrolment'): Promise<number> {
    const rows = await this.db.query(
      'UPDATE enrolment_links SET replaced_at = $2 WHERE user_id = $1 AND purpose = $3 AND used_at IS NULL AND replaced_at IS NULL RETURNING id',
      [userId, now, purpose],
      tx,
    );
    return rows.length;
  }

  async insert(
    row: {
      id: string;
      orgId: string;
      userId: string;
      tokenHash: Buffer;
      createdBy: string;
      createdAt: Date;
      expiresAt: Date;
      purpose?: EnrolmentLinkPurpose;
      sessionId?: string;
    },
    tx: Transaction,
  ): Promise<void> {
    await this.db.query(
      `INSERT INTO enrolment_links (id, org_id, user_id, token_hash, created_by, created_at, expires_at, purpose, session_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [row.id, row.orgId, row.userId, row.tokenHash, row.createdBy, row.createdAt, row.expiresAt, row.purpose ?? 'enrolment', row.sessionId ?? null],
      tx,
    );
  }

  /** The link whose secret hashes to `tokenHash`, in the organization, whatever its state. */
  async findByHash(orgId: string, tokenHash: Buffer, tx?: Transaction): Promise<EnrolmentLinkRow | undefined> {
    const [row] = await this.db.query<EnrolmentLinkRow>(
      `SELECT ${COLUMNS} FROM enrolment_links l JOIN users u ON u.id = l.user_id WHERE l.org_id = $1 AND l.token_hash = $2`,
      [orgId, tokenHash],
      tx,
    );
    return row;
  }

  /**
   * Uses the link, once: of two uses at once exactly one updates the row. Undefined when it is not
   * the person's open, unexpired link (used, replaced, expired, another person's, unknown).
   */
  async use(orgId: string, tokenHash: Buffer, userId: string, now: Date, tx: Transaction): Promise<string | undefined> {
    const [row] = await this.db.query<{ id: string }>(
      `UPDATE enrolment_links SET used_at = $4
        WHERE org_id = $1 AND token_hash = $2 AND user_id = $3 AND used_at IS NULL AND replaced_at IS NULL AND expires_at > $4
        RETURNING id`,
      [orgId, tokenHash, userId, now],
      tx,
    );
    return row?.id;
  }
}
