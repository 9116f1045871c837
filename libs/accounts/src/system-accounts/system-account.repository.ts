import { Injectable } from '@nestjs/common';

import { Database, PG_FOREIGN_KEY_VIOLATION, PG_UNIQUE_VIOLATION, Transaction, isPgError } from '@app/persistence';
import { notFound, uniqueness } from '@app/common';
import { CertificateRow, addCertificate } from '../certificates/certificate-store';
import { ParsedCertificate } from './certificate-parser';
import { BackchannelSettings, TokenDeliveryMode } from './backchannel-settings';

const ACCOUNT_CERTIFICATES = { ownerTable: 'system_accounts', table: 'client_certificates', ownerColumn: 'account_id', ownerLabel: 'system account' } as const;

export interface SystemAccountRow {
  id: string;
  org_id: string;
  client_id: string;
  role: string;
  description: string | null;
  organization_administrator: boolean;
  platform_administrator: boolean;
  disabled: boolean;
  /** CIBA (DECISIONS 16): null when the account is not enabled for it. */
  backchannel_token_delivery_mode: TokenDeliveryMode | null;
  backchannel_client_notification_endpoint: string | null;
  created_at: Date;
  updated_at: Date;
  version: number;
  /**
   * Whether it is set up as an OpenID Connect client (DECISIONS 15.1): read with the account by
   * findInOrg, listInOrg and update; absent from a row just created (never set up yet).
   */
  oidc_client?: boolean;
}

/** An account as listed: with the earliest expiry among its live secrets and certificates, null when none. */
export interface ListedSystemAccountRow extends SystemAccountRow {
  nearest_credential_expiry: Date | null;
}

/** A change of an account through the admin API; `backchannel` undefined keeps, null disables CIBA. */
export interface SystemAccountChanges {
  role?: string;
  description?: string | null;
  disabled?: boolean;
  organizationAdministrator?: boolean;
  backchannel?: BackchannelSettings | null;
}

export interface StoredSecret {
  id: string;
  hash: Buffer;
  expires_at: Date;
}

export interface SecretMetadataRow {
  id: string;
  created_at: Date;
  expires_at: Date;
  last_used_at: Date | null;
}

/**
 * System accounts and their credentials, for administration. What client authentication reads
 * (secret hashes, certificates) is in libs/auth ClientCredentialRepository, in one statement.
 */
@Injectable()
export class SystemAccountRepository {
  constructor(private readonly db: Database) {}

  async create(
    row: {
      id: string;
      orgId: string;
      clientId: string;
      role: string;
      description: string | null;
      organizationAdministrator: boolean;
      platformAdministrator: boolean;
      backchannel?: BackchannelSettings | null;
      now: Date;
    },
    tx?: Transaction,
  ): Promise<SystemAccountRow> {
    try {
      const [created] = await this.db.query<SystemAccountRow>(
        `INSERT INTO system_accounts (id, org_id, client_id, role, description, organization_administrator, platform_administrator,
                                      backchannel_token_delivery_mode, backchannel_client_notification_endpoint, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $9, $10, $8, $8) RETURNING *`,
        [
          row.id,
          row.orgId,
          row.clientId,
          row.role,
          row.description,
          row.organizationAdministrator,
          row.platformAdministrator,
          row.now,
          row.backchannel?.tokenDeliveryMode ?? null,
          row.backchannel?.clientNotificationEndpoint ?? null,
        ],
        tx,
      );
      return created;
    } catch (error) {
      if (isPgError(error, PG_UNIQUE_VIOLATION)) throw uniqueness(`A system account with Client ID "${row.clientId}" already exists.`);
      // The organization was deleted between the access check and this insert.
      if (isPgError(error, PG_FOREIGN_KEY_VIOLATION)) throw notFound(`Organization "${row.orgId}" does not exist.`);
      throw error;
    }
  }

  async findInOrg(orgId: string, clientId: string): Promise<SystemAccountRow | undefined> {
    const [row] = await this.db.query<SystemAccountRow>(
      `SELECT a.*, EXISTS (SELECT 1 FROM oidc_clients c WHERE c.account_id = a.id) AS oidc_client
         FROM system_accounts a WHERE a.org_id = $1 AND a.client_id = $2`,
      [orgId, clientId],
    );
    return row;
  }

  /** Locks the account's row for the transaction; answers what the grant rules compare (DECISIONS 5.3). */
  async lockInOrg(orgId: string, clientId: string, tx: Transaction): Promise<{ id: string; role: string } | undefined> {
    const [row] = await this.db.query<{ id: string; role: string }>(
      'SELECT id, role FROM system_accounts WHERE org_id = $1 AND client_id = $2 FOR UPDATE',
      [orgId, clientId],
      tx,
    );
    return row;
  }

  /**
   * A page of the organization's accounts, each with the earliest expiry among its live credentials
   * (secrets and certificates not yet expired at `now`; a certificate ends at its registration's
   * expiry or its own notAfter, whichever is first), or null when it has none.
   */
  async listInOrg(orgId: string, offset: number, limit: number, now: Date): Promise<{ rows: ListedSystemAccountRow[]; total: number }> {
    const rows = await this.db.query<ListedSystemAccountRow & { total: string }>(
      `SELECT a.*, count(*) OVER () AS total,
              LEAST(
                (SELECT min(s.expires_at) FROM client_secrets s WHERE s.account_id = a.id AND s.expires_at > $4),
                (SELECT min(LEAST(c.expires_at, c.not_after)) FROM client_certificates c WHERE c.account_id = a.id AND LEAST(c.expires_at, c.not_after) > $4)
              ) AS nearest_credential_expiry,
              EXISTS (SELECT 1 FROM oidc_clients o WHERE o.account_id = a.id) AS oidc_client
         FROM system_accounts a WHERE a.org_id = $1 ORDER BY a.client_id OFFSET $2 LIMIT $3`,
      [orgId, offset, limit, now],
    );
    // An empty page (count=0, or past the end) has no row to carry the window count.
    if (rows.length === 0) {
      const [count] = await this.db.query<{ n: string }>('SELECT count(*) AS n FROM system_accounts WHERE org_id = $1', [orgId]);
      return { rows: [], total: Number(count.n) };
    }
    return { rows, total: rows.length > 0 ? Number(rows[0].total) : 0 };
  }

  /**
   * Applies the changes under the row lock and says whether they re-enabled a disabled account: the
   * service then revokes every token it still has, in the same transaction (those tokens were
   * stopped by the disabled flag, and re-enabling must not bring them back, DECISIONS 4); the
   * account gets new tokens. Disabling itself revokes nothing, so that a refused token still says "disabled".
   */
  async update(
    orgId: string,
    clientId: string,
    changes: SystemAccountChanges,
    now: Date,
    tx?: Transaction,
  ): Promise<(SystemAccountRow & { reenabled: boolean }) | undefined> {
    const [row] = await this.db.query<SystemAccountRow & { reenabled: boolean }>(
      `WITH before AS (
         SELECT id, disabled FROM system_accounts WHERE org_id = $1 AND client_id = $2 FOR UPDATE
       ), changed AS (
         UPDATE system_accounts a
            SET role = COALESCE($3, a.role),
                description = CASE WHEN $4::boolean THEN $5::text ELSE a.description END,
                disabled = COALESCE($6, a.disabled),
                organization_administrator = COALESCE($7, a.organization_administrator),
                backchannel_token_delivery_mode = CASE WHEN $9::boolean THEN $10::text ELSE a.backchannel_token_delivery_mode END,
                backchannel_client_notification_endpoint = CASE WHEN $9::boolean THEN $11::text ELSE a.backchannel_client_notification_endpoint END,
                updated_at = $8, version = a.version + 1
           FROM before WHERE a.id = before.id
         RETURNING a.*, before.disabled AS was_disabled
       )
       SELECT id, org_id, client_id, role, description, organization_administrator, platform_administrator, disabled,
              backchannel_token_delivery_mode, backchannel_client_notification_endpoint, created_at, updated_at, version,
              was_disabled AND NOT disabled AS reenabled,
              EXISTS (SELECT 1 FROM oidc_clients o WHERE o.account_id = changed.id) AS oidc_client
         FROM changed`,
      [
        orgId,
        clientId,
        changes.role ?? null,
        changes.description !== undefined,
        changes.description ?? null,
        changes.disabled ?? null,
        changes.organizationAdministrator ?? null,
        now,
        changes.backchannel !== undefined,
        changes.backchannel?.tokenDeliveryMode ?? null,
        changes.backchannel?.clientNotificationEndpoint ?? null,
      ],
      tx,
    );
    return row;
  }

  /** Deletes the account; its secrets, certificates, tokens and assertion jtis go with it (ON DELETE CASCADE). */
  async delete(orgId: string, clientId: string, tx?: Transaction): Promise<SystemAccountRow | undefined> {
    const [row] = await this.db.query<SystemAccountRow>('DELETE FROM system_accounts WHERE org_id = $1 AND client_id = $2 RETURNING *', [orgId, clientId], tx);
    return row;
  }

  async addSecret(secret: { id: string; accountId: string; hash: Buffer; now: Date; expiresAt: Date }, tx?: Transaction): Promise<void> {
    try {
      await this.db.query(
        'INSERT INTO client_secrets (id, account_id, hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)',
        [secret.id, secret.accountId, secret.hash, secret.now, secret.expiresAt],
        tx,
      );
    } catch (error) {
      // The account was deleted between its lookup and this insert.
      if (isPgError(error, PG_FOREIGN_KEY_VIOLATION)) throw notFound('The system account no longer exists.');
      throw error;
    }
  }

  /** Deletes one secret of the account; false when the account has no secret with this id. */
  async deleteSecret(accountId: string, secretId: string, tx?: Transaction): Promise<boolean> {
    const rows = await this.db.query('DELETE FROM client_secrets WHERE account_id = $1 AND id = $2 RETURNING 1', [accountId, secretId], tx);
    return rows.length > 0;
  }

  async listSecrets(accountId: string): Promise<SecretMetadataRow[]> {
    return this.db.query<SecretMetadataRow>('SELECT id, created_at, expires_at, last_used_at FROM client_secrets WHERE account_id = $1 ORDER BY created_at', [
      accountId,
    ]);
  }

  /** Adds a certificate to the account; the rules are those of addCertificate (one place for both owners). */
  addCertificate(accountId: string, certificate: ParsedCertificate, now: Date, expiresAt: Date, tx: Transaction): Promise<CertificateRow> {
    return addCertificate(this.db, ACCOUNT_CERTIFICATES, accountId, certificate, now, expiresAt, tx);
  }

  /** Deletes one certificate of the account by its x5t#S256 thumbprint; undefined when it has none such. */
  async deleteCertificate(accountId: string, thumbprint: string, tx?: Transaction): Promise<CertificateRow | undefined> {
    const [row] = await this.db.query<CertificateRow>(
      `DELETE FROM client_certificates WHERE account_id = $1 AND thumbprint = $2
       RETURNING thumbprint, subject, issuer, serial_number, not_before, not_after, expires_at, created_at`,
      [accountId, thumbprint],
      tx,
    );
    return row;
  }

  async listCertificates(accountId: string): Promise<CertificateRow[]> {
    return this.db.query<CertificateRow>(
      `SELECT thumbprint, subject, issuer, serial_number, not_before, not_after, expires_at, created_at
         FROM client_certificates WHERE account_id = $1 ORDER BY created_at`,
      [accountId],
    );
  }
}
