import { isoTimestamp } from '@app/common';
import { DeviceRow } from './device.repository';
import { DEVICE_RESOURCE_PATH, DEVICE_SCHEMA, ExternalId } from './device.schema';
import { DeviceReason, DeviceStatus } from './lifecycle/device-lifecycle';

export interface DeviceResource {
  [attribute: string]: unknown;
  id: string;
  schemas: string[];
  externalIds: ExternalId[];
  status: { status: DeviceStatus; reason: DeviceReason };
  owner?: { value: string; display: string | null; $ref: string; type: 'User' };
  issuanceDate?: string;
  meta: { resourceType: 'Device'; created: string; lastModified: string; location: string; version: string };
}

/** The Device resource as every answer shows it (interface "Device resource"; DECISIONS 8). */
export class DevicePresenter {
  constructor(private readonly baseUrl: string) {}

  /** `{PUBLIC_BASE_URL}/aims/rs/scim/v2/Device/{id}`: the Location header and meta.location. */
  location(id: string): string {
    return `${this.baseUrl}${DEVICE_RESOURCE_PATH}/${id}`;
  }

  device(row: DeviceRow): DeviceResource {
    return {
      id: row.id,
      schemas: [DEVICE_SCHEMA],
      externalIds: row.external_ids,
      status: { status: row.status, reason: row.reason },
      ...(row.owner_user_id
        ? {
            owner: {
              value: row.owner_user_id,
              display: row.owner_user_name,
              $ref: `${this.baseUrl}/aims/rs/scim/v2/Users/${row.owner_user_id}`,
              type: 'User' as const,
            },
          }
        : {}),
      ...(row.issued_at ? { issuanceDate: isoTimestamp(row.issued_at) } : {}),
      meta: {
        resourceType: 'Device',
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        location: this.location(row.id),
        version: String(row.version),
      },
    };
  }
}
