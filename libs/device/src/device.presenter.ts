import { CANONICAL_PREFIX, isoTimestamp } from '@app/common';
import { DeviceView } from './device-contents';
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
  policy?: { value: string; $ref: string };
  credentials?: { value: string; $ref: string; type: string; status: string }[];
  meta: { resourceType: 'Device'; created: string; lastModified: string; location: string; version: string };
}

/** The Device resource as every answer shows it (interface "Device resource"; DECISIONS 8). */
export class DevicePresenter {
  constructor(private readonly baseUrl: string) {}

  /** `{PUBLIC_BASE_URL}/aims/rs/scim/v2/Device/{id}`: the Location header and meta.location. */
  location(id: string): string {
    return `${this.baseUrl}${DEVICE_RESOURCE_PATH}/${id}`;
  }

  /** `policy` and `credentials` appear once the device carries them, as `owner` and `issuanceDate` do. */
  device({ row, content }: DeviceView): DeviceResource {
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
      ...(content.policyId ? { policy: { value: content.policyId, $ref: `${this.baseUrl}${CANONICAL_PREFIX}/DevicePolicy/${content.policyId}` } } : {}),
      ...(content.credentials.length > 0
        ? {
            credentials: content.credentials.map((credential) => ({
              value: credential.id,
              $ref: `${this.baseUrl}${CANONICAL_PREFIX}/Credential/${credential.id}`,
              type: credential.type,
              status: credential.status,
            })),
          }
        : {}),
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
