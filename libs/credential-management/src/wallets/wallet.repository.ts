import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { ScimSearch, SqlParameters, searchSql } from '@app/common';
import { Database, Transaction } from '@app/persistence';
import { WALLET_SEARCH_DEFINITION } from './wallet.schema';

export type WalletStatus = 'ACTIVE' | 'SUSPENDED';

export interface WalletRow {
  id: string;
  org_id: string;
  owner_user_id: string;
  owner_user_name: string;
  /** The owner's groups: the wallet's, for Operator Dependent roles. */
  owner_groups: string[];
  status: WalletStatus;
  notes: string | null;
  /** The devices the current suspension put on hold: resume resumes these, and only these. */
  suspended_device_ids: string[];
  created_at: Date;
  updated_at: Date;
  version: number;
}

const COLUMNS =
  'w.id, w.org_id, w.owner_user_id, u.user_name AS owner_user_name, u.groups AS owner_groups, w.status, w.notes, w.suspended_device_ids::text[], w.created_at, w.updated_at, w.version';
const FROM = 'FROM wallets w JOIN users u ON u.id = w.owner_user_id';

/** Wallets: one per user, created in the transaction that creates the user (CREDENTIAL-MANAGEMENT.md "The model"). */
@Injectable()
export class WalletRepository {
  constructor(private readonly db: Database) {}

  async createFor(orgId: string, userId: string, now: Date, tx: Transaction): Promise<void> {
    await this.db.query(
      'INSERT INTO wallets (id, org_id, owner_user_id, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)',
      [randomUUID(), orgId, userId, now],
      tx,
    );
  }

  async find(orgId: string, id: string, tx?: Transaction, lock = false): Promise<WalletRow | undefined> {
    const [row] = await this.db.query<WalletRow>(
      `SELECT ${COLUMNS} ${FROM} WHERE w.org_id = $1 AND w.id = $2${lock ? ' FOR UPDATE OF w' : ''}`,
      [orgId, id],
      tx,
    );
    return row;
  }

  async findByOwner(orgId: string, ownerId: string, tx?: Transaction): Promise<WalletRow | undefined> {
    const [row] = await this.db.query<WalletRow>(`SELECT ${COLUMNS} ${FROM} WHERE w.org_id = $1 AND w.owner_user_id = $2`, [orgId, ownerId], tx);
    return row;
  }

  /** A page of wallets; `groups` limits an Operator Dependent caller to owners who share one of them. */
  async search(orgId: string, search: ScimSearch, groups: readonly string[] | undefined): Promise<{ rows: WalletRow[]; total: number }> {
    const params = new SqlParameters([orgId]);
    const scope = groups === undefined ? 'TRUE' : `u.groups && ${params.add(groups)}::text[]`;
    const sql = searchSql(search, WALLET_SEARCH_DEFINITION, params);
    const from = `${FROM} WHERE w.org_id = $1 AND ${scope} AND ${sql.where}`;
    return this.db.searchPage<WalletRow>(COLUMNS, from, { ...sql, ...search.page }, params.values);
  }

  async update(
    orgId: string,
    id: string,
    change: { status?: WalletStatus; notes?: string | null; suspendedDeviceIds?: string[] },
    now: Date,
    tx: Transaction,
  ): Promise<void> {
    await this.db.query(
      `UPDATE wallets SET status = COALESCE($3, status), notes = CASE WHEN $4::boolean THEN $5 ELSE notes END,
              suspended_device_ids = COALESCE($6::uuid[], suspended_device_ids), updated_at = $7, version = version + 1
        WHERE org_id = $1 AND id = $2`,
      [orgId, id, change.status ?? null, change.notes !== undefined, change.notes ?? null, change.suspendedDeviceIds ?? null, now],
      tx,
    );
  }
}
