/**
 * The path forms of the credential-management API (DECISIONS 1): the canonical
 * `/aims/rs/scim/v2/<Resource>`, its `/aims/rs/scm/v2/...` alias, and the customer form
 * `/credential-management/customer/{org}/<resource>` whose resource names match case-insensitively
 * and whose organization must be the caller's (checked once, by the access guard).
 */
export const CREDENTIAL_MANAGEMENT_RESOURCES = [
  'Users',
  'Groups',
  'Device',
  'Wallet',
  'Credential',
  'ContentRequest',
  'DeviceFlow',
  'DevicePolicy',
  'CredentialPolicy',
  'WalletPolicy',
  'Printer',
  'Stats',
  'Self',
  'SyncSession',
  'ServiceProviderConfig',
  'ResourceTypes',
  'Schemas',
] as const;

export type CredentialManagementResource = (typeof CREDENTIAL_MANAGEMENT_RESOURCES)[number];

/** Where Location and meta.location point: always the canonical form. */
export const CANONICAL_PREFIX = '/aims/rs/scim/v2';

/** The controller paths of a resource on every form; the customer form carries `:org`. */
export function credentialManagementPaths(resource: CredentialManagementResource): string[] {
  return [`aims/rs/scim/v2/${resource}`, `aims/rs/scm/v2/${resource}`, `credential-management/customer/:org/${resource}`];
}

/** Names of sub-resources below a resource (`/Users/{id}/EnrollmentData`, `/Self/Device`), also matched in any case. */
const SUB_RESOURCES = ['EnrollmentData', 'Authenticators'];
const BY_LOWER_CASE = new Map([...CREDENTIAL_MANAGEMENT_RESOURCES, ...SUB_RESOURCES].map((name) => [name.toLowerCase(), name]));
const CUSTOMER_FORM = /^(\/credential-management\/customer\/[^/?#]+\/)([^?#]*)(.*)$/s;

/**
 * The URL with the customer form's resource names in their declared spelling (`users` -> `Users`,
 * `self/device` -> `Self/Device`), so one route serves every spelling; any other URL unchanged.
 * Runs before routing (Fastify rewriteUrl). Ids never collide with these names (UUIDs, `global`).
 */
export function canonicalResourceSpelling(url: string): string {
  const match = CUSTOMER_FORM.exec(url);
  if (!match) return url;
  const path = match[2]
    .split('/')
    .map((segment) => BY_LOWER_CASE.get(segment.toLowerCase()) ?? segment)
    .join('/');
  return `${match[1]}${path}${match[3]}`;
}
