import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '@app/persistence';
import { SealedValue } from '@app/common';
import { GatewayType, MessageTemplates } from './push-gateway.schema';

/** A gateway as stored, without its connection string (reads never need it). */
export interface PushGatewayRow {
  id: string;
  org_id: string;
  type: GatewayType;
  name: string;
  is_default: boolean;
  hub: string | null;
  notification_ttl_s: number;
  supported_operating_systems: string[];
  app_id: string | null;
  notes: string | null;
  message_templates: MessageTemplates;
  created_at: Date;
  updated_at: Date;
  version: number;
}

/** A gateway with its sealed connection string: only for create and replace, whose answers echo it. */
export interface PushGatewaySecretRow extends PushGatewayRow {
  connectionString: SealedValue | null;
}

/** The configurable columns, as written on create and on a replace. */
export interface PushGatewayFields {
  name: string;
  hub: string | null;
  connectionString: SealedValue | null;
  notificationTtlS: number;
  supportedOperatingSystems: string[];
  appId: string | null;
  notes: string | null;
  messageTemplates: MessageTemplates;
}

const COLUMNS = `id, org_id, type, name, is_default, hub, notification_ttl_s, supported_operating_systems, app_id, notes,
  message_templates, created_at, updated_at, version`;
const SECRET_COLUMNS = `${COLUMNS}, connection_string_key_id, connection_string_sealed`;

type SecretRow = PushGatewayRow & { connection_string_key_id: string | null; connection_string_sealed: Buffer | null };

/** SQL of the push delivery gateways; every statement is scoped to one organization (DECISIONS 2). */
@Injectable()
export class PushGatewayRepository {
  constructor(private readonly db: Database) {}

  async list(orgId: string): Promise<PushGatewayRow[]> {
    return this.db.query<PushGatewayRow>(`SELECT ${COLUMNS} FROM push_delivery_gateways WHERE org_id = $1 ORDER BY id`, [orgId]);
  }

  async findById(orgId: string, id: string, tx?: Transaction): Promise<PushGatewayRow | undefined> {
    const [row] = await this.db.query<PushGatewayRow>(`SELECT ${COLUMNS} FROM push_delivery_gateways WHERE org_id = $1 AND id = $2`, [orgId, id], tx);
    return row;
  }

  /** The gateway with its sealed connection string. */
  async findWithConnectionString(orgId: string, id: string): Promise<PushGatewaySecretRow | undefined> {
    const [row] = await this.db.query<SecretRow>(`SELECT ${SECRET_COLUMNS} FROM push_delivery_gateways WHERE org_id = $1 AND id = $2`, [orgId, id]);
    return row && withSecret(row);
  }

  /**
   * The gateways the organizations' authenticator policies bind, in priority order (policy by
   * policy, oldest first, then each policy's order), with their sealed connection strings: what the
   * sender picks an authenticator's gateway from (DECISIONS 10.1).
   */
  async findBoundWithConnectionStrings(orgIds: string[]): Promise<PushGatewaySecretRow[]> {
    const rows = await this.db.query<SecretRow>(
      `SELECT g.id::text AS id, g.org_id, g.type, g.name, g.is_default, g.hub, g.notification_ttl_s, g.supported_operating_systems, g.app_id,
              g.notes, g.message_templates, g.created_at, g.updated_at, g.version, g.connection_string_key_id, g.connection_string_sealed
         FROM authenticator_policy_gateways b JOIN push_delivery_gateways g ON g.org_id = b.org_id AND g.id = b.gateway_id
        WHERE b.org_id = ANY($1::text[])
        ORDER BY b.org_id, b.policy_id, b.position`,
      [orgIds],
    );
    return rows.map(withSecret);
  }

  /** Locks the gateway row until the transaction ends (delete: no binding may appear meanwhile). */
  async lock(orgId: string, id: string, tx: Transaction): Promise<PushGatewayRow | undefined> {
    const [row] = await this.db.query<PushGatewayRow>(
      `SELECT ${COLUMNS} FROM push_delivery_gateways WHERE org_id = $1 AND id = $2 FOR UPDATE`,
      [orgId, id],
      tx,
    );
    return row;
  }

  /** The id the next gateway will have: the connection string is sealed to it before the insert. */
  async nextId(tx: Transaction): Promise<string> {
    const [row] = await this.db.query<{ id: string }>(`SELECT nextval(pg_get_serial_sequence('push_delivery_gateways', 'id'))::text AS id`, [], tx);
    return row.id;
  }

  async insert(orgId: string, id: string, type: GatewayType, fields: PushGatewayFields, now: Date, tx: Transaction): Promise<PushGatewaySecretRow> {
    const [row] = await this.db.query<SecretRow>(
      `INSERT INTO push_delivery_gateways (id, org_id, type, name, hub, connection_string_key_id, connection_string_sealed, notification_ttl_s,
              supported_operating_systems, app_id, notes, message_templates, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13)
       RETURNING ${SECRET_COLUMNS}`,
      [id, orgId, type, ...fieldValues(fields), now],
      tx,
    );
    return withSecret(row);
  }

  /**
   * Writes a replace only if the row is still at `expectedVersion` (optimistic concurrency: of two
   * writers that read the same version, exactly one succeeds). Undefined when it was not.
   */
  async updateIfVersion(
    orgId: string,
    id: string,
    expectedVersion: number,
    fields: PushGatewayFields,
    now: Date,
    tx: Transaction,
  ): Promise<PushGatewaySecretRow | undefined> {
    const [row] = await this.db.query<SecretRow>(
      `UPDATE push_delivery_gateways
          SET name = $4, hub = $5, connection_string_key_id = $6, connection_string_sealed = $7, notification_ttl_s = $8,
              supported_operating_systems = $9, app_id = $10, notes = $11, message_templates = $12, updated_at = $13, version = version + 1
        WHERE org_id = $1 AND id = $2 AND version = $3
        RETURNING ${SECRET_COLUMNS}`,
      [orgId, id, expectedVersion, ...fieldValues(fields), now],
      tx,
    );
    return row && withSecret(row);
  }

  async delete(orgId: string, id: string, tx: Transaction): Promise<void> {
    await this.db.query('DELETE FROM push_delivery_gateways WHERE org_id = $1 AND id = $2', [orgId, id], tx);
  }

  /**
   * A batch of connection strings sealed with a key other than `currentKeyId` (all organizations:
   * the re-sealing after a key rotation is a service task), by id after `afterId`.
   */
  async findSealedWithOtherKey(currentKeyId: string, afterId: string, limit: number): Promise<{ id: string; org_id: string; connectionString: SealedValue }[]> {
    const rows = await this.db.query<{ id: string; org_id: string; key_id: string; sealed: Buffer }>(
      `SELECT id, org_id, connection_string_key_id AS key_id, connection_string_sealed AS sealed FROM push_delivery_gateways
        WHERE connection_string_key_id <> $1 AND id > $2 ORDER BY id LIMIT $3`,
      [currentKeyId, afterId, limit],
    );
    return rows.map((row) => ({ id: row.id, org_id: row.org_id, connectionString: { keyId: row.key_id, sealed: row.sealed } }));
  }

  /**
   * Replaces a sealed connection string by the same value sealed with another key, only if it is
   * still the one that was read (a replace meanwhile wins). The resource does not change: no new version.
   */
  async reseal(orgId: string, id: string, from: SealedValue, to: SealedValue): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE push_delivery_gateways SET connection_string_key_id = $5, connection_string_sealed = $6
        WHERE org_id = $1 AND id = $2 AND connection_string_key_id = $3 AND connection_string_sealed = $4 RETURNING id`,
      [orgId, id, from.keyId, from.sealed, to.keyId, to.sealed],
    );
    return rows.length > 0;
  }

  /**
   * Which of `ids` are gateways of the organization, with their names, locked against deletion until
   * the transaction ends (FOR KEY SHARE, as the binding's foreign key would), for a policy's bindings.
   */
  async lockForBinding(orgId: string, ids: string[], tx: Transaction): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db.query<{ id: string; name: string }>(
      'SELECT id::text AS id, name FROM push_delivery_gateways WHERE org_id = $1 AND id = ANY($2::bigint[]) FOR KEY SHARE',
      [orgId, ids],
      tx,
    );
    return new Map(rows.map((row) => [row.id, row.name]));
  }
}

function fieldValues(fields: PushGatewayFields): unknown[] {
  return [
    fields.name,
    fields.hub,
    fields.connectionString?.keyId ?? null,
    fields.connectionString?.sealed ?? null,
    fields.notificationTtlS,
    fields.supportedOperatingSystems,
    fields.appId,
    fields.notes,
    JSON.stringify(fields.messageTemplates),
  ];
}

function withSecret(row: SecretRow): PushGatewaySecretRow {
  const { connection_string_key_id: keyId, connection_string_sealed: sealed, ...rest } = row;
  return { ...rest, connectionString: keyId && sealed ? { keyId, sealed } : null };
}
