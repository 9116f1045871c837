import { BlockList, isIPv4, isIPv6 } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { FastifyRequest } from 'fastify';

/**
 * The one header through which a proxy that terminates TLS forwards the client's certificate
 * (DECISIONS 14.1): the URL-encoded PEM, as nginx's `$ssl_client_escaped_cert`. Read only from a peer
 * in TRUSTED_PROXIES; from anyone else it is ignored.
 */
export const CLIENT_CERTIFICATE_HEADER = 'x-client-certificate';

/** TRUSTED_PROXIES (addresses, CIDRs, or `loopback`) as a set the peer's address is checked against. */
export function trustedPeers(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    if (entry === 'loopback') {
      list.addSubnet('127.0.0.0', 8, 'ipv4');
      list.addAddress('::1', 'ipv6');
      continue;
    }
    const [address, prefix] = entry.split('/');
    const type = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : undefined;
    if (!type) continue;
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return list;
}

/**
 * The certificate (DER) the client presented: in this service's own TLS handshake (the listener asks
 * for one without requiring it), or forwarded by a trusted proxy in CLIENT_CERTIFICATE_HEADER.
 */
export function presentedCertificate(request: FastifyRequest, trusted: BlockList): Buffer | undefined {
  const socket = request.raw.socket as Partial<TLSSocket>;
  if (typeof socket.getPeerCertificate === 'function') {
    const peer = socket.getPeerCertificate(false);
    if (peer && peer.raw && peer.raw.length > 0) return peer.raw;
  }
  const header = request.headers[CLIENT_CERTIFICATE_HEADER];
  if (typeof header !== 'string' || header.length === 0 || header.length > 16384 || !fromTrustedPeer(request, trusted)) return undefined;
  let pem: string;
  try {
    pem = decodeURIComponent(header);
  } catch {
    return undefined;
  }
  const body = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+)-----END CERTIFICATE-----/.exec(pem)?.[1];
  return body ? Buffer.from(body.replace(/\s+/g, ''), 'base64') : undefined;
}

function fromTrustedPeer(request: FastifyRequest, trusted: BlockList): boolean {
  const raw = request.raw.socket.remoteAddress;
  if (!raw) return false;
  const address = raw.startsWith('::ffff:') && isIPv4(raw.slice(7)) ? raw.slice(7) : raw;
  return trusted.check(address, isIPv4(address) ? 'ipv4' : 'ipv6');
}
