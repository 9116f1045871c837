import { DomainError, invalidValue, parseBody, z } from '@app/common';
import { SCIM_CORE_USER_SCHEMA, USER_NAME_PATTERN, UserType } from '@app/accounts';

/** The vendor's User schema, and the extensions a User may carry (CREDENTIAL-MANAGEMENT.md "Resources"). */
export const CMS_USER_SCHEMA = 'urn:vendor:scim:api:cms:1.0:User';
export const USER_PERMISSION_SCHEMA = 'urn:vendor:scim:api:cms:1.0:UserPermission';
export const ENTERPRISE_USER_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const USER_SCHEMAS = [SCIM_CORE_USER_SCHEMA, CMS_USER_SCHEMA, ENTERPRISE_USER_SCHEMA, USER_PERMISSION_SCHEMA] as const;

const text = (max: number) => z.string({ message: 'must be a string' }).trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);
const optionalText = (max: number) => text(max).nullable().optional();
const bool = z.boolean({ message: 'must be true or false' });

const name = z
  .object(
    {
      givenName: optionalText(256),
      familyName: optionalText(256),
      middleName: optionalText(256),
      formatted: optionalText(512),
      honorificPrefix: optionalText(64),
      honorificSuffix: optionalText(64),
    },
    { message: 'must be an object {givenName, familyName, middleName, formatted, honorificPrefix, honorificSuffix}' },
  )
  .strict();

const multiValued = <T extends z.ZodType>(item: T, what: string, max: number) =>
  z
    .array(item, { message: `must be an array of ${what}` })
    .max(max, `must list at most ${max}`)
    .refine((list) => list.filter((value) => (value as { primary?: boolean }).primary).length <= 1, 'must mark at most one value primary');

const emails = multiValued(
  z
    .object(
      {
        value: z.email({ message: 'must be an e-mail address' }).max(254, 'must be at most 254 characters'),
        type: optionalText(32),
        primary: bool.optional(),
        display: optionalText(256),
      },
      { message: 'must be an object {value, type, primary}' },
    )
    .strict(),
  '{value, type, primary}',
  20,
);

const phoneNumbers = multiValued(
  z
    .object(
      { value: text(64), type: optionalText(32), primary: bool.optional(), display: optionalText(64) },
      { message: 'must be an object {value, type, primary}' },
    )
    .strict(),
  '{value, type, primary}',
  20,
);

const addresses = multiValued(
  z
    .object(
      {
        formatted: optionalText(1024),
        streetAddress: optionalText(512),
        locality: optionalText(256),
        region: optionalText(256),
        postalCode: optionalText(32),
        country: optionalText(64),
        type: optionalText(32),
        primary: bool.optional(),
      },
      { message: 'must be an object {formatted, streetAddress, locality, region, postalCode, country, type, primary}' },
    )
    .strict(),
  'addresses',
  10,
);

const roles = z
  .array(
    z
      .object({ value: text(64), display: optionalText(64), type: optionalText(32), primary: bool.optional() }, { message: 'must be an object {value}' })
      .strict(),
    { message: 'must be an array of {value}' },
  )
  .max(1, 'must name exactly one role (a role of scopeAssignment.properties)');

const groupNames = z
  .array(text(128), { message: 'must be an array of group names' })
  .max(100, 'must list at most 100 groups')
  .refine((list) => new Set(list).size === list.length, 'must not list a group twice');

/** RFC 7643 4.3. */
const enterprise = z
  .object(
    {
      employeeNumber: optionalText(64),
      costCenter: optionalText(128),
      organization: optionalText(256),
      division: optionalText(256),
      department: optionalText(256),
      manager: z
        .object({ value: optionalText(256), displayName: optionalText(256) }, { message: 'must be an object {value, displayName}' })
        .strict()
        .nullable()
        .optional(),
    },
    { message: `must be an object (${ENTERPRISE_USER_SCHEMA})` },
  )
  .strict();

const permission = z
  .object(
    { roles: z.array(text(64)).max(1, 'must name exactly one role').optional(), groups: groupNames.optional() },
    { message: 'must be an object {roles, groups}' },
  )
  .strict();

const schemas = z
  .array(z.string({ message: 'must be an array of strings' }), { message: `is required and must contain "${SCIM_CORE_USER_SCHEMA}" or "${CMS_USER_SCHEMA}"` })
  .refine((list) => list.includes(SCIM_CORE_USER_SCHEMA) || list.includes(CMS_USER_SCHEMA), `must contain "${SCIM_CORE_USER_SCHEMA}" or "${CMS_USER_SCHEMA}"`)
  .refine((list) => list.every((urn) => (USER_SCHEMAS as readonly string[]).includes(urn)), `may name only ${USER_SCHEMAS.join(', ')}`);

/**
 * A User body of POST and PUT (and the result of a PATCH): the writable attributes. Read-only ones
 * (`id`, `meta`, `groups`, `wallet`, `x509Certificates`) are dropped before this schema sees them.
 */
export const userBodySchema = z
  .object({
    schemas,
    userName: z.string({ message: 'is required: a string' }).regex(USER_NAME_PATTERN, 'must be 1-128 characters of A-Z, a-z, 0-9, ".", "_", "@" and "-"'),
    externalId: optionalText(256),
    name: name.nullable().optional(),
    displayName: optionalText(256),
    nickName: optionalText(256),
    title: optionalText(256),
    preferredLanguage: optionalText(64),
    locale: optionalText(64),
    timezone: optionalText(64),
    active: bool.optional(),
    password: z.string({ message: 'must be a string' }).optional(),
    emails: emails.nullable().optional(),
    phoneNumbers: phoneNumbers.nullable().optional(),
    addresses: addresses.nullable().optional(),
    userType: z.enum(['cardholder', 'operator'], { message: 'must be "cardholder" or "operator"' }).optional(),
    roles: roles.nullable().optional(),
    [ENTERPRISE_USER_SCHEMA]: enterprise.nullable().optional(),
    [USER_PERMISSION_SCHEMA]: permission.nullable().optional(),
  })
  .strict();

export type UserBody = z.infer<typeof userBodySchema>;

/** Attribute names as declared, so that a body's keys match case-insensitively (RFC 7643 2.1). */
const DECLARED = [...Object.keys(userBodySchema.shape), 'id', 'meta', 'groups', 'wallet', 'x509Certificates'];
const READ_ONLY = new Set(['id', 'meta', 'groups', 'wallet', 'x509Certificates']);
const NAME_KEYS = Object.keys(name.shape);

function canonicalKeys(value: unknown, names: readonly string[]): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, v]) => [names.find((known) => known.toLowerCase() === key.toLowerCase()) ?? key, v]),
  );
}

/** The body with declared spellings and without read-only attributes (DECISIONS 7: ignored). */
export function writableUser(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new DomainError('INVALID_SYNTAX', 'The User must be a JSON object.');
  const input = canonicalKeys(body, DECLARED) as Record<string, unknown>;
  for (const key of READ_ONLY) delete input[key];
  if (input.name && typeof input.name === 'object') input.name = canonicalKeys(input.name, NAME_KEYS);
  // manager.$ref is the service's to compute (RFC 7643 4.3); a client sending one back is not refused for it.
  const enterprise = input[ENTERPRISE_USER_SCHEMA];
  if (isObject(enterprise) && isObject(enterprise.manager)) {
    const { $ref: _ref, ...manager } = enterprise.manager;
    input[ENTERPRISE_USER_SCHEMA] = { ...enterprise, manager };
  }
  return input;
}

export function parseUserBody(body: unknown): UserBody {
  return parseBody(userBodySchema, writableUser(body), 'User');
}

/** What the accounts service stores, from a parsed body; the role comes from `roles` or the UserPermission extension. */
export interface UserFields {
  userName: string;
  userType: UserType | undefined;
  role: string | undefined;
  groups: string[] | undefined;
  password: string | undefined;
  active: boolean | undefined;
  externalId: string | null;
  name: Record<string, string> | null;
  displayName: string | null;
  emails: { value: string; type?: string; primary?: boolean }[];
  profile: Record<string, unknown>;
}

export function userFields(body: UserBody): UserFields {
  const extension = body[USER_PERMISSION_SCHEMA];
  const roleFromCore = body.roles?.[0]?.value;
  const roleFromExtension = extension?.roles?.[0];
  if (roleFromCore && roleFromExtension && roleFromCore !== roleFromExtension) {
    throw invalidValue(`Invalid User: roles names "${roleFromCore}" and ${USER_PERMISSION_SCHEMA}.roles names "${roleFromExtension}"; name one role.`);
  }
  const name = body.name ? (Object.fromEntries(Object.entries(body.name).filter(([, v]) => v !== null && v !== undefined)) as Record<string, string>) : null;
  const profile: Record<string, unknown> = {};
  for (const key of ['title', 'preferredLanguage', 'locale', 'timezone', 'nickName'] as const) if (body[key]) profile[key] = body[key];
  if (body.phoneNumbers?.length) profile.phoneNumbers = body.phoneNumbers.map(withoutNulls);
  if (body.addresses?.length) profile.addresses = body.addresses.map(withoutNulls);
  const enterpriseValue = body[ENTERPRISE_USER_SCHEMA];
  if (enterpriseValue) profile.enterprise = withoutNulls(enterpriseValue);
  return {
    userName: body.userName,
    userType: body.userType,
    role: roleFromCore ?? roleFromExtension,
    groups: extension?.groups,
    password: body.password,
    active: body.active,
    externalId: body.externalId ?? null,
    name: name && Object.keys(name).length > 0 ? name : null,
    displayName: body.displayName ?? null,
    emails: (body.emails ?? []).map((email) => withoutNulls({ value: email.value, type: email.type, primary: email.primary }) as { value: string }),
    profile,
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function withoutNulls<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null && v !== undefined)) as T;
}
