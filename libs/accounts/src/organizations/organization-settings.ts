import { z } from '@app/common';

/** Per-organization settings (DECISIONS 11 `PUT /organizations/{org}/settings`). */
export const organizationSettingsSchema = z
  .object({
    automaticDeviceCreation: z.boolean(),
    applicationIdPolicy: z.enum(['any', 'certified']),
    passwordGrant: z.boolean().optional(),
    passwordOnlySignIn: z.boolean().optional(),
    passwordlessSignIn: z.boolean().optional(),
    accessTokenLifetime: z.number().int().min(300).max(86400).nullable().optional(),
  })
  .strict();

export interface OrganizationSettings {
  automaticDeviceCreation: boolean;
  applicationIdPolicy: 'any' | 'certified';
  passwordGrant: boolean;
  /**
   * The hosted login page lets a cardholder who holds no OATH TOTP credential sign in with the
   * password alone (amr `pwd`); off by default. Operators and administrators always need the
   * one-time code or a smart card (DECISIONS 14.1). Turning it off ends the sessions opened with the
   * password alone (DECISIONS 14.2).
   */
  passwordOnlySignIn: boolean;
  /**
   * The hosted login page offers "Sign in with a passkey" on its first page: a discoverable passkey
   * with user verification, alone (amr `hwk`, `user`); off by default (DECISIONS 14.5). Passkeys as
   * the second step after the password work whatever this says.
   */
  passwordlessSignIn: boolean;
  /** Seconds; null means the service default ACCESS_TOKEN_LIFETIME_S. */
  accessTokenLifetime: number | null;
}

export const DEFAULT_SETTINGS: OrganizationSettings = {
  automaticDeviceCreation: false,
  applicationIdPolicy: 'any',
  passwordGrant: true,
  passwordOnlySignIn: false,
  passwordlessSignIn: false,
  accessTokenLifetime: null,
};

export function withDefaults(stored: Partial<OrganizationSettings> | null | undefined): OrganizationSettings {
  return { ...DEFAULT_SETTINGS, ...(stored ?? {}) };
}
