import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { ScimSearch, SqlParameters, invalidValue, searchSql } from '@app/common';
import { Database, Transaction } from '@app/persistence';
import { refusedWrite } from '../common/store-errors';
import { CredentialType, DEVICE_POLICY_SEARCH_DEFINITION, DevicePolicyChanges, NewDevicePolicy } from './device-policy.schema';

export interface DevicePolicyRow {
  id: string;
  org_id: string;
  name: string;
  description: string | null;
  device_types: string[];
  credential_types: CredentialType[];
  group_ids: string[];
  /** The group names, in the order of group_ids (read with the row). */
  group_names: string[];
  requires_approval: boolean;
  activation_required: boolean;
  created_at: Date;
  updated_at: Date;
  version: number;
}

const COLUMNS = `dp.id, dp.org_id, dp.name, dp.description, dp.device_types, dp.credential_types, dp.group_ids,
  ARRAY(SELECT g.display_name FROM unnest(dp.group_ids) WITH ORDINALITY AS x(id, n) JOIN user_groups g ON g.id = x.id ORDER BY x.n) AS group_names,
  dp.requires_approval, dp.activation_required, dp.created_at, dp.updated_at, dp.version`;

/** Device policies: what goes on a device for which groups of users. The name is unique per organization. */
@Injectable()
export class DevicePolicyRepository {
  constructor(private readonly db: Database) {}

  async create(orgId: string, policy: NewDevicePolicy, now: Date, tx: Transaction): Promise<DevicePolicyRow> {
    await this.assertGroups(orgId, policy.groups ?? [], tx);
    return refusedWrite(orgId, `A device policy named "${policy.name}" already exists in this organization.`, async () => {
      const [row] = await this.db.query<DevicePolicyRow>(
        `INSERT INTO device_policies AS dp (id, org_id, name, description, device_types, credential_types, group_ids, requires_approval, activation_required, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10) RETURNING ${COLUMNS}`,
        [
          randomUUID(),
          orgId,
          policy.name,
          policy.description ?? null,
          policy.deviceTypes ?? [],
          policy.credentialTypes ?? ['PKI_CERTIFICATE'],
          policy.groups ?? [],
          policy.requiresApproval ?? true,
          policy.activationRequired ?? false,
          now,
        ],
        tx,
      );
      return row;
    });
  }

  async find(orgId: string, id: string): Promise<DevicePolicyRow | undefined> {
    const [row] = await this.db.query<DevicePolicyRow>(`SELECT ${COLUMNS} FROM device_policies dp WHERE dp.org_id = $1 AND dp.id = $2`, [orgId, id]);
    return row;
  }

  /**
   * The policy a content request is created with, share-locked for the transaction: a delete (which
   * takes the row's update lock, then looks for open requests) waits for the creation, and the
   * creation for the delete.
   */
  findForShare(orgId: string, id: string, tx: Transaction): Promise<DevicePolicyRow | undefined> {
    return this.findLocked(orgId, id, 'SHARE', tx);
  }

  /** The policy about to be deleted, update-locked: see findForShare. */
  findForUpdate(orgId: string, id: string, tx: Transaction): Promise<DevicePolicyRow | undefined> {
    return this.findLocked(orgId, id, 'UPDATE', tx);
  }

  private async findLocked(orgId: string, id: string, mode: 'SHARE' | 'UPDATE', tx: Transaction): Promise<DevicePolicyRow | undefined> {
    const [row] = await this.db.query<DevicePolicyRow>(
      `SELECT ${COLUMNS} FROM device_policies dp WHERE dp.org_id = $1 AND dp.id = $2 FOR ${mode} OF dp`,
      [orgId, id],
      tx,
    );
    return row;
  }

  async search(orgId: string, search: ScimSearch): Promise<{ rows: DevicePolicyRow[]; total: number }> {
    const params = new SqlParameters([orgId]);
    const sql = searchSql(search, DEVICE_POLICY_SEARCH_DEFINITION, params);
    const from = `FROM device_policies dp WHERE dp.org_id = $1 AND ${sql.where}`;
    return this.db.searchPage<DevicePolicyRow>(COLUMNS, from, { ...sql, ...search.page }, params.values);
  }

  async update(orgId: string, id: string, changes: DevicePolicyChanges, now: Date, tx: Transaction): Promise<DevicePolicyRow | undefined> {
    if (changes.groups) await this.assertGroups(orgId, changes.groups, tx);
    return refusedWrite(orgId, `A device policy named "${changes.name ?? ''}" already exists in this organization.`, async () => {
      const [row] = await this.db.query<DevicePolicyRow>(
        `UPDATE device_policies AS dp
            SET name = COALESCE($3, name),
                description = CASE WHEN $4::boolean THEN $5 ELSE description END,
                device_types = COALESCE($6, device_types),
                credential_types = COALESCE($7, credential_types),
                group_ids = COALESCE($8::uuid[], group_ids),
                requires_approval = COALESCE($9, requires_approval),
                activation_required = COALESCE($10, activation_required),
                updated_at = $11, version = version + 1
          WHERE dp.org_id = $1 AND dp.id = $2 RETURNING ${COLUMNS}`,
        [
          orgId,
          id,
          changes.name ?? null,
          changes.description !== undefined,
          changes.description ?? null,
          changes.deviceTypes ?? null,
          changes.credentialTypes ?? null,
          changes.groups ?? null,
          changes.requiresApproval ?? null,
          changes.activationRequired ?? null,
          now,
        ],
        tx,
      );
      return row;
    });
  }

  async delete(orgId: string, id: string, tx: Transaction): Promise<DevicePolicyRow | undefined> {
    const [row] = await this.db.query<DevicePolicyRow>(
      `DELETE FROM device_policies dp WHERE dp.org_id = $1 AND dp.id = $2 RETURNING ${COLUMNS}`,
      [orgId, id],
      tx,
    );
    return row;
  }

  /** A deleted group leaves every policy that named it. */
  async forgetGroup(orgId: string, groupId: string, now: Date, tx: Transaction): Promise<void> {
    await this.db.query(
      'UPDATE device_policies SET group_ids = array_remove(group_ids, $2::uuid), updated_at = $3, version = version + 1 WHERE org_id = $1 AND $2::uuid = ANY(group_ids)',
      [orgId, groupId, now],
      tx,
    );
  }

  /** Every group id must name a group of the organization (400 naming the first that does not). */
  private async assertGroups(orgId: string, ids: readonly string[], tx: Transaction): Promise<void> {
    if (ids.length === 0) return;
    const rows = await this.db.query<{ id: string }>('SELECT id::text FROM user_groups WHERE org_id = $1 AND id = ANY($2::uuid[]) FOR SHARE', [orgId, ids], tx);
    const known = new Set(rows.map((row) => row.id.toLowerCase()));
    const missing = ids.find((id) => !known.has(id.toLowerCase()));
    if (missing) throw invalidValue(`Invalid device policy: groups names ${missing}, which is not a group of this organization (GET .../groups lists them).`);
  }
}
