import { z } from '@app/common';

/** Per-organization settings (DECISIONS 11 `PUT /organizations/{org}/settings`). */
export const organizationSettingsSchema = z
  .object({
    automaticDeviceCreation: z.boolean(),
    applicationIdPolicy: z.enum(['any', 'certified']),
    passwordGrant: z.boolean().optional(),
    accessTokenLifetime: z.number().int().min(300).max(86400).nullable().optional(),
  })
  .strict();

export interface OrganizationSettings {
  automaticDeviceCreation: boolean;
  applicationIdPolicy: 'any' | 'certified';
  passwordGrant: boolean;
  /** Seconds; null means the service default ACCESS_TOKEN_LIFETIME_S. */
  accessTokenLifetime: number | null;
}

export const DEFAULT_SETTINGS: OrganizationSettings = {
  automaticDeviceCreation: false,
  applicationIdPolicy: 'any',
  passwordGrant: true,
  accessTokenLifetime: null,
};

export function withDefaults(stored: Partial<OrganizationSettings> | null | undefined): OrganizationSettings {
  return { ...DEFAULT_SETTINGS, ...(stored ?? {}) };
}
