import { CANONICAL_PREFIX, isoTimestamp } from '@app/common';
import { DevicePolicyRow } from './device-policy.repository';
import { DEVICE_POLICY_SCHEMA } from './device-policy.schema';

/** The DevicePolicy resource, on the SCIM routes and the admin API alike (its location is its SCIM path). */
export class DevicePolicyPresenter {
  constructor(private readonly baseUrl: string) {}

  policy(row: DevicePolicyRow) {
    return {
      schemas: [DEVICE_POLICY_SCHEMA],
      id: row.id,
      name: row.name,
      ...(row.description ? { description: row.description } : {}),
      deviceTypes: row.device_types,
      credentialTypes: row.credential_types,
      groups: row.group_ids.map((id, index) => ({
        value: id,
        display: row.group_names[index] ?? null,
        $ref: `${this.baseUrl}${CANONICAL_PREFIX}/Groups/${id}`,
      })),
      requiresApproval: row.requires_approval,
      activationRequired: row.activation_required,
      meta: {
        resourceType: 'DevicePolicy',
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        location: `${this.baseUrl}${CANONICAL_PREFIX}/DevicePolicy/${row.id}`,
        version: String(row.version),
      },
    };
  }
}
