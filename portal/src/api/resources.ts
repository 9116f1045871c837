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
  /** The latest sign-in at the login page, null when none is on record (DECISIONS 17.2). */
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

/** An organization's settings as GET answers them (every one, defaults filled in). */
export interface OrganizationSettings {
  automaticDeviceCreation: boolean;
  applicationIdPolicy: 'any' | 'certified';
  passwordGrant: boolean;
  passwordOnlySignIn: boolean;
  accessTokenLifetime: number | null;
}

export interface Organization {
  id: string;
  name: string;
  settings: OrganizationSettings;
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
  compromisedAt?: string;
  /** A subordinate CA awaiting its first certificate: the CSR for the enterprise root. */
  csr?: string;
  /** A subordinate CA's renewal awaiting its certificate. */
  renewal?: { generation: number; status: string; keyAlgorithm: string; subject: string; csr: string };
  previousGenerations?: {
    generation: number;
    subject: string;
    certificate: string;
    notAfter: string;
    compromisedAt?: string;
    crossCertificates?: { oldWithNew: string; newWithOld: string };
  }[];
  meta: Meta;
}

/** One generation of the CA (GET .../ca/generations, newest first). */
export type CaGeneration = NonNullable<
  paths['/admin/v1/organizations/{org}/ca/generations']['get']['responses'][200]['content']['application/json']['Resources']
>[number];

export interface PushGateway {
  id: string;
  type: 'CLOUD_WNS_PUSH' | 'CLOUD_GCM_PUSH' | 'CLOUD_APNS_PUSH';
  name: string;
  hub?: string;
  notificationTimeToLive: string;
  supportedOperatingSystems?: string[];
  appId?: string;
  notes?: string;
  meta: Meta;
}

/** A push notification's delivery state (GET /configuration/{tenant}/v2/DeliveryGateway/Notifications; DECISIONS 10.5). */
export interface PushNotification {
  id: string;
  template: string;
  cause: string;
  user: { value: string };
  gateway: { value: string } | null;
  state: 'pending' | 'sent' | 'failed' | 'deadLettered' | 'discarded';
  attempts: number;
  nextAttemptAt: string | null;
  lastStatus: number | null;
  lastError: string | null;
  sentAt: string | null;
  meta: { created: string; lastModified: string };
}

/** What a gateway's test send did (POST .../Push/{id}/test; DECISIONS 10.7). */
export interface TestSendResult {
  outcome: 'sent' | 'refused' | 'unreachable';
  status: number | null;
  reason: string;
  detail: string;
}

/** An audit event destination (GET /admin/v1/organizations/{org}/audit-destinations; DECISIONS 11.4): never its secret or client key. */
export interface AuditDestination {
  id: string;
  name: string;
  type: 'syslog' | 'webhook';
  url?: string;
  host?: string;
  port?: number;
  enabled: boolean;
  caCertificate: string | null;
  clientCertificate: string | null;
  /** Answered once, by the create of a webhook. */
  secret?: string;
  meta: Meta;
}

/** One event's delivery at one destination (GET .../audit-destinations/{id}/deliveries). */
export interface AuditDelivery {
  eventId: string;
  action: string;
  code: number;
  state: 'pending' | 'delivered' | 'deadLettered';
  attempts: number;
  nextAttemptAt: string | null;
  lastError: string | null;
  created: string;
  lastModified: string;
  deliveredAt: string | null;
}

/** What a destination's test send did (POST .../audit-destinations/{id}/test). */
export interface DestinationTestResult {
  delivered: boolean;
  result: string;
  detail: string | null;
}
