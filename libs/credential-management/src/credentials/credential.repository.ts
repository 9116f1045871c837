import { Injectable } from '@nestjs/common';
import type { DeviceContent } from '@app/device';
import { Database, Transaction, prepared } from '@app/persistence';
import { CredentialType } from '../device-policies/device-policy.schema';
import { CertificateSummary, CredentialStatus } from './credential.schema';

export interface CredentialRow {
  id: string;
  org_id: string;
  type: CredentialType | 'FIDO2';
  status: CredentialStatus;
  device_id: string;
  wallet_id: string | null;
  content_request_id: string | null;
  certificate_serial: string | null;
  certificate: CertificateSummary | null;
  oath_digits: number | null;
  oath_period: number | null;
  revocation_reason: string | null;
  expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
  version: number;
  /** The wallet owner: whose credential it is (their authenticators are told of its changes, DECISIONS 10.6). */
  owner_user_id: string | null;
  /** The wallet owner's userName and groups (display; Operator Dependent reach). */
  owner_user_name: string | null;
  owner_groups: string[] | null;
}

export interface NewCredential {
  id: string;
  org_id: string;
  type: CredentialType | 'FIDO2';
  status: CredentialStatus;
  device_id: string;
  wallet_id: string | null;
  /** The content request that issued it; null for a credential a person enrolled themselves (DECISIONS 14.4). */
  content_request_id: string | null;
  certificate_serial: string | null;
  certificate: CertificateSummary | null;
  oath_key_id: string | null;
  oath_secret: Buffer | null;
  oath_digits: number | null;
  oath_period: number | null;
  /** The last accepted time step: set when the code that confirmed a self-enrolled TOTP must not sign in again. */
  oath_last_step?: number | null;
  /** The name its person gave it (a passkey's, at registration; DECISIONS 14.6); null shows the type's default name. */
  name?: string | null;
  expires_at: Date | null;
  created_at: Date;
}

const COLUMNS = `c.id, c.org_id, c.type, c.status, c.device_id, c.wallet_id, c.content_request_id, c.certificate_serial, c.certificate,
  c.oath_digits, c.oath_period, c.revocation_reason, c.expires_at, c.created_at, c.updated_at, c.version, w.owner_user_id, o.user_name AS owner_user_name,
  o.groups AS owner_groups`;
const FROM = 'FROM credentials c LEFT JOIN wallets w ON w.id = c.wallet_id LEFT JOIN users o ON o.id = w.owner_user_id';

/**
 * What devices carry (DECISIONS 8): the credentials their holder's wallet holds on them; a recycle (or
 * the wallet's deletion with its user) takes them out of the wallet, and off the device. The device
 * policy a device shows is that of the request that issued its newest credential: the last in
 * ON_DEVICES' order, the first in NEWEST_FIRST's.
 */
const CARRIED = 'c.wallet_id IS NOT NULL';
const ON_DEVICES = prepared(
  'credentials_on_devices',
  `SELECT c.device_id, c.id, c.type, c.status, r.device_policy_id
     FROM credentials c LEFT JOIN content_requests r ON r.id = c.content_request_id
    WHERE c.org_id = $1 AND c.device_id = ANY($2::uuid[]) AND ${CARRIED}
    ORDER BY c.device_id, c.created_at, c.type, c.id`,
);
const NEWEST_FIRST = 'c.created_at DESC, c.type DESC, c.id DESC';

/** Credentials: what a completed content request put on a device; OATH secrets only sealed. */
@Injectable()
export class CredentialRepository {
  constructor(private readonly db: Database) {}

  async insert(rows: readonly NewCredential[], tx: Transaction): Promise<void> {
    for (const row of rows) {
      await this.db.query(
        `INSERT INTO credentials (id, org_id, type, status, device_id, wallet_id, content_request_id, certificate_serial, certificate,
                                  oath_key_id, oath_secret, oath_digits, oath_period, oath_last_step, name, expires_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, $11, $12, $13, $16, $17, $14, $15, $15)`,
        [
          row.id,
          row.org_id,
          row.type,
          row.status,
          row.device_id,
          row.wallet_id,
          row.content_request_id,
          row.certificate_serial,
          row.certificate && JSON.stringify(row.certificate),
          row.oath_key_id,
          row.oath_secret,
          row.oath_digits,
          row.oath_period,
          row.expires_at,
          row.created_at,
          row.oath_last_step ?? null,
          row.name ?? null,
        ],
        tx,
      );
    }
  }

  async find(orgId: string, id: string): Promise<CredentialRow | undefined> {
    const [row] = await this.db.query<CredentialRow>(`SELECT ${COLUMNS} ${FROM} WHERE c.org_id = $1 AND c.id = $2`, [orgId, id]);
    return row;
  }

  async findMany(orgId: string, ids: readonly string[]): Promise<CredentialRow[]> {
    if (ids.length === 0) return [];
    return this.db.query<CredentialRow>(`SELECT ${COLUMNS} ${FROM} WHERE c.org_id = $1 AND c.id = ANY($2::uuid[]) ORDER BY c.created_at, c.id`, [orgId, ids]);
  }

  /** The device's credentials in one of `statuses`, locked for the transaction. */
  async lockOfDevice(orgId: string, deviceId: string, statuses: readonly CredentialStatus[], tx: Transaction): Promise<CredentialRow[]> {
    return this.db.query<CredentialRow>(
      `SELECT ${COLUMNS} ${FROM} WHERE c.org_id = $1 AND c.device_id = $2 AND c.status = ANY($3::text[]) ORDER BY c.created_at, c.id FOR UPDATE OF c`,
      [orgId, deviceId, statuses],
      tx,
    );
  }

  /** The credentials of these certificates in one of `statuses`, locked for the transaction (one statement, however many). */
  async lockOfCertificates(orgId: string, serials: readonly string[], statuses: readonly CredentialStatus[], tx: Transaction): Promise<CredentialRow[]> {
    if (serials.length === 0) return [];
    return this.db.query<CredentialRow>(
      `SELECT ${COLUMNS} ${FROM} WHERE c.org_id = $1 AND c.certificate_serial = ANY($2::text[]) AND c.status = ANY($3::text[]) ORDER BY c.created_at, c.id FOR UPDATE OF c`,
      [orgId, serials, statuses],
      tx,
    );
  }

  /** Moves credentials to `status` (REVOKED with its RFC 5280 reason); `leaveWallet` takes them out of their wallet (recycle). */
  async setStatus(
    orgId: string,
    ids: readonly string[],
    change: { status: CredentialStatus; reason?: string | null; leaveWallet?: boolean; now: Date },
    tx: Transaction,
  ): Promise<void> {
    if (ids.length === 0) return;
    await this.db.query(
      `UPDATE credentials SET status = $3, revocation_reason = CASE WHEN $3 = 'REVOKED' THEN COALESCE(revocation_reason, $4) ELSE NULL END,
              wallet_id = CASE WHEN $5::boolean THEN NULL ELSE wallet_id END, updated_at = $6, version = version + 1
        WHERE org_id = $1 AND id = ANY($2::uuid[])`,
      [orgId, ids, change.status, change.reason ?? null, change.leaveWallet ?? false, change.now],
      tx,
    );
  }

  /**
   * What each of these devices carries, in one statement (libs/device's DeviceContents asks for a
   * device or a page of them): its credentials, and the device policy it was issued under, that of
   * the request that issued its newest credential (an update's, once it superseded the issuance's).
   */
  async onDevices(orgId: string, deviceIds: readonly string[]): Promise<Map<string, DeviceContent>> {
    const carried = new Map<string, { policyId: string | null; credentials: { id: string; type: string; status: string }[] }>();
    const rows = await this.db.query<{ device_id: string; id: string; type: CredentialType; status: CredentialStatus; device_policy_id: string | null }>(
      ON_DEVICES,
      [orgId, deviceIds],
    );
    for (const row of rows) {
      const content = carried.get(row.device_id) ?? { policyId: null, credentials: [] };
      content.policyId = row.device_policy_id;
      content.credentials.push({ id: row.id, type: row.type, status: row.status });
      carried.set(row.device_id, content);
    }
    return carried;
  }

  /**
   * How many devices show this device policy (their newest credential was issued under it): a policy
   * in use by a device is not deleted (CREDENTIAL-MANAGEMENT.md "Reference data").
   */
  async countDevicesShowingPolicy(orgId: string, policyId: string, tx: Transaction): Promise<number> {
    const [row] = await this.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (
         SELECT DISTINCT ON (c.device_id) r.device_policy_id
           FROM credentials c LEFT JOIN content_requests r ON r.id = c.content_request_id
          WHERE c.org_id = $1 AND ${CARRIED}
            AND c.device_id IN (SELECT issued.device_id FROM content_requests issued
                                 WHERE issued.org_id = $1 AND issued.device_policy_id = $2 AND issued.status = 'completed')
          ORDER BY c.device_id, ${NEWEST_FIRST}
       ) newest WHERE newest.device_policy_id = $2`,
      [orgId, policyId],
      tx,
    );
    return row.n;
  }

  /** The ids and statuses of the credentials in each wallet, oldest first (a wallet lists them). */
  async inWallets(orgId: string, walletIds: readonly string[]): Promise<Map<string, { id: string; status: CredentialStatus; type: CredentialType }[]>> {
    const held = new Map<string, { id: string; status: CredentialStatus; type: CredentialType }[]>();
    if (walletIds.length === 0) return held;
    const rows = await this.db.query<{ id: string; status: CredentialStatus; type: CredentialType; wallet_id: string }>(
      'SELECT id, status, type, wallet_id FROM credentials WHERE org_id = $1 AND wallet_id = ANY($2::uuid[]) ORDER BY created_at, type, id',
      [orgId, walletIds],
    );
    for (const row of rows) held.set(row.wallet_id, [...(held.get(row.wallet_id) ?? []), { id: row.id, status: row.status, type: row.type }]);
    return held;
  }

  /** Credentials by status (Stats); `groups` limits to wallets whose owner shares one of them. */
  async countByStatus(orgId: string, groups: readonly string[] | undefined): Promise<Map<CredentialStatus, number>> {
    const rows =
      groups === undefined
        ? await this.db.query<{ status: CredentialStatus; n: number }>('SELECT status, count(*)::int AS n FROM credentials WHERE org_id = $1 GROUP BY status', [
            orgId,
          ])
        : await this.db.query<{ status: CredentialStatus; n: number }>(
            `SELECT c.status, count(*)::int AS n ${FROM} WHERE c.org_id = $1 AND o.groups && $2::text[] GROUP BY c.status`,
            [orgId, groups],
          );
    return new Map(rows.map((row) => [row.status, row.n]));
  }
}
