/**
 * What the portal reads from answers whose OpenAPI description has no body schema yet (the admin
 * API's presenters, SCIM list envelopes). Requests, paths and parameters are never declared here:
 * they come from the generated schema.d.ts. Where an answer is described (whoami), its type is
 * taken from there.
 */
import type { paths } from './schema';

export type Whoami = paths['/credential-management/customer/{org}/whoami']['get']['responses'][200]['content']['application/json'];

export interface ListResponse<T> {
  totalResults: number;
  startIndex: number;
  itemsPerPage: number;
  Resources: T[];
}

interface Meta {
  created: string;
  lastModified: string;
  version: string;
}

export interface SystemAccount {
  id: string;
  clientId: string;
  tokenUrl: string;
  role: string;
  organizationAdministrator: boolean;
  disabled: boolean;
  description: string | null;
  /** Whether it is set up as an OpenID Connect client (GET .../oidc-client answers 404 otherwise). */
  oidcClient: boolean;
  meta: Meta;
}

/** A system account as the list answers it: with the earliest expiry among its live credentials (described in the OpenAPI document). */
export type ListedSystemAccount = SystemAccount &
  Pick<
    NonNullable<paths['/admin/v1/organizations/{org}/system-accounts']['get']['responses'][200]['content']['application/json']['Resources']>[number],
    'nearestCredentialExpiry'
  >;

export interface CreatedSystemAccount extends SystemAccount {
  secret: { id: string; value: string; expiresAt: string };
}

export interface IssuedSecret {
  id: string;
  value: string;
  expiresAt: string;
}

/** A system account's settings as an OpenID Connect client (GET/PUT .../oidc-client). */
export interface OidcClient {
  id: string;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  publicClient: boolean;
  firstParty: boolean;
  refreshTokens: boolean;
  meta: Meta;
}

export interface SecretMetadata {
  id: string;
  created: string;
  expiresAt: string;
  lastUsed: string | null;
}

export interface Certificate {
  id: string;
  subject: string;
  issuer: string;
  serialNumber: string;
  notBefore: string;
  notAfter: string;
  expiresAt: string;
  created: string;
}

export interface AdminUser {
  id: string;
  userName: string;
  userType: 'operator' | 'cardholder';
  role: string;
  groups: string[];
  displayName: string | null;
  active: boolean;
  organizationAdministrator?: boolean;
  hasPassword: boolean;
  certificates: string[];
  emails: { value: string; type?: string; primary?: boolean }[];
  /** The latest sign-in at the login page, null when none is on record (DECISIONS 17.9). */
  lastSignIn?: string | null;
  meta: Meta;
}

export interface Role {
  name: string;
  scopes: string[];
  permissions: string[];
  operatorDependent?: boolean;
}

export interface AuditEvent {
  id: string;
  occurred: string;
  org: string;
  actor: string;
  action: string;
  code: number;
  target: string | null;
  outcome: 'success' | 'failure';
  sourceAddress: string | null;
  correlationId: string | null;
  details: Record<string, unknown> | null;
}

export interface Organization {
  id: string;
  name: string;
  settings: Record<string, unknown>;
  meta: Meta;
}

export interface CertifiedApplication {
  applicationId: string;
  name: string | null;
  created: string;
}

export interface CertificateAuthority {
  id: string;
  status: string;
  mode: string;
  generation: number;
  keyAlgorithm: string;
  subject: string;
  certificate?: string;
  notAfter?: string;
}

/** One generation of the CA (GET .../ca/generations, newest first). */
export interface CaGeneration {
  generation: number;
  status: 'active' | 'awaiting-certificate' | 'retired';
  mode: string;
  keyAlgorithm: string;
  subject: string;
  notAfter: string | null;
}

export interface PushGateway {
  id: string;
  type: string;
  name: string;
  hub?: string;
  notificationTimeToLive: string;
  supportedOperatingSystems?: string[];
  notes?: string;
}
