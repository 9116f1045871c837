/**
 * Which family of the API a request belongs to, decided from the route it matched (DECISIONS 1), so that
 * rules that differ by family are written once: the error body (RFC 6749 on the token service,
 * SCIM elsewhere, DECISIONS 7), the media type of errors (DECISIONS 6), and whether the request
 * must carry Application-ID and Application-Version (DECISIONS 6).
 */
export type RouteFamilyName =
  /** `/authentication/customer/{org}/token|introspect|revoke|backchannel-authentication` (and the positioning variant under /oip). */
  | 'oauth'
  /**
   * The pages a person's browser shows (DECISIONS 14.3, 15.2): the hosted login page with its
   * sign-out and session list, and the authorization and end-session endpoints.
   */
  | 'page'
  /** The rest of `/authentication/`: discovery, JWKS, whoami. */
  | 'authentication'
  /** Credential management (both path forms) and push gateway configuration: SCIM resources. */
  | 'scim'
  /** `/admin/v1`. */
  | 'admin'
  /** `/pki/{org}/...`: CA certificate, CRL and OCSP, for relying parties without a token. */
  | 'pki'
  /** Health, metrics, API docs, and the root's index. */
  | 'operations'
  /** Anything else: no route of the service (404). */
  | 'other';

export interface RouteFamily {
  name: RouteFamilyName;
  /** Errors are RFC 6749 section 5.2 bodies rather than SCIM errors. */
  oauthErrors: boolean;
  /** Errors (and answers) are application/scim+json. */
  scimMediaType: boolean;
  /** Every answer, errors included, is an HTML page with the pages' protective headers (no-store, CSP, no framing). */
  htmlPages: boolean;
  /**
   * A form body (application/x-www-form-urlencoded, multipart/form-data) is read. False on the
   * administration API, whose bodies are JSON: a form body there is a 415 naming application/json
   * (DECISIONS 11), whatever the route would have made of it.
   */
  formBodies: boolean;
  /** The caller must send Application-ID and Application-Version (DECISIONS 6). */
  applicationHeaders: boolean;
  /**
   * A person's session cookie authenticates the request when it has no Authorization header
   * (DECISIONS 11.1): the admin and credential-management APIs, which the portal calls; never the
   * token service (`/authentication/*`).
   */
  sessionCookie: boolean;
}

const FAMILIES: Readonly<Record<RouteFamilyName, RouteFamily>> = {
  oauth: { name: 'oauth', oauthErrors: true, scimMediaType: false, htmlPages: false, formBodies: true, applicationHeaders: false, sessionCookie: false },
  page: { name: 'page', oauthErrors: false, scimMediaType: false, htmlPages: true, formBodies: true, applicationHeaders: false, sessionCookie: false },
  authentication: {
    name: 'authentication',
    oauthErrors: false,
    scimMediaType: false,
    htmlPages: false,
    formBodies: true,
    applicationHeaders: false,
    sessionCookie: false,
  },
  scim: { name: 'scim', oauthErrors: false, scimMediaType: true, htmlPages: false, formBodies: true, applicationHeaders: true, sessionCookie: true },
  admin: { name: 'admin', oauthErrors: false, scimMediaType: false, htmlPages: false, formBodies: false, applicationHeaders: true, sessionCookie: true },
  pki: { name: 'pki', oauthErrors: false, scimMediaType: false, htmlPages: false, formBodies: true, applicationHeaders: false, sessionCookie: false },
  operations: {
    name: 'operations',
    oauthErrors: false,
    scimMediaType: false,
    htmlPages: false,
    formBodies: true,
    applicationHeaders: false,
    sessionCookie: false,
  },
  other: { name: 'other', oauthErrors: false, scimMediaType: false, htmlPages: false, formBodies: true, applicationHeaders: true, sessionCookie: false },
};

const OAUTH = /^(?:\/oip)?\/authentication\/customer\/[^/?]+\/(?:token|introspect|revoke|backchannel-authentication)\/?(?:\?|$)/;
const PAGE = /^\/authentication\/customer\/[^/?]+\/(?:login|logout|authorize|end-session|sessions\/[^/?]+\/end)(?:[/?]|$)/;
const AUTHENTICATION = /^(?:\/oip)?\/authentication\//;
const SCIM = /^\/(?:aims\/rs\/sci?m\/|credential-management\/|configuration\/)/;
const ADMIN = /^\/admin\//;
const PKI = /^\/pki\//;
const OPERATIONS = /^\/(?:(?:health|metrics|api-docs)(?:[/?-]|$)|\?|$)/;

/** The family of a path: a route pattern (`/admin/v1/organizations/:org`) or a decoded request path. */
export function routeFamilyOf(url: string): RouteFamily {
  if (OAUTH.test(url)) return FAMILIES.oauth;
  if (PAGE.test(url)) return FAMILIES.page;
  if (AUTHENTICATION.test(url)) return FAMILIES.authentication;
  if (SCIM.test(url)) return FAMILIES.scim;
  if (ADMIN.test(url)) return FAMILIES.admin;
  if (PKI.test(url)) return FAMILIES.pki;
  if (OPERATIONS.test(url)) return FAMILIES.operations;
  return FAMILIES.other;
}

/** What a request needs to name its family: Fastify's request, or Nest's view of it. */
export interface RoutedRequest {
  url: string;
  routeOptions?: { url?: string };
}

/**
 * The family of a request, from the route pattern the router matched. The router matches the
 * percent-decoded path, so the URL as sent (`/%61dmin/v1/...`) must not decide: its family could
 * differ from the route's and skip that family's rules. A request that matched no route (404, or a
 * path the router refused) is classified by its decoded path; that only chooses its error's format.
 */
export function routeFamilyOfRequest(request: RoutedRequest): RouteFamily {
  const route = request.routeOptions?.url;
  if (route === undefined) return routeFamilyOf(decodedPath(request.url));
  let family = familyOfRoute.get(route);
  if (family === undefined) familyOfRoute.set(route, (family = routeFamilyOf(route)));
  return family;
}

/** The family of each route pattern, worked out once: several rules ask for it on every request (issue 35). */
const familyOfRoute = new Map<string, RouteFamily>();

function decodedPath(url: string): string {
  const path = url.split('?')[0];
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}
