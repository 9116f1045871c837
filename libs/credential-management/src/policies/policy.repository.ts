import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '@app/persistence';
import { refusedWrite } from '../common/store-errors';
import { PolicyKind } from './policy.schema';

export interface PolicyRow {
  org_id: string;
  kind: PolicyKind;
  document: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
  version: number;
}

/** The organization's global policies: one row per kind once an administrator has written it. */
@Injectable()
export class PolicyRepository {
  constructor(private readonly db: Database) {}

  async find(orgId: string, kind: PolicyKind, tx?: Transaction): Promise<PolicyRow | undefined> {
    const [row] = await this.db.query<PolicyRow>('SELECT * FROM organization_policies WHERE org_id = $1 AND kind = $2', [orgId, kind], tx);
    return row;
  }

  /** Locks the row (when there is one) so that If-Match is checked against the version being replaced. */
  async findForUpdate(orgId: string, kind: PolicyKind, tx: Transaction): Promise<PolicyRow | undefined> {
    const [row] = await this.db.query<PolicyRow>('SELECT * FROM organization_policies WHERE org_id = $1 AND kind = $2 FOR UPDATE', [orgId, kind], tx);
    return row;
  }

  /** Writes the whole policy; concurrent first writes meet on the primary key and the second becomes version 2. */
  async put(orgId: string, kind: PolicyKind, document: Record<string, unknown>, now: Date, tx: Transaction): Promise<PolicyRow> {
    const [row] = await refusedWrite(orgId, 'The policy was written by another request at the same moment; read it and retry.', () =>
      this.db.query<PolicyRow>(
        `INSERT INTO organization_policies (org_id, kind, document, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
       ON CONFLICT (org_id, kind) DO UPDATE SET document = EXCLUDED.document, updated_at = EXCLUDED.updated_at, version = organization_policies.version + 1
       RETURNING *`,
        [orgId, kind, JSON.stringify(document), now],
        tx,
      ),
    );
    return row;
  }
}
