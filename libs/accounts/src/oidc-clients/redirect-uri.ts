/** Hosts on which a redirect URI may use plain http: the loopback interface (RFC 8252 7.3, 8.3). */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

export const MAX_REDIRECT_URI_LENGTH = 2000;

/**
 * Why a redirect URI (or post-logout redirect URI) cannot be registered, or undefined when it can
 * (DECISIONS 15.1). URIs are compared as exact strings (RFC 9700 4.1.1), so what is registered is
 * the string given, never a normalised form: an absolute https URL without fragment or user
 * information, or http on a loopback host for native applications.
 */
export function redirectUriProblem(value: string): string | undefined {
  if (value.length > MAX_REDIRECT_URI_LENGTH) return `is longer than ${MAX_REDIRECT_URI_LENGTH} characters`;
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f<>"\\^`{|}]/.test(value)) return 'contains a space, a control character or a character URLs must escape';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not an absolute URL such as https://app.example.com/callback';
  }
  if (value.includes('#')) return 'must not contain a fragment (RFC 6749 3.1.2)';
  if (url.username || url.password) return 'must not contain user information (user:password@)';
  if (url.protocol === 'https:') return url.hostname ? undefined : 'needs a host';
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  return 'must use https (plain http only on the loopback hosts 127.0.0.1, [::1] and localhost)';
}
