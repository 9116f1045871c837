import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '@app/persistence';

export type WalletStatus = 'ACTIVE' | 'SUSPENDED';

export interface WalletRow {
  id: string;
  org_id: string;
  owner_user_id: string;
  status: WalletStatus;
  notes: string | null;
  created_at: Date;
  updated_at: Date;
  version: number;
}

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

  /** The wallet id of each of these users (one round trip for a page of users). */
  async idsByOwner(orgId: string, userIds: readonly string[]): Promise<Map<string, string>> {
    if (userIds.length === 0) return new Map();
    const rows = await this.db.query<{ id: string; owner_user_id: string }>(
      'SELECT id, owner_user_id FROM wallets WHERE org_id = $1 AND owner_user_id = ANY($2::uuid[])',
      [orgId, userIds],
    );
    return new Map(rows.map((row) => [row.owner_user_id, row.id]));
  }
}
