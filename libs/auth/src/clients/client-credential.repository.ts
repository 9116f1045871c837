import { Injectable } from '@nestjs/common';
import { OrganizationSettings, StoredCertificate, SystemAccountRow, StoredSecret, withDefaults } from '@app/accounts';
import { Database, prepared } from '@app/persistence';

export interface FailureCounter {
  key: string;
  failures: number;
  window_started_at: Date;
}

export interface ClientCredentials<C> {
  /** Lockout counters of the (client, address) pair and of the address, within the window. */
  failures: FailureCounter[];
  /** Undefined when no account has this Client ID. */
  account?: { account: SystemAccountRow; orgSettings: OrganizationSettings; credentials: C[] };
}

interface Row {
  failures: { key: string; failures: number; window_started_at: string }[] | null;
  account: (SystemAccountRow & { org_settings: Partial<OrganizationSettings> }) | null;
  credentials: Record<string, unknown>[] | null;
}

const ACCOUNT_COLUMNS = `json_build_object(
    'id', a.id, 'org_id', a.org_id, 'client_id', a.client_id, 'role', a.role, 'description', a.description,
    'organization_administrator', a.organization_administrator, 'platform_administrator', a.platform_administrator,
    'disabled', a.disabled, 'backchannel_token_delivery_mode', a.backchannel_token_delivery_mode,
    'backchannel_client_notification_endpoint', a.backchannel_client_notification_endpoint, 'created_at', a.created_at, 'updated_at', a.updated_at, 'version', a.version,
    'org_settings', o.settings)`;
const FAILURES = `(SELECT json_agg(json_build_object('key', f.key, 'failures', f.failures, 'window_started_at', f.window_started_at))
    FROM auth_failures f WHERE f.key = ANY($2) AND f.window_started_at > $3)`;

// One statement, one row even for an unknown Client ID: the counters always come back.
const WITH_SECRETS = prepared(
  'client-credentials-secrets',
  `SELECT ${FAILURES} AS failures, acct.account, acct.credentials
     FROM (SELECT 1) AS one
     LEFT JOIN LATERAL (
       SELECT ${ACCOUNT_COLUMNS} AS account,
              (SELECT json_agg(json_build_object('id', s.id, 'hash', encode(s.hash, 'hex'), 'expires_at', s.expires_at))
                 FROM client_secrets s WHERE s.account_id = a.id) AS credentials
         FROM system_accounts a JOIN organizations o ON o.id = a.org_id
        WHERE a.client_id = $1
     ) AS acct ON true`,
);
const WITH_CERTIFICATES = prepared(
  'client-credentials-certificates',
  `SELECT ${FAILURES} AS failures, acct.account, acct.credentials
     FROM (SELECT 1) AS one
     LEFT JOIN LATERAL (
       SELECT ${ACCOUNT_COLUMNS} AS account,
              (SELECT json_agg(json_build_object('thumbprint', c.thumbprint, 'pem', c.pem, 'not_before', c.not_before,
                                                 'not_after', c.not_after, 'expires_at', c.expires_at))
                 FROM client_certificates c WHERE c.account_id = a.id) AS credentials
         FROM system_accounts a JOIN organizations o ON o.id = a.org_id
        WHERE a.client_id = $1
     ) AS acct ON true`,
);

/**
 * What client authentication reads, in one round trip per token request (the token endpoint's hot
 * path): the lockout counters, the account with its organization's settings, and its secret hashes
 * or certificates. Every read of secret material is in this file.
 */
@Injectable()
export class ClientCredentialRepository {
  constructor(private readonly db: Database) {}

  async findWithSecretHashes(clientId: string, failureKeys: string[], windowStart: Date): Promise<ClientCredentials<StoredSecret>> {
    const [row] = await this.db.query<Row>(WITH_SECRETS, [clientId, failureKeys, windowStart]);
    return read(row, (s) => ({ id: s.id as string, hash: Buffer.from(s.hash as string, 'hex'), expires_at: new Date(s.expires_at as string) }));
  }

  async findWithCertificates(clientId: string, failureKeys: string[], windowStart: Date): Promise<ClientCredentials<StoredCertificate>> {
    const [row] = await this.db.query<Row>(WITH_CERTIFICATES, [clientId, failureKeys, windowStart]);
    return read(row, (c) => ({
      thumbprint: c.thumbprint as string,
      pem: c.pem as string,
      not_before: new Date(c.not_before as string),
      not_after: new Date(c.not_after as string),
      expires_at: new Date(c.expires_at as string),
    }));
  }
}

function read<C>(row: Row, credential: (raw: Record<string, unknown>) => C): ClientCredentials<C> {
  const failures = (row.failures ?? []).map((f) => ({ key: f.key, failures: f.failures, window_started_at: new Date(f.window_started_at) }));
  if (!row.account) return { failures };
  const { org_settings: orgSettings, ...account } = row.account;
  return {
    failures,
    account: {
      account: { ...account, created_at: new Date(account.created_at), updated_at: new Date(account.updated_at) },
      orgSettings: withDefaults(orgSettings),
      credentials: (row.credentials ?? []).map(credential),
    },
  };
}
