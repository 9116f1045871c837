import { CANONICAL_PREFIX, isoTimestamp } from '@app/common';
import { WALLET_SCHEMA } from './wallet.schema';
import { WalletView } from './wallet.service';

/** The Wallet resource (CREDENTIAL-MANAGEMENT.md "Resources"): its owner's devices and the credentials it holds. */
export class WalletPresenter {
  constructor(private readonly baseUrl: string) {}

  wallet({ row, devices, credentials }: WalletView) {
    return {
      schemas: [WALLET_SCHEMA],
      id: row.id,
      owner: { value: row.owner_user_id, display: row.owner_user_name, $ref: `${this.baseUrl}${CANONICAL_PREFIX}/Users/${row.owner_user_id}`, type: 'User' },
      status: row.status,
      devices: devices.map((device) => ({
        value: device.id,
        display: device.status,
        $ref: `${this.baseUrl}${CANONICAL_PREFIX}/Device/${device.id}`,
        type: 'Device',
      })),
      credentials: credentials.map((credential) => ({
        value: credential.id,
        display: `${credential.type} ${credential.status}`,
        $ref: `${this.baseUrl}${CANONICAL_PREFIX}/Credential/${credential.id}`,
        type: 'Credential',
      })),
      ...(row.notes ? { notes: row.notes } : {}),
      meta: {
        resourceType: 'Wallet',
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        location: `${this.baseUrl}${CANONICAL_PREFIX}/Wallet/${row.id}`,
        version: String(row.version),
      },
    };
  }
}
