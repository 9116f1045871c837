import { Injectable } from '@nestjs/common';

import { Database, PG_UNIQUE_VIOLATION, Transaction, isPgError } from '@app/persistence';
import { uniqueness } from '@app/common';
import { OrganizationSettings } from './organization-settings';

export interface OrganizationRow {
  id: string;
  name: string;
  settings: Partial<OrganizationSettings>;
  created_at: Date;
  updated_at: Date;
  version: number;
}

@Injectable()
export class OrganizationRepository {
  constructor(private readonly db: Database) {}

  /** Inserts; a taken id is a 409 decided by the primary key, not by a prior lookup. */
  async create(row: { id: string; name: string; settings: OrganizationSettings; now: Date }, tx?: Transaction): Promise<OrganizationRow> {
    try {
      const [created] = await this.db.query<OrganizationRow>(
        `INSERT INTO organizations (id, name, settings, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) RETURNING *`,
        [row.id, row.name, JSON.stringify(row.settings), row.now],
        tx,
      );
      return created;
    } catch (error) {
      if (isPgError(error, PG_UNIQUE_VIOLATION)) throw uniqueness(`Organization "${row.id}" already exists.`);
      throw error;
    }
  }

  async findById(id: string): Promise<OrganizationRow | undefined> {
    const [row] = await this.db.query<OrganizationRow>('SELECT * FROM organizations WHERE id = $1', [id]);
    return row;
  }

  async list(offset: number, limit: number): Promise<{ rows: OrganizationRow[]; total: number }> {
    const rows = await this.db.query<OrganizationRow>('SELECT * FROM organizations ORDER BY id OFFSET $1 LIMIT $2', [offset, limit]);
    return { rows, total: await this.count() };
  }

  /** The organizations that set an audit retention (DECISIONS 11.3), with its days. */
  async auditRetentionDays(): Promise<Map<string, number>> {
    const rows = await this.db.query<{ id: string; days: number }>(
      "SELECT id, (settings->>'auditRetentionDays')::int AS days FROM organizations WHERE jsonb_typeof(settings->'auditRetentionDays') = 'number'",
    );
    return new Map(rows.map((row) => [row.id, row.days]));
  }

  async count(): Promise<number> {
    const [row] = await this.db.query<{ n: string }>('SELECT count(*) AS n FROM organizations');
    return Number(row.n);
  }

  /** Settings are merged in SQL (jsonb ||), so two concurrent changes of different settings both land. */
  async update(
    id: string,
    changes: { name?: string; settings?: Partial<OrganizationSettings> },
    now: Date,
    tx?: Transaction,
  ): Promise<OrganizationRow | undefined> {
    const [row] = await this.db.query<OrganizationRow>(
      `UPDATE organizations
          SET name = COALESCE($2, name), settings = settings || COALESCE($3::jsonb, '{}'::jsonb), updated_at = $4, version = version + 1
        WHERE id = $1 RETURNING *`,
      [id, changes.name ?? null, changes.settings ? JSON.stringify(changes.settings) : null, now],
      tx,
    );
    return row;
  }

  /** The organization's version, its row locked until the transaction ends (a change conditional on If-Match). */
  async lockVersion(id: string, tx: Transaction): Promise<number | undefined> {
    const [row] = await this.db.query<{ version: number }>('SELECT version FROM organizations WHERE id = $1 FOR UPDATE', [id], tx);
    return row?.version;
  }

  /** Locks the organization row until the transaction ends, so no account, user or device can be added meanwhile. */
  async lockForDelete(id: string, tx: Transaction): Promise<boolean> {
    const rows = await this.db.query('SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE', [id], tx);
    return rows.length > 0;
  }

  /** The system accounts and users that block a deletion without `force` (DECISIONS 11); other libraries count theirs (AccountDependents). */
  async countOwnHoldings(id: string, tx: Transaction): Promise<{ systemAccounts: number; users: number }> {
    const [row] = await this.db.query<{ system_accounts: string; users: string }>(
      `SELECT (SELECT count(*) FROM system_accounts WHERE org_id = $1) AS system_accounts,
              (SELECT count(*) FROM users WHERE org_id = $1) AS users`,
      [id],
      tx,
    );
    return { systemAccounts: Number(row.system_accounts), users: Number(row.users) };
  }

  /**
   * Deletes the organization. Every table that holds an organization's rows references
   * organizations ON DELETE CASCADE (directly, or through an account or user), whichever library
   * owns it; what cannot (keys without org_id) its owner removes through AccountDependents. Audit
   * events have no such reference and stay: they are the record of the deletion (DECISIONS 11).
   */
  async delete(id: string, tx: Transaction): Promise<void> {
    await this.db.query('DELETE FROM organizations WHERE id = $1', [id], tx);
  }
}
