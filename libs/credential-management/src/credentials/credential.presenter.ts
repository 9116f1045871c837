import { CANONICAL_PREFIX, isoTimestamp } from '@app/common';
import { CredentialRow } from './credential.repository';
import { CREDENTIAL_SCHEMA } from './credential.schema';

/** The Credential resource (CREDENTIAL-MANAGEMENT.md "Resources"): read-only, never its OATH secret. */
export class CredentialPresenter {
  constructor(private readonly baseUrl: string) {}

  location(id: string): string {
    return `${this.baseUrl}${CANONICAL_PREFIX}/Credential/${id}`;
  }

  credential(row: CredentialRow) {
    return {
      schemas: [CREDENTIAL_SCHEMA],
      id: row.id,
      type: row.type,
      status: row.status,
      device: { value: row.device_id, $ref: `${this.baseUrl}${CANONICAL_PREFIX}/Device/${row.device_id}`, type: 'Device' },
      ...(row.wallet_id
        ? { wallet: { value: row.wallet_id, display: row.owner_user_name, $ref: `${this.baseUrl}${CANONICAL_PREFIX}/Wallet/${row.wallet_id}`, type: 'Wallet' } }
        : {}),
      ...(row.certificate ? { certificate: row.certificate } : {}),
      ...(row.oath_digits ? { oath: { digits: row.oath_digits, period: row.oath_period } } : {}),
      ...(row.revocation_reason ? { revocationReason: row.revocation_reason } : {}),
      ...(row.expires_at ? { expiresAt: isoTimestamp(row.expires_at) } : {}),
      meta: {
        resourceType: 'Credential',
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        location: this.location(row.id),
        version: String(row.version),
      },
    };
  }
}
