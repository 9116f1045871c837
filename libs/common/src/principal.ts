/**
 * Who is calling, as established by the bearer guard from a verified access token (or, on the admin
 * and credential-management APIs, a person's session cookie) and the live account row. Controllers
 * read it with @CurrentPrincipal(); features never parse tokens or cookies.
 */
export interface Principal {
  kind: 'system_account' | 'user';
  /** Internal id of the system account or user row. */
  subjectId: string;
  /** Client ID of a system account, or userName of a user. */
  name: string;
  org: string;
  role: string;
  organizationAdministrator: boolean;
  platformAdministrator: boolean;
  /** jti of the access token in use; absent when a session cookie authenticated the request. */
  tokenId?: string;
  /** The person's browser session that authenticated the request (DECISIONS 11.1), when no token did. */
  sessionId?: string;
  /** Groups of a user (Operator Dependent roles see only these); empty for system accounts. */
  groups: string[];
  /** The organization's Application-ID policy (DECISIONS 6). */
  applicationIdPolicy: 'any' | 'certified';
}

/** Where the bearer guard stores the principal on the request object. */
export const PRINCIPAL_KEY = 'principal';

/** Who changes something: a Client ID or userName, `system` (the service itself) or `cli` (command line). */
export interface Actor {
  name: string;
  /**
   * The caller, when a request acts: what it may grant is limited by its role and groups
   * (DECISIONS 5.3). The command line and the service itself act without one.
   */
  principal?: Principal;
  sourceAddress?: string;
  /** The request's correlation id (X-Correlation-ID); absent outside a request. */
  correlationId?: string;
}

/** Where a request came from, for the audit events it causes: its source address and correlation id. */
export interface RequestOrigin {
  sourceAddress: string;
  correlationId?: string;
}
