/** Longer than any authorization request this service accepts, shorter than what a Location header may carry. */
const MAX_RETURN_TO = 4096;
const BASE = 'https://return-to.invalid';

/**
 * Where the login page may send a person after signing in (DECISIONS 14.3): a path on this service,
 * either the same organization's authorization endpoint or the portal. Anything else (a scheme, `//`,
 * a backslash, a control character, a `;` path parameter, another organization, a path that
 * normalizes elsewhere however many times it is percent-decoded) is
 * refused, and the person lands on the signed-in page instead: never an open redirect.
 */
export function safeReturnTo(org: string, value: string | undefined): string | undefined {
  if (!value || value.length > MAX_RETURN_TO) return undefined;
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused here
  if (!value.startsWith('/') || /[\\\u0000-\u001f\u007f\s]/.test(value)) return undefined;
  const [path] = value.split('?');
  if (path.includes('//')) return undefined;
  // A proxy or the portal's router may decode the path before normalizing it (`%2f`, `%5c`, `%2e`),
  // and a chain of them may decode it more than once (`%252e%252e`): every decoding of the path must
  // be as plain as the path sent, so that it cannot normalize elsewhere there. A `;` starts a path
  // parameter that servlet-style routers strip before normalizing (`/portal/..;/`): refused too.
  let decoded = path;
  for (let round = 0; ; round++) {
    // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused here
    if (decoded.includes('//') || decoded.includes(';') || /[\\\u0000-\u001f\u007f]/.test(decoded) || /(^|\/)\.\.?(\/|$)/.test(decoded)) return undefined;
    let next: string;
    try {
      next = decodeURIComponent(decoded);
    } catch {
      return undefined;
    }
    if (next === decoded) break;
    // Encoded more than twice is no path a person follows.
    if (round === 2) return undefined;
    decoded = next;
  }
  let url: URL;
  try {
    url = new URL(value, BASE);
  } catch {
    return undefined;
  }
  if (url.origin !== BASE || url.hash) return undefined;
  const authorize = `/authentication/customer/${encodeURIComponent(org)}/authorize`;
  const allowed = url.pathname === authorize || url.pathname === '/portal' || url.pathname.startsWith('/portal/');
  return allowed ? `${url.pathname}${url.search}` : undefined;
}
