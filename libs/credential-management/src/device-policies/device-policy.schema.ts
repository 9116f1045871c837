import { ScimResourceDefinition, z, metaAttribute, UUID_PATTERN } from '@app/common';

export const DEVICE_POLICY_SCHEMA = 'urn:vendor:scim:api:cms:1.0:DevicePolicy';
export const CREDENTIAL_TYPES = ['PKI_CERTIFICATE', 'OATH_TOTP', 'OATH_HOTP', 'STATIC_PASSWORD'] as const;
export type CredentialType = (typeof CREDENTIAL_TYPES)[number];

const unique = (list: string[]) => new Set(list).size === list.length;
const name = z.string({ message: 'must be a string' }).trim().min(1, 'must not be empty').max(128, 'must be at most 128 characters');
const deviceTypes = z
  .array(z.string({ message: 'must be a string' }).trim().min(1, 'must not be empty').max(64, 'must be at most 64 characters'), {
    message: 'must be an array of device type names',
  })
  .max(50, 'must list at most 50 device types')
  .refine(unique, 'must not list a device type twice');
const credentialTypes = z
  .array(z.enum(CREDENTIAL_TYPES, { message: `must be one of ${CREDENTIAL_TYPES.join(', ')}` }), {
    message: `must be an array of ${CREDENTIAL_TYPES.join(', ')}`,
  })
  .min(1, 'must name at least one credential type')
  .refine(unique, 'must not list a credential type twice');
const groups = z
  .array(z.string({ message: 'must be a group id' }).regex(UUID_PATTERN, 'must be the id of a group (a UUID)'), { message: 'must be an array of group ids' })
  .max(100, 'must list at most 100 groups')
  .refine((list) => unique(list.map((id) => id.toLowerCase())), 'must not list a group twice');
const flag = z.boolean({ message: 'must be true or false' });

/**
 * POST .../device-policies (CREDENTIAL-MANAGEMENT.md "Resources"): deviceTypes absent or empty means
 * any device, groups empty means every user; credentialTypes default to PKI_CERTIFICATE.
 */
export const createDevicePolicySchema = z
  .object({
    name,
    description: z.string({ message: 'must be a string' }).max(500, 'must be at most 500 characters').nullable().optional(),
    deviceTypes: deviceTypes.optional(),
    credentialTypes: credentialTypes.optional(),
    groups: groups.optional(),
    requiresApproval: flag.optional(),
    activationRequired: flag.optional(),
  })
  .strict();

/** PATCH: what is sent changes; `description: null` clears it. */
export const patchDevicePolicySchema = createDevicePolicySchema.partial().strict();

export type NewDevicePolicy = z.infer<typeof createDevicePolicySchema>;
export type DevicePolicyChanges = z.infer<typeof patchDevicePolicySchema>;

/** What `.search` may filter and sort on; `dp` is the device_policies row. */
export const DEVICE_POLICY_SEARCH_DEFINITION: ScimResourceDefinition = {
  schema: DEVICE_POLICY_SCHEMA,
  uniqueOrder: 'dp.id',
  defaultOrder: 'lower(dp.name)',
  attributes: {
    id: { type: 'string', column: 'dp.id::text', returned: 'always' },
    name: { type: 'string', column: 'dp.name' },
    description: { type: 'string', column: 'dp.description' },
    deviceTypes: {
      type: 'complex',
      multiValued: { exists: (condition) => `EXISTS (SELECT 1 FROM unnest(dp.device_types) AS dt(value) WHERE ${condition})` },
      subAttributes: { value: { type: 'string', column: 'dt.value' } },
    },
    credentialTypes: {
      type: 'complex',
      multiValued: { exists: (condition) => `EXISTS (SELECT 1 FROM unnest(dp.credential_types) AS ct(value) WHERE ${condition})` },
      subAttributes: { value: { type: 'string', column: 'ct.value' } },
    },
    groups: {
      type: 'complex',
      multiValued: { exists: (condition) => `EXISTS (SELECT 1 FROM unnest(dp.group_ids) AS gi(value) WHERE ${condition})` },
      subAttributes: { value: { type: 'string', column: 'gi.value::text' }, display: { type: 'string' }, $ref: { type: 'string' } },
    },
    requiresApproval: { type: 'boolean', column: 'dp.requires_approval' },
    activationRequired: { type: 'boolean', column: 'dp.activation_required' },
    meta: metaAttribute('dp'),
  },
};
