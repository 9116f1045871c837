/** Hosts on which a redirect URI may use plain http: the loopback interface (RFC 8252 7.3, 8.3). */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

export const MAX_REDIRECT_URI_LENGTH = 2000;

/**
 * Why a redirect URI (or post-logout redirect URI) cannot be registered, or undefined when it can
 * (DECISIONS 15.1). URIs are compared as exact strings (RFC 9700 4.1.1), so what is registered is
 * the string given, never a normalised form: an absolute https URL without fragment or user
 * information, or http on a loopback host for native applications. The string is what the parser
 * reads: its host written after `//` (the parser takes `https:///cb` as host `cb`), in ASCII (an
 * internationalized host in its punycode form, so that the exact comparison is of the one form a
 * client sends), and no invisible or bidirectional formatting character (U+202E would show a
 * different URI to the administrator who reads it).
 */
export function redirectUriProblem(value: string): string | undefined {
  if (value.length > MAX_REDIRECT_URI_LENGTH) return `is longer than ${MAX_REDIRECT_URI_LENGTH} characters`;
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f<>"\\^`{|}]/.test(value)) return 'contains a space, a control character or a character URLs must escape';
  if (/[\p{C}\p{Z}]/u.test(value)) return 'contains an invisible, formatting or bidirectional control character (such as U+202E); remove it';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not an absolute URL such as https://app.example.com/callback';
  }
  if (value.includes('#')) return 'must not contain a fragment (RFC 6749 3.1.2)';
  if (url.username || url.password) return 'must not contain user information (user:password@)';
  const https = 'must use https (plain http only on the loopback hosts 127.0.0.1, [::1] and localhost)';
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return https;
  if (!/^https?:\/\/[^/?#]/i.test(value) || !url.hostname) return `needs a host after "${url.protocol}//", such as https://app.example.com/callback`;
  // eslint-disable-next-line no-control-regex -- everything beyond ASCII
  if (/[^\u0000-\u007f]/.test(value)) return `must be written in ASCII, the host in its punycode form and the path percent-encoded: ${url.href.slice(0, 200)}`;
  if (url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname)) return https;
  return undefined;
}
