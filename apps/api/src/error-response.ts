import { HttpException } from '@nestjs/common';
import { PAGE_HEADERS, errorPageHtml } from '@app/auth';
import { DomainError, ErrorCode, OAuthError, RoutedRequest, routeFamilyOfRequest, scimError, ScimErrorBody } from '@app/common';
import { SignerUnavailableError } from '@app/hsm';
import { DatabaseUnavailableError } from '@app/persistence';
import { ServiceClosingError } from './shutdown';

export interface ErrorResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/**
 * The one place that turns any error into an HTTP answer (DECISIONS 7): OAuth errors on the token
 * service family, SCIM error bodies elsewhere, never a 500 for bad input. Used by the Nest
 * exception filter and by Fastify's error handler (errors raised before a route runs, such as an
 * unreadable body).
 */
export function toErrorResponse(error: unknown, request: RoutedRequest, correlationId: string): ErrorResponse & { unexpected: boolean } {
  const response = familyErrorResponse(error, request, correlationId);
  return routeFamilyOfRequest(request).htmlPages ? asPage(response) : response;
}

/**
 * The login and authorization pages answer every error as a page a person reads, with the pages'
 * headers (DECISIONS 14.3, 15.2): a database outage is a 503 page with Retry-After, not a SCIM body.
 */
function asPage(response: ErrorResponse & { unexpected: boolean }): ErrorResponse & { unexpected: boolean } {
  const { status } = response;
  const title = status === 503 ? 'Sign-in is unavailable for a moment' : status >= 500 ? 'Something went wrong' : 'This request cannot be used';
  return {
    status,
    headers: { ...response.headers, ...PAGE_HEADERS, 'Content-Type': 'text/html; charset=utf-8' },
    body: errorPageHtml(title, (response.body as ScimErrorBody).detail),
    unexpected: response.unexpected,
  };
}

function familyErrorResponse(error: unknown, request: RoutedRequest, correlationId: string): ErrorResponse & { unexpected: boolean } {
  const oauthRoute = routeFamilyOfRequest(request).oauthErrors;
  if (error instanceof OAuthError) return { ...oauth(error), unexpected: false };
  if (error instanceof SignerUnavailableError || error instanceof DatabaseUnavailableError || error instanceof ServiceClosingError) {
    // DECISIONS 12: the HSM (or the database) is unreachable; the signer and the pool reconnect by
    // themselves. Or this instance is shutting down and another will answer.
    const description =
      error instanceof ServiceClosingError
        ? error.message
        : `${error instanceof SignerUnavailableError ? 'Token signing' : 'The database'} is temporarily unavailable; retry shortly.`;
    const unavailable = new OAuthError('temporarily_unavailable', description, 503, {
      'Retry-After': String(error.retryAfterSeconds),
    });
    if (oauthRoute) return { ...oauth(unavailable), unexpected: false };
    return { status: 503, headers: unavailable.headers, body: scimError(503, unavailable.description), unexpected: false };
  }
  if (error instanceof DomainError) {
    const [status, scimType] = statusOf(error.code);
    if (oauthRoute && (status === 429 || status === 503)) {
      // Too busy, or too many attempts: RFC 6749's temporarily_unavailable, as the lockout answers.
      return { ...oauth(new OAuthError('temporarily_unavailable', error.detail, status, error.headers)), unexpected: false };
    }
    if (oauthRoute && status < 500) return { ...oauth(new OAuthError('invalid_request', error.detail, status, error.headers)), unexpected: false };
    // A misconfiguration (500) is logged as an unexpected error is, so the operator finds it; its detail says what to fix.
    return { status, headers: error.headers, body: scimError(status, error.detail, scimType), unexpected: status === 500 };
  }
  const clientError = asClientError(error);
  if (clientError) {
    if (oauthRoute) return { ...oauth(new OAuthError('invalid_request', clientError.detail, clientError.status)), unexpected: false };
    return { status: clientError.status, headers: {}, body: scimError(clientError.status, clientError.detail, clientError.scimType), unexpected: false };
  }
  const detail = `An unexpected error occurred. Quote correlation id ${correlationId} when you report it.`;
  return { status: 500, headers: {}, body: oauthRoute ? { error: 'server_error', error_description: detail } : scimError(500, detail), unexpected: true };
}

function oauth(error: OAuthError): ErrorResponse {
  return {
    status: error.status,
    headers: { ...error.headers, 'Cache-Control': 'no-store', Pragma: 'no-cache', 'Content-Type': 'application/json; charset=UTF-8' },
    body: { error: error.error, error_description: error.description },
  };
}

/** Exhaustive: a new ErrorCode does not compile until it has a status here. */
function statusOf(code: ErrorCode): [number, string | undefined] {
  switch (code) {
    case 'INVALID_VALUE':
      return [400, 'invalidValue'];
    case 'INVALID_SYNTAX':
      return [400, 'invalidSyntax'];
    case 'INVALID_FILTER':
      return [400, 'invalidFilter'];
    case 'MUTABILITY':
      return [400, 'mutability'];
    case 'INVALID_PATH':
      return [400, 'invalidPath'];
    case 'NO_TARGET':
      return [400, 'noTarget'];
    case 'UNAUTHENTICATED':
      return [401, undefined];
    case 'FORBIDDEN':
      return [403, undefined];
    case 'NOT_FOUND':
      return [404, undefined];
    case 'METHOD_NOT_ALLOWED':
      return [405, undefined];
    case 'NOT_ACCEPTABLE':
      return [406, undefined];
    case 'UNIQUENESS':
      return [409, 'uniqueness'];
    case 'CONFLICT':
      return [409, undefined];
    case 'PRECONDITION_FAILED':
      return [412, undefined];
    case 'PAYLOAD_TOO_LARGE':
      return [413, undefined];
    case 'UNSUPPORTED_MEDIA_TYPE':
      return [415, undefined];
    case 'TOO_MANY_REQUESTS':
      return [429, undefined];
    case 'MISCONFIGURED':
      return [500, undefined];
    case 'NOT_IMPLEMENTED':
      return [501, undefined];
    case 'SERVICE_UNAVAILABLE':
      return [503, undefined];
  }
}

/** Errors of the HTTP layer itself (Nest routing, Fastify body parsing) that are the caller's fault. */
function asClientError(error: unknown): { status: number; detail: string; scimType?: string } | undefined {
  // Nest wraps Fastify's own errors (unreadable body, too large) in an HttpException; read the original.
  if (error instanceof HttpException && (error.cause as { code?: string } | undefined)?.code?.startsWith('FST_')) {
    return asClientError(error.cause);
  }
  if (error instanceof HttpException) {
    const status = error.getStatus();
    if (status === 404) return { status, detail: 'No such resource or path.' };
    if (status < 500) return { status, detail: error.message };
    return undefined;
  }
  const fastify = error as { code?: string; statusCode?: number; message?: string };
  switch (fastify?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, detail: 'The request body is larger than 1 MiB.' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, detail: 'This Content-Type is not accepted here.' };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { status: 400, detail: 'Content-Length does not match the body.' };
    case 'FST_ERR_BAD_URL':
      return { status: 400, detail: 'The path is not valid percent-encoded UTF-8; encode each path segment with encodeURIComponent.' };
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { status: 414, detail: 'A path parameter is longer than 1,024 characters, longer than any id; check the path.' };
  }
  if (error instanceof SyntaxError || fastify?.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return { status: 400, detail: 'The body is not valid JSON.', scimType: 'invalidSyntax' };
  }
  if (typeof fastify?.statusCode === 'number' && fastify.statusCode >= 400 && fastify.statusCode < 500) {
    return { status: fastify.statusCode, detail: fastify.message ?? 'Bad request.' };
  }
  return undefined;
}
