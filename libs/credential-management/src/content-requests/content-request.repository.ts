import { Injectable } from '@nestjs/common';
import { ScimSearch, SqlParameters, searchSql } from '@app/common';
import { Database, Transaction } from '@app/persistence';
import { ContentRequestStatus, ContentRequestType, OPEN_STATUSES } from './content-request-lifecycle';
import { CONTENT_REQUEST_SEARCH_DEFINITION, ContentRequestReason, RequestParameter } from './content-request.schema';

export interface ContentRequestRow {
  id: string;
  org_id: string;
  type: ContentRequestType;
  status: ContentRequestStatus;
  device_id: string;
  wallet_id: string | null;
  device_policy_id: string | null;
  device_policy_name: string | null;
  /** The wallet's owner: whose request it is (four eyes, Operator Dependent reach). */
  owner_user_id: string | null;
  owner_user_name: string | null;
  owner_groups: string[] | null;
  reason: ContentRequestReason;
  parameters: RequestParameter[];
  requested_by: string;
  requested_by_kind: 'system_account' | 'user' | 'cli';
  requested_by_id: string;
  approved_by: string | null;
  failure_detail: string | null;
  expires_at: Date;
  created_at: Date;
  updated_at: Date;
  version: number;
}

export type NewContentRequestRow = Omit<
  ContentRequestRow,
  'device_policy_name' | 'owner_user_id' | 'owner_user_name' | 'owner_groups' | 'approved_by' | 'failure_detail' | 'updated_at' | 'version'
>;

const COLUMNS = `cr.id, cr.org_id, cr.type, cr.status, cr.device_id, cr.wallet_id, cr.device_policy_id, dp.name AS device_policy_name,
  w.owner_user_id, o.user_name AS owner_user_name, o.groups AS owner_groups, cr.reason, cr.parameters, cr.requested_by, cr.requested_by_kind,
  cr.requested_by_id, cr.approved_by, cr.failure_detail, cr.expires_at, cr.created_at, cr.updated_at, cr.version`;
const FROM = `FROM content_requests cr
  LEFT JOIN wallets w ON w.id = cr.wallet_id
  LEFT JOIN users o ON o.id = w.owner_user_id
  LEFT JOIN device_policies dp ON dp.id = cr.device_policy_id`;
const OPEN_LIST = OPEN_STATUSES.map((s) => `'${s}'`).join(', ');
const OPEN = `cr.status IN (${OPEN_LIST})`;
/** The predicate of the unique index content_requests_open_device_key, which ON CONFLICT names to use it. */
const OPEN_ON_INSERT = `status IN (${OPEN_LIST})`;

/** Content requests (CREDENTIAL-MANAGEMENT.md "ContentRequest lifecycle"); one open request per device, by a unique index. */
@Injectable()
export class ContentRequestRepository {
  constructor(private readonly db: Database) {}

  /**
   * Inserts a request; 'DEVICE_BUSY' when the device already has an open one. The unique index
   * decides, in the same statement: no read before it, and no aborted transaction after it, so the
   * caller can still read the open request to name it.
   */
  async insert(row: NewContentRequestRow, tx: Transaction): Promise<'CREATED' | 'DEVICE_BUSY'> {
    const inserted = await this.db.query(
      `INSERT INTO content_requests (id, org_id, type, status, device_id, wallet_id, device_policy_id, reason, parameters, requested_by,
                                     requested_by_kind, requested_by_id, expires_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, $11, $12, $13, $14, $14)
       ON CONFLICT (device_id) WHERE ${OPEN_ON_INSERT} DO NOTHING
       RETURNING id`,
      [
        row.id,
        row.org_id,
        row.type,
        row.status,
        row.device_id,
        row.wallet_id,
        row.device_policy_id,
        row.reason,
        JSON.stringify(row.parameters),
        row.requested_by,
        row.requested_by_kind,
        row.requested_by_id,
        row.expires_at,
        row.created_at,
      ],
      tx,
    );
    return inserted.length === 1 ? 'CREATED' : 'DEVICE_BUSY';
  }

  async find(orgId: string, id: string, tx?: Transaction, lock = false): Promise<ContentRequestRow | undefined> {
    const [row] = await this.db.query<ContentRequestRow>(
      `SELECT ${COLUMNS} ${FROM} WHERE cr.org_id = $1 AND cr.id = $2${lock ? ' FOR UPDATE OF cr' : ''}`,
      [orgId, id],
      tx,
    );
    return row;
  }

  /** The open request on a device, if any (named in the 409 of a second one, after `insert` refused it). */
  async findOpenOnDevice(orgId: string, deviceId: string, tx: Transaction): Promise<{ id: string; status: ContentRequestStatus } | undefined> {
    const [row] = await this.db.query<{ id: string; status: ContentRequestStatus }>(
      `SELECT cr.id, cr.status FROM content_requests cr WHERE cr.org_id = $1 AND cr.device_id = $2 AND ${OPEN}`,
      [orgId, deviceId],
      tx,
    );
    return row;
  }

  /**
   * A page of requests; `groups` limits an Operator Dependent caller to requests of wallets whose
   * owner shares one of them (and requests without a wallet, like unowned devices); `ownerId` to one
   * user's own (/Self).
   */
  async search(
    orgId: string,
    search: ScimSearch,
    scope: { groups?: readonly string[]; ownerId?: string },
  ): Promise<{ rows: ContentRequestRow[]; total: number }> {
    const params = new SqlParameters([orgId]);
    const conditions = ['cr.org_id = $1'];
    if (scope.groups !== undefined) conditions.push(`(cr.wallet_id IS NULL OR o.groups && ${params.add(scope.groups)}::text[])`);
    if (scope.ownerId !== undefined) conditions.push(`w.owner_user_id = ${params.add(scope.ownerId)}::uuid`);
    const sql = searchSql(search, CONTENT_REQUEST_SEARCH_DEFINITION, params);
    return this.db.searchPage<ContentRequestRow>(
      COLUMNS,
      `${FROM} WHERE ${conditions.join(' AND ')} AND ${sql.where}`,
      { ...sql, ...search.page },
      params.values,
    );
  }

  /** A move of the locked request: its status, and who approved it or why it failed when the move says. */
  async move(
    orgId: string,
    id: string,
    change: { status: ContentRequestStatus; approvedBy?: string; failureDetail?: string | null; now: Date },
    tx: Transaction,
  ): Promise<void> {
    await this.db.query(
      `UPDATE content_requests
          SET status = $3, approved_by = COALESCE($4, approved_by),
              failure_detail = CASE WHEN $5::boolean THEN $6 ELSE failure_detail END,
              updated_at = $7, version = version + 1
        WHERE org_id = $1 AND id = $2`,
      [orgId, id, change.status, change.approvedBy ?? null, change.failureDetail !== undefined, change.failureDetail ?? null, change.now],
      tx,
    );
  }

  async update(
    orgId: string,
    id: string,
    change: { reason: ContentRequestReason; parameters: RequestParameter[]; expiresAt: Date },
    now: Date,
    tx: Transaction,
  ): Promise<void> {
    await this.db.query(
      'UPDATE content_requests SET reason = $3, parameters = $4::jsonb, expires_at = $5, updated_at = $6, version = version + 1 WHERE org_id = $1 AND id = $2',
      [orgId, id, change.reason, JSON.stringify(change.parameters), change.expiresAt, now],
      tx,
    );
  }

  /** Open requests whose expiresAt has passed, oldest first (the sweep expires them a batch at a time). */
  async overdue(now: Date, limit: number): Promise<{ org_id: string; id: string }[]> {
    return this.db.query<{ org_id: string; id: string }>(
      `SELECT cr.org_id, cr.id FROM content_requests cr WHERE ${OPEN} AND cr.expires_at <= $1 ORDER BY cr.expires_at LIMIT $2`,
      [now, limit],
    );
  }

  /** Requests by status (Stats); `groups` limits as search does. */
  async countByStatus(orgId: string, groups: readonly string[] | undefined): Promise<Map<ContentRequestStatus, number>> {
    const rows =
      groups === undefined
        ? await this.db.query<{ status: ContentRequestStatus; n: number }>(
            'SELECT status, count(*)::int AS n FROM content_requests WHERE org_id = $1 GROUP BY status',
            [orgId],
          )
        : await this.db.query<{ status: ContentRequestStatus; n: number }>(
            `SELECT cr.status, count(*)::int AS n ${FROM} WHERE cr.org_id = $1 AND (cr.wallet_id IS NULL OR o.groups && $2::text[]) GROUP BY cr.status`,
            [orgId, groups],
          );
    return new Map(rows.map((row) => [row.status, row.n]));
  }

  /** How many open requests name the device policy (a policy in use is not deleted). */
  async countOpenWithPolicy(orgId: string, policyId: string, tx: Transaction): Promise<number> {
    const [row] = await this.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM content_requests cr WHERE cr.org_id = $1 AND cr.device_policy_id = $2 AND ${OPEN}`,
      [orgId, policyId],
      tx,
    );
    return row.n;
  }
}
