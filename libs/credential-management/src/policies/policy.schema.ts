import { z } from '@app/common';

/** The key algorithms a CSR may use (CREDENTIAL-MANAGEMENT.md "PKI": EC P-256/P-384, RSA 2048/3072/4096). */
export const KEY_ALGORITHMS = ['EC-P256', 'EC-P384', 'RSA-2048', 'RSA-3072', 'RSA-4096'] as const;
export type KeyAlgorithm = (typeof KEY_ALGORITHMS)[number];

export const POLICY_KINDS = ['credential', 'wallet'] as const;
export type PolicyKind = (typeof POLICY_KINDS)[number];

const unique = <T>(list: T[]) => new Set(list).size === list.length;

/** CredentialPolicy (global): lifetimes and algorithms of what goes on cards. */
export const credentialPolicySchema = z
  .object({
    certificateLifetimeDays: z
      .number({ message: 'must be a whole number of days' })
      .int('must be a whole number of days')
      .min(1, 'must be at least 1')
      .max(1825, 'must be at most 1825 (5 years)')
      .optional(),
    keyAlgorithms: z
      .array(z.enum(KEY_ALGORITHMS, { message: `must be one of ${KEY_ALGORITHMS.join(', ')}` }), {
        message: `must be an array of ${KEY_ALGORITHMS.join(', ')}`,
      })
      .min(1, 'must allow at least one algorithm')
      .refine(unique, 'must not list an algorithm twice')
      .optional(),
    oathDigits: z.union([z.literal(6), z.literal(8)], { message: 'must be 6 or 8' }).optional(),
    oathPeriod: z.union([z.literal(30), z.literal(60)], { message: 'must be 30 or 60 (seconds)' }).optional(),
    revokeOnTerminate: z.boolean({ message: 'must be true or false' }).optional(),
  })
  .strict();

/** WalletPolicy (global): how many devices a wallet holds, and whether cardholders may resume their own. */
export const walletPolicySchema = z
  .object({
    maxDevicesPerWallet: z
      .number({ message: 'must be a whole number' })
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(20, 'must be at most 20')
      .optional(),
    allowSelfService: z.boolean({ message: 'must be true or false' }).optional(),
  })
  .strict();

export type CredentialPolicy = Required<z.infer<typeof credentialPolicySchema>>;
export type WalletPolicy = Required<z.infer<typeof walletPolicySchema>>;

/** What applies before any administrator PUT (CREDENTIAL-MANAGEMENT.md "Resources"). */
export const POLICY_DEFAULTS: { credential: CredentialPolicy; wallet: WalletPolicy } = {
  credential: {
    certificateLifetimeDays: 365,
    keyAlgorithms: ['EC-P256', 'EC-P384', 'RSA-3072', 'RSA-4096'],
    oathDigits: 6,
    oathPeriod: 30,
    revokeOnTerminate: true,
  },
  wallet: { maxDevicesPerWallet: 3, allowSelfService: true },
};

export const POLICY_SCHEMAS = { credential: credentialPolicySchema, wallet: walletPolicySchema } as const;

/** The SCIM resource name and schema URN of each policy. */
export const POLICY_RESOURCES = {
  credential: { resourceType: 'CredentialPolicy', schema: 'urn:vendor:scim:api:cms:1.0:CredentialPolicy', adminPath: 'credential-policy' },
  wallet: { resourceType: 'WalletPolicy', schema: 'urn:vendor:scim:api:cms:1.0:WalletPolicy', adminPath: 'wallet-policy' },
} as const;
