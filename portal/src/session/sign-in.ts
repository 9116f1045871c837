/**
 * The organization a portal URL names: /portal/{org}/... (DECISIONS 17). The portal has no org of
 * its own; each page belongs to one.
 */
export function orgOfLocation(pathname = window.location.pathname): string | undefined {
  const match = /^\/portal\/([A-Za-z0-9_]{1,64})(?:\/|$)/.exec(pathname);
  return match?.[1];
}

/** The hosted login page of the organization, which sends the person back here once signed in. */
export function loginUrl(org: string, returnTo: string): string {
  return `/authentication/customer/${encodeURIComponent(org)}/login?${new URLSearchParams({ return_to: returnTo }).toString()}`;
}

let leaving = false;

/** Leaves for the login page, to come back to the page the person was on. */
export function signIn(): void {
  const org = orgOfLocation();
  if (!org || leaving) return;
  leaving = true;
  window.location.assign(loginUrl(org, `${window.location.pathname}${window.location.search}`));
}

let lastCall = Date.now();
/** Every API call slides the session's idle timeout on the server; the portal keeps the same clock. */
export function noteApiCall(): void {
  lastCall = Date.now();
}
export function lastApiCall(): number {
  return lastCall;
}

/**
 * The organization of the browser's session, as the service wrote it into the page (DECISIONS 17),
 * or undefined without one (or under the dev server, which writes nothing).
 */
export function sessionOrganization(): string | undefined {
  const value = document.querySelector<HTMLMetaElement>('meta[name="portal-session-org"]')?.content ?? '';
  return /^[A-Za-z0-9_]{1,64}$/.test(value) ? value : undefined;
}

/** Whether the URL's organization is the session's (or the page does not say, under the dev server). */
export function isOwnOrganization(org: string): boolean {
  const sessionOrg = sessionOrganization();
  return /^[A-Za-z0-9_]{1,64}$/.test(org) && (sessionOrg === undefined || sessionOrg === org);
}
