import { AUDIT_INSERT, auditCodeOf } from '@app/audit';
import { Injectable } from '@nestjs/common';
import { ScimSearch, SqlParameters, searchSql } from '@app/common';
import { Database, PG_UNIQUE_VIOLATION, Transaction, isPgError, prepared } from '@app/persistence';
import { DEVICE_SEARCH_DEFINITION, ExternalId } from './device.schema';
import { DeviceReason, DeviceStatus } from './lifecycle/device-lifecycle';

export interface DeviceRow {
  id: string;
  org_id: string;
  status: DeviceStatus;
  reason: DeviceReason;
  owner_user_id: string | null;
  owner_user_name: string | null;
  /** The owner's groups: the device's groups for Operator Dependent roles. */
  owner_groups: string[] | null;
  issued_at: Date | null;
  created_at: Date;
  updated_at: Date;
  version: number;
  external_ids: ExternalId[];
}

/** An {ATR, CUID} already stored in the organization, and the device holding it. */
export interface StoredExternalId {
  device_id: string;
  atr: string;
  cuid: string;
}

/** The one name of the unique index behind "a CUID is unique in its organization". */
const CUID_UNIQUE = 'device_external_ids_org_cuid_key';

export function isCuidTaken(error: unknown): boolean {
  return isPgError(error, PG_UNIQUE_VIOLATION) && (error as { constraint?: string }).constraint === CUID_UNIQUE;
}

/** Every column a device answer needs; `d` is devices, `u` the owner. */
const DEVICE_COLUMNS = `d.id, d.org_id, d.status, d.reason, d.owner_user_id, u.user_name AS owner_user_name, u.groups AS owner_groups,
  d.issued_at, d.created_at, d.updated_at, d.version,
  COALESCE((SELECT json_agg(json_build_object('ATR', e.atr, 'CUID', e.cuid) ORDER BY e.position)
              FROM device_external_ids e WHERE e.device_id = d.id), '[]'::json) AS external_ids`;

const FIND = prepared('device_find', `SELECT ${DEVICE_COLUMNS} FROM devices d LEFT JOIN users u ON u.id = d.owner_user_id WHERE d.org_id = $1 AND d.id = $2`);

/**
 * One statement inserts a batch of created devices, their {ATR, CUID} pairs and one `device.create`
 * audit event each: the unique index on (org, CUID) decides a conflict, nothing is left
 * half-written, and concurrent creates share the statement and its commit (DeviceService batches
 * them with GroupCommit, as the token service does with token.issue).
 */
const INSERT = prepared(
  'device_insert',
  `WITH device AS (
     INSERT INTO devices (id, org_id, status, reason, created_at, updated_at, version)
     SELECT id, org, 'AVAILABLE', 'NONE', at, at, 1 FROM unnest($1::uuid[], $2::text[], $3::timestamptz[]) AS t(id, org, at)
   ), pairs AS (
     INSERT INTO device_external_ids (device_id, org_id, position, atr, cuid)
     SELECT * FROM unnest($4::uuid[], $5::text[], $6::int[], $7::text[], $8::text[])
   )
   ${AUDIT_INSERT}
   SELECT at, org, actor, 'device.create', ${auditCodeOf('device.create')}, id::text, 'success', address, details, correlation
     FROM unnest($3::timestamptz[], $2::text[], $9::text[], $1::uuid[], $10::text[], $11::jsonb[], $12::text[]) AS a(at, org, actor, id, address, details, correlation)`,
);

/** A created device and who created it, for its audit event. */
export interface CreatedDevice {
  id: string;
  orgId: string;
  externalIds: ExternalId[];
  now: Date;
  actor: string;
  sourceAddress: string;
  /** The creating request's correlation id, for the audit event. */
  correlationId?: string;
}

@Injectable()
export class DeviceRepository {
  constructor(private readonly db: Database) {}

  /** How many devices the organization has (they block its deletion without force). */
  async countInOrg(orgId: string, tx: Transaction): Promise<number> {
    const [row] = await this.db.query<{ n: string }>('SELECT count(*) AS n FROM devices WHERE org_id = $1', [orgId], tx);
    return Number(row.n);
  }

  /** Inserts created devices with their audit events, in one statement. */
  async insertCreated(devices: CreatedDevice[]): Promise<void> {
    const pairs = devices.flatMap((d) => d.externalIds.map((e, index) => ({ device: d, position: index + 1, ...e })));
    await this.db.query(INSERT, [
      devices.map((d) => d.id),
      devices.map((d) => d.orgId),
      devices.map((d) => d.now),
      pairs.map((p) => p.device.id),
      pairs.map((p) => p.device.orgId),
      pairs.map((p) => p.position),
      pairs.map((p) => p.ATR),
      pairs.map((p) => p.CUID),
      devices.map((d) => d.actor),
      devices.map((d) => d.sourceAddress),
      devices.map((d) => JSON.stringify({ externalIds: d.externalIds })),
      devices.map((d) => d.correlationId ?? null),
    ]);
  }

  /**
   * Inserts many single-pair devices in one statement (bulk import); a CUID taken meanwhile fails
   * the whole statement with the unique violation, and the caller retries.
   */
  async insertMany(orgId: string, devices: { id: string; ATR: string; CUID: string }[], now: Date, tx: Transaction): Promise<void> {
    if (devices.length === 0) return;
    await this.db.query(
      `WITH input AS (
         SELECT * FROM unnest($2::uuid[], $3::text[], $4::text[]) AS t(id, atr, cuid)
       ), inserted AS (
         INSERT INTO devices (id, org_id, status, reason, created_at, updated_at, version)
         SELECT id, $1::text, 'AVAILABLE', 'NONE', $5::timestamptz, $5::timestamptz, 1 FROM input
       )
       INSERT INTO device_external_ids (device_id, org_id, position, atr, cuid)
       SELECT id, $1::text, 1, atr, cuid FROM input`,
      [orgId, devices.map((d) => d.id), devices.map((d) => d.ATR), devices.map((d) => d.CUID), now],
      tx,
    );
  }

  /**
   * A device that is no card: a person's software authenticator (an authenticator app holding an OATH
   * TOTP secret they enrolled themselves, DECISIONS 14.4), ISSUED to them at once, with no {ATR, CUID}.
   */
  async insertIssuedSoftware(orgId: string, id: string, ownerId: string, now: Date, tx: Transaction): Promise<void> {
    await this.db.query(
      `INSERT INTO devices (id, org_id, status, reason, owner_user_id, issued_at, created_at, updated_at, version)
       VALUES ($1, $2, 'ISSUED', 'NONE', $3, $4, $4, $4, 1)`,
      [id, orgId, ownerId, now],
      tx,
    );
  }

  /** The owner's software authenticators (devices without {ATR, CUID}) in one of `statuses`, locked for the transaction. */
  async lockSoftwareOwnedBy(
    orgId: string,
    ownerId: string,
    statuses: readonly DeviceStatus[],
    tx: Transaction,
  ): Promise<{ id: string; status: DeviceStatus }[]> {
    return this.db.query(
      `SELECT d.id, d.status FROM devices d
        WHERE d.org_id = $1 AND d.owner_user_id = $2 AND d.status = ANY($3::text[])
          AND NOT EXISTS (SELECT 1 FROM device_external_ids e WHERE e.device_id = d.id)
        ORDER BY d.created_at, d.id FOR UPDATE`,
      [orgId, ownerId, statuses],
      tx,
    );
  }

  async softwareAmong(orgId: string, ids: readonly string[], tx?: Transaction): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.db.query<{ id: string }>(
      `SELECT d.id FROM devices d
        WHERE d.org_id = $1 AND d.id = ANY($2::uuid[]) AND NOT EXISTS (SELECT 1 FROM device_external_ids e WHERE e.device_id = d.id)`,
      [orgId, ids],
      tx,
    );
    return new Set(rows.map((row) => row.id));
  }

  async findExternalIds(orgId: string, cuids: string[], tx?: Transaction): Promise<StoredExternalId[]> {
    if (cuids.length === 0) return [];
    return this.db.query<StoredExternalId>(
      'SELECT device_id, atr, cuid FROM device_external_ids WHERE org_id = $1 AND cuid = ANY($2::text[])',
      [orgId, cuids],
      tx,
    );
  }

  async findById(orgId: string, id: string): Promise<DeviceRow | undefined> {
    const [row] = await this.db.query<DeviceRow>(FIND, [orgId, id]);
    return row;
  }

  /** Reads the device and locks its row until the transaction ends, so that moves of one device queue up. */
  async findForUpdate(orgId: string, id: string, tx: Transaction): Promise<DeviceRow | undefined> {
    const [row] = await this.db.query<DeviceRow>(
      `SELECT ${DEVICE_COLUMNS} FROM devices d LEFT JOIN users u ON u.id = d.owner_user_id WHERE d.org_id = $1 AND d.id = $2 FOR UPDATE OF d`,
      [orgId, id],
      tx,
    );
    return row;
  }

  /** Moves a locked device; answers the new status, reason, owner, dates and version. */
  async move(
    orgId: string,
    id: string,
    change: { status: DeviceStatus; reason: DeviceReason; clearOwner: boolean; setIssuedAt: boolean; now: Date; owner?: string },
    tx: Transaction,
  ): Promise<Pick<DeviceRow, 'status' | 'reason' | 'owner_user_id' | 'issued_at' | 'updated_at' | 'version'>> {
    const [row] = await this.db.query<Pick<DeviceRow, 'status' | 'reason' | 'owner_user_id' | 'issued_at' | 'updated_at' | 'version'>>(
      `UPDATE devices
          SET status = $3, reason = $4, updated_at = $5, version = version + 1,
              owner_user_id = CASE WHEN $6::boolean THEN NULL ELSE COALESCE($8::uuid, owner_user_id) END,
              issued_at = CASE WHEN $7::boolean THEN COALESCE(issued_at, $5) ELSE issued_at END
        WHERE org_id = $1 AND id = $2
        RETURNING status, reason, owner_user_id, issued_at, updated_at, version`,
      [orgId, id, change.status, change.reason, change.now, change.clearOwner, change.setIssuedAt, change.owner ?? null],
      tx,
    );
    return row;
  }

  /** The devices each of these users owns, oldest first. */
  async ownedBy(orgId: string, ownerIds: readonly string[]): Promise<Map<string, { id: string; status: DeviceStatus }[]>> {
    const owned = new Map<string, { id: string; status: DeviceStatus }[]>();
    if (ownerIds.length === 0) return owned;
    const rows = await this.db.query<{ id: string; status: DeviceStatus; owner_user_id: string }>(
      'SELECT id, status, owner_user_id FROM devices WHERE org_id = $1 AND owner_user_id = ANY($2::uuid[]) ORDER BY created_at, id',
      [orgId, ownerIds],
    );
    for (const row of rows) owned.set(row.owner_user_id, [...(owned.get(row.owner_user_id) ?? []), { id: row.id, status: row.status }]);
    return owned;
  }

  /** The owner's devices in one of `statuses`, locked for the transaction. */
  async lockOwnedBy(orgId: string, ownerId: string, statuses: readonly DeviceStatus[], tx: Transaction): Promise<{ id: string; status: DeviceStatus }[]> {
    return this.db.query<{ id: string; status: DeviceStatus }>(
      'SELECT id, status FROM devices WHERE org_id = $1 AND owner_user_id = $2 AND status = ANY($3::text[]) ORDER BY created_at, id FOR UPDATE',
      [orgId, ownerId, statuses],
      tx,
    );
  }

  /** Devices by status; `groups` limits to unowned devices and those of owners in the groups (Operator Dependent). */
  async countByStatus(orgId: string, groups: readonly string[] | undefined): Promise<Map<DeviceStatus, number>> {
    const rows =
      groups === undefined
        ? await this.db.query<{ status: DeviceStatus; n: number }>('SELECT status, count(*)::int AS n FROM devices WHERE org_id = $1 GROUP BY status', [orgId])
        : await this.db.query<{ status: DeviceStatus; n: number }>(
            `SELECT d.status, count(*)::int AS n FROM devices d LEFT JOIN users u ON u.id = d.owner_user_id
              WHERE d.org_id = $1 AND (d.owner_user_id IS NULL OR u.groups && $2::text[]) GROUP BY d.status`,
            [orgId, groups],
          );
    return new Map(rows.map((row) => [row.status, row.n]));
  }

  /** Every device a user owns, as answers show them (/Self/Device). */
  async findOwnedBy(orgId: string, ownerId: string): Promise<DeviceRow[]> {
    return this.db.query<DeviceRow>(
      `SELECT ${DEVICE_COLUMNS} FROM devices d LEFT JOIN users u ON u.id = d.owner_user_id WHERE d.org_id = $1 AND d.owner_user_id = $2 ORDER BY d.created_at, d.id`,
      [orgId, ownerId],
    );
  }

  /** A device as a content request targets it (status, owner, ATRs), locked for the transaction. */
  async lockTarget(
    orgId: string,
    id: string,
    tx: Transaction,
  ): Promise<{ id: string; status: DeviceStatus; owner_user_id: string | null; external_ids: ExternalId[] } | undefined> {
    const [row] = await this.db.query<{ id: string; status: DeviceStatus; owner_user_id: string | null; external_ids: ExternalId[] }>(
      `SELECT d.id, d.status, d.owner_user_id,
              COALESCE((SELECT json_agg(json_build_object('ATR', e.atr, 'CUID', e.cuid) ORDER BY e.position)
                          FROM device_external_ids e WHERE e.device_id = d.id), '[]'::json) AS external_ids
         FROM devices d WHERE d.org_id = $1 AND d.id = $2 FOR UPDATE`,
      [orgId, id],
      tx,
    );
    return row;
  }

  /** How many devices the user owns in one of `statuses`. */
  async countOwnedBy(orgId: string, ownerId: string, statuses: readonly DeviceStatus[], tx: Transaction): Promise<number> {
    const [row] = await this.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM devices WHERE org_id = $1 AND owner_user_id = $2 AND status = ANY($3::text[])',
      [orgId, ownerId, statuses],
      tx,
    );
    return row.n;
  }

  /** The devices a user owns that are not TERMINATED, locked for the transaction (a user delete asks). */
  async lockHeldBy(orgId: string, userId: string, tx: Transaction): Promise<{ id: string; status: DeviceStatus }[]> {
    return this.db.query<{ id: string; status: DeviceStatus }>(
      `SELECT id, status FROM devices WHERE org_id = $1 AND owner_user_id = $2 AND status <> 'TERMINATED' ORDER BY created_at, id FOR UPDATE`,
      [orgId, userId],
      tx,
    );
  }

  async delete(orgId: string, id: string, tx: Transaction): Promise<void> {
    await this.db.query('DELETE FROM devices WHERE org_id = $1 AND id = $2', [orgId, id], tx);
  }

  /**
   * A page of devices and the total matching, for `.search`. `groups` limits an Operator Dependent
   * caller to unowned devices and devices whose owner shares one of its groups.
   */
  async search(orgId: string, search: ScimSearch, groups: readonly string[] | undefined): Promise<{ rows: DeviceRow[]; total: number }> {
    const params = new SqlParameters([orgId]);
    const scope = groups === undefined ? 'TRUE' : `(d.owner_user_id IS NULL OR u.groups && ${params.add(groups)}::text[])`;
    const sql = searchSql(search, DEVICE_SEARCH_DEFINITION, params);
    const from = `FROM devices d LEFT JOIN users u ON u.id = d.owner_user_id WHERE d.org_id = $1 AND ${scope} AND ${sql.where}`;
    return this.db.searchPage<DeviceRow>(DEVICE_COLUMNS, from, { ...sql, ...search.page }, params.values);
  }
}
