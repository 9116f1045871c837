import { Injectable } from '@nestjs/common';

import { Database, PG_UNIQUE_VIOLATION, Transaction, isPgError } from '@app/persistence';
import { uniqueness } from '@app/common';
import { OrganizationSettings } from './organization-settings';

/** What an organization still holds: DELETE refuses while any of it exists, unless forced (DECISIONS 11). */
export interface OrganizationHoldings {
  systemAccounts: number;
  users: number;
  devices: number;
}

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

  /** Locks the organization row until the transaction ends, so no account, user or device can be added meanwhile. */
  async lockForDelete(id: string, tx: Transaction): Promise<boolean> {
    const rows = await this.db.query('SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE', [id], tx);
    return rows.length > 0;
  }

  /** What blocks a deletion without `force` (DECISIONS 11): system accounts, users and devices. */
  async countHoldings(id: string, tx: Transaction): Promise<OrganizationHoldings> {
    const [row] = await this.db.query<{ system_accounts: string; users: string; devices: string }>(
      `SELECT (SELECT count(*) FROM system_accounts WHERE org_id = $1) AS system_accounts,
              (SELECT count(*) FROM users WHERE org_id = $1) AS users,
              (SELECT count(*) FROM devices WHERE org_id = $1) AS devices`,
      [id],
      tx,
    );
    return { systemAccounts: Number(row.system_accounts), users: Number(row.users), devices: Number(row.devices) };
  }

  /**
   * Deletes the organization and everything it owns, except its audit events (DECISIONS 11). Every
   * org-owned table references organizations ON DELETE CASCADE, and the credentials, tokens and jtis
   * of accounts and users cascade from those; a table that carries org_id without such a reference
   * is swept afterwards, found in the catalogue so that new tables are covered too. The lockout
   * counters of the org's Client IDs and userNames (keys of libs/auth LockoutService, no org_id)
   * go as well.
   */
  async deleteWithEverything(id: string, tx: Transaction): Promise<void> {
    await this.db.query('DELETE FROM organizations WHERE id = $1', [id], tx);
    const tables = await this.db.query<{ table_name: string }>(
      `SELECT c.table_name FROM information_schema.columns c
         JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
        WHERE c.table_schema = current_schema() AND c.column_name = 'org_id' AND t.table_type = 'BASE TABLE' AND c.table_name <> 'audit_events'
        ORDER BY c.table_name`,
      [],
      tx,
    );
    for (const { table_name: table } of tables) {
      await this.db.query(`DELETE FROM "${table.replaceAll('"', '""')}" WHERE org_id = $1`, [id], tx);
    }
    await this.db.query(`DELETE FROM auth_failures WHERE starts_with(key, 'pair:' || $1 || '-') OR starts_with(key, 'pair:user:' || $1 || '/')`, [id], tx);
  }
}
