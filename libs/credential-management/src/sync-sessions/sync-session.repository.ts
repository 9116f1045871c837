import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '@app/persistence';
import { SyncResult } from './sync-session.schema';

export interface NewSyncSession {
  id: string;
  org_id: string;
  content_request_id: string;
  outcome: 'completed' | 'failed';
  results: Omit<SyncResult, 'csr'>[];
  executed_by: string;
  created_at: Date;
}

/** Sync sessions: the record of how each content request was executed (at most one completed per request, by a unique index). */
@Injectable()
export class SyncSessionRepository {
  constructor(private readonly db: Database) {}

  async insert(row: NewSyncSession, tx: Transaction): Promise<void> {
    await this.db.query(
      'INSERT INTO sync_sessions (id, org_id, content_request_id, outcome, results, executed_by, created_at) VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)',
      [row.id, row.org_id, row.content_request_id, row.outcome, JSON.stringify(row.results), row.executed_by, row.created_at],
      tx,
    );
  }
}
