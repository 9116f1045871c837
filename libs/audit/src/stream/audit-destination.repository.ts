import { Injectable } from '@nestjs/common';
import type { SealedValue } from '@app/common';
import { Database, Transaction } from '@app/persistence';

export type DestinationType = 'syslog' | 'webhook';

/** A destination as administrators read it: never its secret or client key. */
export interface DestinationRow {
  id: string;
  org_id: string | null;
  name: string;
  type: DestinationType;
  url: string | null;
  host: string | null;
  port: number | null;
  enabled: boolean;
  ca_certificate: string | null;
  client_certificate: string | null;
  created_at: Date;
  updated_at: Date;
  version: number;
}

/** A destination with its sealed secrets, for the sender and for a change that keeps them. */
export interface DestinationSecretRow extends DestinationRow {
  secret: SealedValue | null;
  clientKey: SealedValue | null;
}

export interface DestinationFields {
  name: string;
  url: string | null;
  host: string | null;
  port: number | null;
  enabled: boolean;
  caCertificate: string | null;
  clientCertificate: string | null;
  clientKey: SealedValue | null;
}

const COLUMNS = `id::text AS id, org_id, name, type, url, host, port, enabled, ca_certificate, client_certificate, created_at, updated_at, version`;
const SECRET_COLUMNS = `${COLUMNS}, secret_key_id, secret_sealed, client_key_key_id, client_key_sealed`;

type SecretColumns = DestinationRow & {
  secret_key_id: string | null;
  secret_sealed: Buffer | null;
  client_key_key_id: string | null;
  client_key_sealed: Buffer | null;
};

function withSecrets({ secret_key_id, secret_sealed, client_key_key_id, client_key_sealed, ...row }: SecretColumns): DestinationSecretRow {
  return {
    ...row,
    secret: secret_key_id && secret_sealed ? { keyId: secret_key_id, sealed: secret_sealed } : null,
    clientKey: client_key_key_id && client_key_sealed ? { keyId: client_key_key_id, sealed: client_key_sealed } : null,
  };
}

/** `org_id = $n`, or `org_id IS NULL` for the platform's destinations. */
const sameOrg = (placeholder: string) => `org_id IS NOT DISTINCT FROM ${placeholder}::text`;

/** SQL of the audit stream's destinations (DECISIONS 11.4); `orgId` null is the platform's. */
@Injectable()
export class AuditDestinationRepository {
  constructor(private readonly db: Database) {}

  page(orgId: string | null, startIndex: number, count: number): Promise<{ rows: DestinationRow[]; total: number }> {
    return this.db.searchPage<DestinationRow>(
      COLUMNS,
      `FROM audit_destinations WHERE ${sameOrg('$1')}`,
      { orderBy: 'id', limit: '$2', offset: '$3', count, startIndex },
      [orgId, count, startIndex - 1],
    );
  }

  async find(orgId: string | null, id: string, tx?: Transaction): Promise<DestinationRow | undefined> {
    const [row] = await this.db.query<DestinationRow>(`SELECT ${COLUMNS} FROM audit_destinations WHERE ${sameOrg('$1')} AND id = $2`, [orgId, id], tx);
    return row;
  }

  /** One destination with its sealed secrets, locked for the change of `tx`. */
  async findWithSecretsForUpdate(orgId: string | null, id: string, tx: Transaction): Promise<DestinationSecretRow | undefined> {
    const [row] = await this.db.query<SecretColumns>(
      `SELECT ${SECRET_COLUMNS} FROM audit_destinations WHERE ${sameOrg('$1')} AND id = $2 FOR UPDATE`,
      [orgId, id],
      tx,
    );
    return row && withSecrets(row);
  }

  async findWithSecrets(orgId: string | null, id: string): Promise<DestinationSecretRow | undefined> {
    const [row] = await this.db.query<SecretColumns>(`SELECT ${SECRET_COLUMNS} FROM audit_destinations WHERE ${sameOrg('$1')} AND id = $2`, [orgId, id]);
    return row && withSecrets(row);
  }

  /** The sender's read: the destinations of claimed rows, with their sealed secrets. */
  async findManyWithSecrets(ids: readonly string[]): Promise<DestinationSecretRow[]> {
    const rows = await this.db.query<SecretColumns>(`SELECT ${SECRET_COLUMNS} FROM audit_destinations WHERE id = ANY($1::bigint[])`, [ids]);
    return rows.map(withSecrets);
  }

  /** The next id, so that the secrets can be sealed to it before the row exists. */
  async nextId(tx: Transaction): Promise<string> {
    const [row] = await this.db.query<{ id: string }>(`SELECT nextval(pg_get_serial_sequence('audit_destinations', 'id'))::text AS id`, [], tx);
    return row.id;
  }

  async insert(
    orgId: string | null,
    id: string,
    type: DestinationType,
    fields: DestinationFields,
    secret: SealedValue | null,
    now: Date,
    tx: Transaction,
  ): Promise<DestinationRow> {
    const [row] = await this.db.query<DestinationRow>(
      `INSERT INTO audit_destinations (id, org_id, name, type, url, host, port, enabled, ca_certificate, client_certificate, client_key_key_id, client_key_sealed,
                                       secret_key_id, secret_sealed, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15)
       RETURNING ${COLUMNS}`,
      [
        id,
        orgId,
        fields.name,
        type,
        fields.url,
        fields.host,
        fields.port,
        fields.enabled,
        fields.caCertificate,
        fields.clientCertificate,
        fields.clientKey?.keyId ?? null,
        fields.clientKey?.sealed ?? null,
        secret?.keyId ?? null,
        secret?.sealed ?? null,
        now,
      ],
      tx,
    );
    return row;
  }

  async update(id: string, fields: DestinationFields, now: Date, tx: Transaction): Promise<DestinationRow> {
    const [row] = await this.db.query<DestinationRow>(
      `UPDATE audit_destinations
          SET name = $2, url = $3, host = $4, port = $5, enabled = $6, ca_certificate = $7, client_certificate = $8,
              client_key_key_id = $9, client_key_sealed = $10, updated_at = $11, version = version + 1
        WHERE id = $1
       RETURNING ${COLUMNS}`,
      [
        id,
        fields.name,
        fields.url,
        fields.host,
        fields.port,
        fields.enabled,
        fields.caCertificate,
        fields.clientCertificate,
        fields.clientKey?.keyId ?? null,
        fields.clientKey?.sealed ?? null,
        now,
      ],
      tx,
    );
    return row;
  }

  /** Deletes the destination; its deliveries go with it (ON DELETE CASCADE). */
  async delete(id: string, tx: Transaction): Promise<void> {
    await this.db.query('DELETE FROM audit_destinations WHERE id = $1', [id], tx);
  }

  /**
   * A batch of destinations with a secret sealed with a key other than `currentKeyId` (all
   * organizations and the platform: re-sealing after a key rotation is a service task), by id after `afterId`.
   */
  async findSealedWithOtherKey(currentKeyId: string, afterId: string, limit: number): Promise<DestinationSecretRow[]> {
    const rows = await this.db.query<SecretColumns>(
      `SELECT ${SECRET_COLUMNS} FROM audit_destinations
        WHERE (secret_key_id <> $1 OR client_key_key_id <> $1) AND id > $2::bigint ORDER BY id LIMIT $3`,
      [currentKeyId, afterId, limit],
    );
    return rows.map(withSecrets);
  }

  /**
   * Replaces one sealed field by the same value sealed with another key, only if it is still the one
   * that was read (a change meanwhile wins). The resource does not change: no new version.
   */
  async reseal(id: string, field: 'secret' | 'clientKey', from: SealedValue, to: SealedValue): Promise<boolean> {
    const [keyColumn, sealedColumn] = field === 'secret' ? ['secret_key_id', 'secret_sealed'] : ['client_key_key_id', 'client_key_sealed'];
    const rows = await this.db.query(
      `UPDATE audit_destinations SET ${keyColumn} = $4, ${sealedColumn} = $5
        WHERE id = $1 AND ${keyColumn} = $2 AND ${sealedColumn} = $3 RETURNING id`,
      [id, from.keyId, from.sealed, to.keyId, to.sealed],
    );
    return rows.length > 0;
  }
}
