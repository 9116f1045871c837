import { isoTimestamp } from '@app/common';
import { Organization } from '../organizations/organization.service';
import { CertificateRow } from '../certificates/certificate-store';
import { ListedSystemAccountRow, SecretMetadataRow, SystemAccountRow } from '../system-accounts/system-account.repository';
import { backchannelSettingsOf } from '../system-accounts/backchannel-settings';
import { IssuedSecret } from '../system-accounts/system-account.service';
import { UserRow } from '../users/user.repository';
import { OidcClientRow } from '../oidc-clients/oidc-client.repository';

/** Response shapes of /admin/v1 (DECISIONS 11): `id` and `meta` on every resource. */
export class AdminPresenter {
  constructor(
    private readonly baseUrl: string,
    private readonly tokenUrl: (orgId: string) => string,
  ) {}

  organization(org: Organization) {
    return {
      id: org.id,
      name: org.name,
      settings: org.settings,
      meta: {
        resourceType: 'Organization',
        created: isoTimestamp(org.created),
        lastModified: isoTimestamp(org.lastModified),
        location: `${this.baseUrl}/admin/v1/organizations/${org.id}`,
        version: String(org.version),
      },
    };
  }

  systemAccount(row: SystemAccountRow) {
    return {
      id: row.client_id,
      clientId: row.client_id,
      tokenUrl: this.tokenUrl(row.org_id),
      role: row.role,
      organizationAdministrator: row.organization_administrator,
      disabled: row.disabled,
      description: row.description,
      backchannelAuthentication: backchannelSettingsOf(row),
      // So that a client need not ask the oidc-client settings of an account that has none (a 404); a new account has none.
      oidcClient: row.oidc_client ?? false,
      meta: {
        resourceType: 'SystemAccount',
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        location: `${this.baseUrl}/admin/v1/organizations/${row.org_id}/system-accounts/${row.client_id}`,
        version: String(row.version),
      },
    };
  }

  /** A system account in the list: its attributes and the earliest expiry among its live credentials. */
  listedSystemAccount(row: ListedSystemAccountRow) {
    return {
      ...this.systemAccount(row),
      nearestCredentialExpiry: row.nearest_credential_expiry ? isoTimestamp(row.nearest_credential_expiry) : null,
    };
  }

  /** A system account's settings as an OpenID Connect client (DECISIONS 15.1). */
  oidcClient(org: string, clientId: string, row: OidcClientRow) {
    return {
      id: clientId,
      redirectUris: row.redirect_uris,
      postLogoutRedirectUris: row.post_logout_redirect_uris,
      publicClient: row.public_client,
      firstParty: row.first_party,
      refreshTokens: row.refresh_tokens,
      meta: {
        resourceType: 'OidcClient',
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        location: `${this.baseUrl}/admin/v1/organizations/${org}/system-accounts/${clientId}/oidc-client`,
        version: String(row.version),
      },
    };
  }

  issuedSecret(secret: IssuedSecret) {
    return { id: secret.id, value: secret.value, expiresAt: isoTimestamp(secret.expiresAt) };
  }

  secretMetadata(row: SecretMetadataRow) {
    return {
      id: row.id,
      created: isoTimestamp(row.created_at),
      expiresAt: isoTimestamp(row.expires_at),
      lastUsed: row.last_used_at ? isoTimestamp(row.last_used_at) : null,
    };
  }

  certificate(row: CertificateRow) {
    return {
      id: row.thumbprint,
      subject: row.subject,
      issuer: row.issuer,
      serialNumber: row.serial_number,
      notBefore: isoTimestamp(row.not_before),
      notAfter: isoTimestamp(row.not_after),
      expiresAt: isoTimestamp(row.expires_at),
      created: isoTimestamp(row.created_at),
    };
  }

  /**
   * A user (DECISIONS 11): never the password or its hash, only whether there is one. `lastSignIn`
   * on every answer of the admin API (DECISIONS 17.2): null when none is on record; the command
   * line's listing leaves it out.
   */
  user(row: UserRow, lastSignIn?: Date | null) {
    return {
      id: row.id,
      userName: row.user_name,
      userType: row.user_type,
      role: row.role,
      groups: row.groups,
      name: row.name,
      displayName: row.display_name,
      emails: row.emails,
      active: !row.disabled,
      organizationAdministrator: row.organization_administrator,
      platformAdministrator: row.platform_administrator,
      hasPassword: row.has_password,
      certificates: row.certificate_thumbprints,
      ...(lastSignIn === undefined ? {} : { lastSignIn: lastSignIn ? isoTimestamp(lastSignIn) : null }),
      meta: {
        resourceType: 'User',
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        location: `${this.baseUrl}/admin/v1/organizations/${row.org_id}/users/${row.id}`,
        version: String(row.version),
      },
    };
  }
}
