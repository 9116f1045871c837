import { SCIM_CORE_USER_SCHEMA, UserRow } from '@app/accounts';
import { CANONICAL_PREFIX, isoTimestamp } from '@app/common';
import { CMS_USER_SCHEMA, ENTERPRISE_USER_SCHEMA, USER_PERMISSION_SCHEMA } from './user.schema';

/** What the presenter needs beside the user row: ids owned by this library (wallet, groups). */
export interface UserLinks {
  walletId: string | undefined;
  groupIds: ReadonlyMap<string, string>;
}

/**
 * The User resource (CREDENTIAL-MANAGEMENT.md "Resources", "Users"; RFC 7643 4.1): both schema URNs,
 * the enterprise extension when the user has one, the UserPermission extension on operators. Never a
 * password or its hash. Location is always the canonical path.
 */
export class UserPresenter {
  constructor(private readonly baseUrl: string) {}

  location(id: string): string {
    return `${this.baseUrl}${CANONICAL_PREFIX}/Users/${id}`;
  }

  user(row: UserRow, links: UserLinks): Record<string, unknown> {
    const profile = row.profile ?? {};
    const enterprise = profile.enterprise;
    const operator = row.user_type === 'operator';
    return {
      schemas: [SCIM_CORE_USER_SCHEMA, CMS_USER_SCHEMA, ...(enterprise ? [ENTERPRISE_USER_SCHEMA] : []), ...(operator ? [USER_PERMISSION_SCHEMA] : [])],
      id: row.id,
      ...(row.external_id ? { externalId: row.external_id } : {}),
      userName: row.user_name,
      ...(row.name ? { name: row.name } : {}),
      ...(row.display_name ? { displayName: row.display_name } : {}),
      ...(profile.nickName ? { nickName: profile.nickName } : {}),
      ...(profile.title ? { title: profile.title } : {}),
      ...(profile.preferredLanguage ? { preferredLanguage: profile.preferredLanguage } : {}),
      ...(profile.locale ? { locale: profile.locale } : {}),
      ...(profile.timezone ? { timezone: profile.timezone } : {}),
      userType: row.user_type,
      active: !row.disabled,
      emails: row.emails,
      ...(profile.phoneNumbers?.length ? { phoneNumbers: profile.phoneNumbers } : {}),
      ...(profile.addresses?.length ? { addresses: profile.addresses } : {}),
      groups: row.groups.map((name) => {
        const id = links.groupIds.get(name);
        return { value: id ?? null, display: name, ...(id ? { $ref: `${this.baseUrl}${CANONICAL_PREFIX}/Groups/${id}` } : {}), type: 'direct' };
      }),
      roles: [{ value: row.role, primary: true }],
      ...(row.certificate_pems.length > 0 ? { x509Certificates: row.certificate_pems.map((pem) => ({ value: derOf(pem) })) } : {}),
      ...(links.walletId
        ? { wallet: { value: links.walletId, display: row.user_name, $ref: `${this.baseUrl}${CANONICAL_PREFIX}/Wallet/${links.walletId}`, type: 'Wallet' } }
        : {}),
      ...(enterprise ? { [ENTERPRISE_USER_SCHEMA]: enterprise } : {}),
      ...(operator ? { [USER_PERMISSION_SCHEMA]: { roles: [row.role], groups: row.groups } } : {}),
      meta: {
        resourceType: 'User',
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        location: this.location(row.id),
        version: String(row.version),
      },
    };
  }
}

/** Base64 DER of a PEM certificate (RFC 7643 4.1.2 x509Certificates). */
function derOf(pem: string): string {
  return pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
}
