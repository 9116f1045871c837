/**
 * Services throw only DomainError (or OAuthError on the token service). One exception filter maps
 * each code to an HTTP status and SCIM `scimType` through an exhaustive switch, so a new code cannot
 * ship unmapped (see apps/api/src/http-exception.filter.ts).
 */
export type ErrorCode =
  | 'INVALID_VALUE' // 400 invalidValue: a field has a wrong value
  | 'INVALID_SYNTAX' // 400 invalidSyntax: the body cannot be read at all
  | 'INVALID_FILTER' // 400 invalidFilter
  | 'MUTABILITY' // 400 mutability: attempt to change an immutable attribute
  | 'INVALID_PATH' // 400 invalidPath: a PATCH path that names nothing writable
  | 'NO_TARGET' // 400 noTarget: a PATCH path whose filter matched no value
  | 'UNAUTHENTICATED' // 401
  | 'FORBIDDEN' // 403
  | 'NOT_FOUND' // 404
  | 'METHOD_NOT_ALLOWED' // 405
  | 'NOT_ACCEPTABLE' // 406
  | 'UNIQUENESS' // 409 uniqueness
  | 'CONFLICT' // 409 (state conflict, no scimType)
  | 'PRECONDITION_FAILED' // 412
  | 'PAYLOAD_TOO_LARGE' // 413
  | 'UNSUPPORTED_MEDIA_TYPE' // 415
  | 'TOO_MANY_REQUESTS' // 429
  | 'MISCONFIGURED' // 500 with a detail naming what an operator must fix (not an outage: no Retry-After)
  | 'NOT_IMPLEMENTED' // 501
  | 'SERVICE_UNAVAILABLE'; // 503

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    /** Extra response headers (e.g. Retry-After, WWW-Authenticate). */
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'DomainError';
  }
}

export const invalidValue = (detail: string): DomainError => new DomainError('INVALID_VALUE', detail);
export const notFound = (detail: string): DomainError => new DomainError('NOT_FOUND', detail);
export const forbidden = (detail: string): DomainError => new DomainError('FORBIDDEN', detail);
export const uniqueness = (detail: string): DomainError => new DomainError('UNIQUENESS', detail);

/**
 * RFC 6749 section 5.2 error, used only by the token service family (token, introspect, revoke).
 */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'temporarily_unavailable'
  | 'slow_down'
  // OpenID CIBA Core 1.0 sections 11 and 13 (DECISIONS 16).
  | 'unknown_user_id'
  | 'invalid_binding_message'
  | 'authorization_pending'
  | 'expired_token'
  | 'access_denied';

export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    readonly status: number,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
    this.name = 'OAuthError';
  }

  static invalidRequest(description: string): OAuthError {
    return new OAuthError('invalid_request', description, 400);
  }

  static invalidGrant(description: string): OAuthError {
    return new OAuthError('invalid_grant', description, 400);
  }

  /** 401 invalid_client. `basic` adds the challenge RFC 6749 5.2 requires when Basic was used. */
  static invalidClient(description: string, basic = false): OAuthError {
    return new OAuthError('invalid_client', description, 401, basic ? { 'WWW-Authenticate': 'Basic realm="token"' } : {});
  }
}
