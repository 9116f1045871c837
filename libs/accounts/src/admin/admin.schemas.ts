import { ORG_ID_PATTERN, z } from '@app/common';
import { organizationSettingsSchema } from '../organizations/organization-settings';
import { redirectUriProblem } from '../oidc-clients/redirect-uri';
import { backchannelSettingsSchema } from '../system-accounts/backchannel-settings';

/**
 * Request bodies of the admin API (DECISIONS 11), validated with parseBody: one definition for the
 * HTTP API, its OpenAPI description and the command line, so the three cannot disagree.
 */

// Organizations
export const createOrganizationSchema = z
  .object({
    id: z.string().regex(ORG_ID_PATTERN, 'must be 1-64 characters of A-Z, a-z, 0-9 and _ (no hyphen: it separates organization and suffix in a Client ID)'),
    name: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
    settings: organizationSettingsSchema.partial().optional(),
  })
  .strict();

export const patchOrganizationSchema = z
  .object({
    name: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters').optional(),
    settings: organizationSettingsSchema.partial().optional(),
  })
  .strict();

// System accounts and secrets
const accountRole = z.string().trim().min(1, 'must name a role of scopeAssignment.properties').max(64, 'must be at most 64 characters');
const description = z.string().max(500, 'must be at most 500 characters').nullable();

export const createAccountSchema = z
  .object({
    suffix: z
      .string()
      .regex(/^[A-Za-z0-9]{1,64}$/, 'must be 1-64 letters or digits (A-Z, a-z, 0-9)')
      .optional(),
    role: accountRole,
    organizationAdministrator: z.boolean().optional(),
    description: description.optional(),
    backchannelAuthentication: backchannelSettingsSchema.optional(),
  })
  .strict();

export const patchAccountSchema = z
  .object({
    role: accountRole.optional(),
    description: description.optional(),
    disabled: z.boolean().optional(),
    organizationAdministrator: z.boolean().optional(),
    backchannelAuthentication: backchannelSettingsSchema.optional(),
  })
  .strict();

export const createSecretSchema = z
  .object({ expiresAt: z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time, e.g. 2030-01-31T00:00:00Z' }).optional() })
  .strict();

// Users
const userName = z
  .string({ message: 'must be a string' })
  .regex(/^[A-Za-z0-9._@-]{1,128}$/, 'must be 1-128 characters of A-Z, a-z, 0-9, ".", "_", "@" and "-"');
const userType = z.enum(['operator', 'cardholder'], { message: 'must be "operator" or "cardholder"' });
/** The roles of the shipped scopeAssignment.properties, named in the role's errors for whoever has not read it. */
const SHIPPED_ROLES = 'Administration, Help Desk, Issuance or Cardholder in the shipped mapping; GET /admin/v1/roles lists the loaded ones';
const role = z
  .string({ message: `must be a string naming a role (${SHIPPED_ROLES})` })
  .trim()
  .min(1, `must name a role of scopeAssignment.properties (${SHIPPED_ROLES})`)
  .max(64, 'must be at most 64 characters');
/** A person created without a role is a cardholder: the role that reaches nothing but their own devices (DECISIONS 11). */
export const DEFAULT_USER_ROLE = 'Cardholder';
const groups = z
  .array(z.string({ message: 'must be a string' }).trim().min(1, 'must not be empty').max(128, 'must be at most 128 characters'), {
    message: 'must be an array of group names',
  })
  .max(100, 'must list at most 100 groups')
  .refine((list) => new Set(list).size === list.length, 'must not list a group twice');
const text = (max: number) => z.string({ message: 'must be a string' }).trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);
/** The SCIM complex attribute `name` (RFC 7643 4.1.1). */
const name = z
  .object(
    { givenName: text(256), familyName: text(256), middleName: text(256).optional(), formatted: text(512).optional() },
    { message: 'must be an object {givenName, familyName, middleName?, formatted?}' },
  )
  .strict();
const displayName = text(256);
const emails = z
  .array(
    z
      .object(
        {
          value: z.email({ message: 'must be an e-mail address' }).max(254, 'must be at most 254 characters'),
          type: text(32).optional(),
          primary: z.boolean({ message: 'must be true or false' }).optional(),
        },
        { message: 'must be an object {value, type?, primary?}' },
      )
      .strict(),
    { message: 'must be an array of {value, type?, primary?}' },
  )
  .max(20, 'must list at most 20 addresses')
  .refine((list) => list.filter((email) => email.primary).length <= 1, 'must mark at most one address primary');
/** Length rules (12-1024 characters) are the PasswordHasher's, so that they are checked in one place. */
const password = z.string({ message: 'must be a string' });

export const createUserSchema = z
  .object({
    userName,
    role: role.default(DEFAULT_USER_ROLE),
    userType: userType.optional(),
    groups: groups.nullable().optional(),
    password: password.optional(),
    name: name.nullable().optional(),
    displayName: displayName.nullable().optional(),
    emails: emails.nullable().optional(),
    organizationAdministrator: z.boolean({ message: 'must be true or false' }).optional(),
    platformAdministrator: z.boolean({ message: 'must be true or false' }).optional(),
  })
  .strict();

/** `null` clears name and displayName and empties groups and emails (DECISIONS 7); userName and userType cannot change. */
export const patchUserSchema = z
  .object({
    role: role.optional(),
    groups: groups.nullable().optional(),
    disabled: z.boolean({ message: 'must be true or false' }).optional(),
    organizationAdministrator: z.boolean({ message: 'must be true or false' }).optional(),
    platformAdministrator: z.boolean({ message: 'must be true or false' }).optional(),
    name: name.nullable().optional(),
    displayName: displayName.nullable().optional(),
    emails: emails.nullable().optional(),
    userName: z.string({ message: 'must be a string' }).optional(),
    userType: userType.optional(),
  })
  .strict();

export const setPasswordSchema = z.object({ password }).strict();

// Certified Application-IDs
const APPLICATION_ID = /^[A-Za-z0-9._-]{1,128}$/;
export const addApplicationSchema = z
  .object({
    applicationId: z.string().regex(APPLICATION_ID, 'must be 1-128 characters of A-Z, a-z, 0-9, ".", "_" and "-"'),
    name: z.string().trim().min(1).max(200).optional(),
  })
  .strict();

// A system account as an OpenID Connect client (DECISIONS 15.1)
const redirectUriList = (what: string, min: number) =>
  z
    .array(
      z.string({ message: 'must be a string' }).superRefine((value, context) => {
        const problem = redirectUriProblem(value);
        if (problem) context.addIssue({ code: 'custom', message: `"${value.slice(0, 100)}" ${problem}` });
      }),
      { message: `must be an array of ${what}` },
    )
    .min(min, `must list at least ${min} ${what}`)
    .max(20, `must list at most 20 ${what}`)
    .refine((list) => new Set(list).size === list.length, `must not list a URI twice`);

export const oidcClientSchema = z
  .object({
    redirectUris: redirectUriList('redirect URIs', 1),
    postLogoutRedirectUris: redirectUriList('post-logout redirect URIs', 0).optional(),
    publicClient: z.boolean({ message: 'must be true or false' }).optional(),
    firstParty: z.boolean({ message: 'must be true or false' }).optional(),
    refreshTokens: z.boolean({ message: 'must be true or false' }).optional(),
  })
  .strict();
