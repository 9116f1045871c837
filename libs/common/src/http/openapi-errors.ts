import { routeFamilyOf } from './route-family';

/** The parts of an OpenAPI 3 document this post-processor reads and writes. */
interface OpenApiDocument {
  paths: Record<string, Record<string, { responses?: Record<string, unknown> }>>;
  components?: { schemas?: Record<string, unknown> };
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

const SCIM_ERROR = {
  type: 'object',
  description: 'RFC 7644 section 3.12 error (DECISIONS 7).',
  required: ['schemas', 'status', 'detail'],
  properties: {
    schemas: { type: 'array', items: { type: 'string', enum: ['urn:ietf:params:scim:api:messages:2.0:Error'] } },
    status: { type: 'string', example: '400' },
    scimType: { type: 'string', example: 'invalidValue' },
    detail: { type: 'string', description: 'What was wrong and how to fix it.' },
  },
};

const OAUTH_ERROR = {
  type: 'object',
  description: 'RFC 6749 section 5.2 error.',
  required: ['error'],
  properties: {
    error: { type: 'string', example: 'invalid_request' },
    error_description: { type: 'string' },
  },
};

const MEANING: Record<string, string> = {
  '400': 'The request is malformed: the detail names the parameter or attribute and how to fix it.',
  '401': 'No valid credentials (bearer token or client authentication).',
  '403': 'The caller may not do this (role, organization, Application-ID).',
  '404': "Nothing has this id in the caller's organization, or a path parameter cannot name anything.",
  '406': 'The Accept header allows no media type this route answers in.',
  '409': 'The change conflicts with the current state (uniqueness, lifecycle); the detail says which.',
  '412': 'If-Match does not match the current version.',
  '413': 'The body is larger than 1 MiB.',
  '414': 'A path parameter is longer than any id (more than 1,024 characters).',
  '415': 'The Content-Type is not one this route reads.',
  '429': "Too many failed authentications from this address, for this identity, or of this organization's passwords; Retry-After says when to retry.",
  '500': 'An unexpected error; the detail quotes the correlation id to report.',
  '503': 'A dependency (database, HSM) is unavailable, or every password-hashing turn is taken; Retry-After says when to retry.',
};

/** The error statuses every operation of `method` can answer, whatever the route (global guards, parsers, filter). */
export function commonErrorStatuses(method: string, oauthFamily: boolean): string[] {
  const statuses = ['400', '401', '403', '404', '406', '414', '415', '500', '503'];
  if (method !== 'get') statuses.push('409', '413');
  if (method === 'put' || method === 'patch' || method === 'delete') statuses.push('412');
  if (oauthFamily) statuses.push('429');
  return statuses;
}

/**
 * Declares the error answers every operation can give, once for the whole document rather than per
 * route (Issue 16): the statuses the global guards, parsers and exception filter produce, in the
 * route family's error body (OAuth on the token service, an HTML page on the login and authorization
 * pages, SCIM elsewhere). A status a route already
 * declares is kept as it is.
 */
export function declareErrorResponses<T>(document: T): T {
  const doc = document as unknown as OpenApiDocument;
  doc.components ??= {};
  doc.components.schemas ??= {};
  doc.components.schemas.ScimError = SCIM_ERROR;
  doc.components.schemas.OAuthError = OAUTH_ERROR;
  for (const [path, operations] of Object.entries(doc.paths)) {
    const family = routeFamilyOf(path.replace(/\{[^}]+\}/g, 'x'));
    const schema = family.htmlPages
      ? { type: 'string', description: 'An HTML page saying what happened and what to do (DECISIONS 14.3).' }
      : { $ref: `#/components/schemas/${family.oauthErrors ? 'OAuthError' : 'ScimError'}` };
    const mediaType = family.htmlPages ? 'text/html' : family.scimMediaType ? 'application/scim+json' : 'application/json';
    for (const [method, operation] of Object.entries(operations)) {
      if (!METHODS.includes(method)) continue;
      operation.responses ??= {};
      for (const status of commonErrorStatuses(method, family.oauthErrors)) {
        operation.responses[status] ??= { description: MEANING[status], content: { [mediaType]: { schema } } };
      }
    }
  }
  return document;
}
