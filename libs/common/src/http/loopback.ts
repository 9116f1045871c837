import { isIP } from 'node:net';

/**
 * True for a host name that is the machine itself whatever any resolver says: `localhost`,
 * `127.0.0.0/8` and `::1` (a URL's hostname, IPv6 in brackets or not; the URL parser has already
 * lower-cased names and shortened IPv6). Not `*.localhost`: RFC 6761 asks resolvers to keep those on
 * loopback, but not every resolver does, and where plain http is allowed to a loopback host a name
 * that leaves the machine would carry a request in clear text. Where the service allows plain http
 * (a push gateway's test hub, a CIBA client on the same host), it is towards these only.
 */
export function isLoopbackHost(hostname: string): boolean {
  const bare = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return new URL(`http://[${bare}]/`).hostname === '[::1]';
  return false;
}
