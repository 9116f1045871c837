import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from './schema';
import { noteApiCall, signIn } from '../session/sign-in';

/**
 * The portal's one API client, typed from the service's OpenAPI document (src/api/openapi.json,
 * refreshed by test/portal-api.e2e-spec.ts; schema.d.ts is generated from it at every build).
 * It authenticates with the session cookie only: no token ever reaches this code or any storage.
 * Every call carries the custom headers the API requires (DECISIONS 6), which a cross-site form or
 * a "simple" cross-origin request cannot send: with the same-origin check, that is the CSRF defence.
 */
export const APPLICATION_ID = 'com.credential-platform.portal';
export const APPLICATION_VERSION = '1.0';

/** A refusal or failure from the service: its status and the SCIM error's detail, shown as it is. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly scimType?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** When a call answers 401, the session has ended (idle, absolute timeout, signed out elsewhere): sign in again. */
const signInOnUnauthenticated: Middleware = {
  onRequest() {
    noteApiCall();
    return undefined;
  },
  onResponse({ response }) {
    if (response.status === 401) signIn();
    return undefined;
  },
};

export const api = createClient<paths>({
  baseUrl: '',
  credentials: 'same-origin',
  headers: { 'Application-ID': APPLICATION_ID, 'Application-Version': APPLICATION_VERSION, Accept: 'application/json, application/scim+json' },
});
api.use(signInOnUnauthenticated);

/** Every call goes through here: answers the body, or throws ApiError with the server's own words. */
export async function answer<T>(call: Promise<{ data?: unknown; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (response.ok) return data as T;
  const body = (error ?? {}) as { detail?: string; scimType?: string; error_description?: string };
  const message = body.detail ?? body.error_description ?? `The service answered ${response.status} ${response.statusText}.`;
  throw new ApiError(response.status, message, body.scimType);
}

/** The service's answer to a DELETE or a bodiless action (204). */
export async function done(call: Promise<{ error?: unknown; response: Response }>): Promise<void> {
  await answer(call as Promise<{ data?: unknown; error?: unknown; response: Response }>);
}
