import { OAuthError } from '@app/common';

export const FORM_CONTENT_TYPE = 'application/x-www-form-urlencoded';

/**
 * The parameters of an RFC 6749 request: form-encoded only (DECISIONS 3.1), each parameter at most
 * once (RFC 6749 3.2 and 3.1), values as strings.
 */
export function readForm(contentType: string | undefined, body: unknown): Record<string, string> {
  const mediaType = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (mediaType !== FORM_CONTENT_TYPE) {
    throw OAuthError.invalidRequest(`The request body must be ${FORM_CONTENT_TYPE}${mediaType ? `, not ${mediaType}` : ''}.`);
  }
  const params: Record<string, string> = {};
  for (const [name, value] of Object.entries((body ?? {}) as Record<string, unknown>)) {
    if (Array.isArray(value)) throw OAuthError.invalidRequest(`The parameter ${name} is given more than once.`);
    if (typeof value === 'string') params[name] = value;
  }
  return params;
}
