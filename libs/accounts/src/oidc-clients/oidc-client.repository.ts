import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '@app/persistence';
import { OrganizationSettings, withDefaults } from '../organizations/organization-settings';

export interface OidcClientRow {
  account_id: string;
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  public_client: boolean;
  first_party: boolean;
  refresh_tokens: boolean;
  created_at: Date;
  updated_at: Date;
  version: number;
}

export interface OidcClientSettings {
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  publicClient: boolean;
  firstParty: boolean;
  refreshTokens: boolean;
}

/** A system account as an OpenID Connect client: the account's state and its settings, read together. */
export interface OidcClient {
  accountId: string;
  org: string;
  clientId: string;
  disabled: boolean;
  settings: OidcClientRow;
  /** The organization's settings, read with it: what the client's tokens need (their lifetime) without another read. */
  orgSettings: OrganizationSettings;
}

/** The settings of system accounts that use the authorization code flow (DECISIONS 15.1). */
@Injectable()
export class OidcClientRepository {
  constructor(private readonly db: Database) {}

  async find(accountId: string, tx?: Transaction): Promise<OidcClientRow | undefined> {
    const [row] = await this.db.query<OidcClientRow>('SELECT * FROM oidc_clients WHERE account_id = $1', [accountId], tx);
    return row;
  }

  /** The client by its Client ID within an organization, with its account's state; undefined when the account has no settings. */
  async findByClientId(orgId: string, clientId: string): Promise<OidcClient | undefined> {
    const [row] = await this.db.query<
      OidcClientRow & { org_id: string; client_id: string; disabled: boolean; org_settings: Partial<OrganizationSettings> | null }
    >(
      `SELECT c.*, a.org_id, a.client_id, a.disabled, o.settings AS org_settings
         FROM oidc_clients c JOIN system_accounts a ON a.id = c.account_id JOIN organizations o ON o.id = a.org_id
        WHERE a.org_id = $1 AND a.client_id = $2`,
      [orgId, clientId],
    );
    if (!row) return undefined;
    const { org_id, client_id, disabled, org_settings, ...settings } = row;
    return { accountId: settings.account_id, org: org_id, clientId: client_id, disabled, settings, orgSettings: withDefaults(org_settings) };
  }

  /** Creates or replaces the settings (PUT); the version grows by one on each replace. */
  async upsert(accountId: string, settings: OidcClientSettings, now: Date, tx: Transaction): Promise<OidcClientRow> {
    const [row] = await this.db.query<OidcClientRow>(
      `INSERT INTO oidc_clients (account_id, redirect_uris, post_logout_redirect_uris, public_client, first_party, refresh_tokens, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
       ON CONFLICT (account_id) DO UPDATE SET
         redirect_uris = EXCLUDED.redirect_uris,
         post_logout_redirect_uris = EXCLUDED.post_logout_redirect_uris,
         public_client = EXCLUDED.public_client,
         first_party = EXCLUDED.first_party,
         refresh_tokens = EXCLUDED.refresh_tokens,
         updated_at = EXCLUDED.updated_at,
         version = oidc_clients.version + 1
       RETURNING *`,
      [accountId, settings.redirectUris, settings.postLogoutRedirectUris, settings.publicClient, settings.firstParty, settings.refreshTokens, now],
      tx,
    );
    return row;
  }

  async delete(accountId: string, tx: Transaction): Promise<boolean> {
    const rows = await this.db.query('DELETE FROM oidc_clients WHERE account_id = $1 RETURNING 1', [accountId], tx);
    return rows.length > 0;
  }
}
