import { LookupAddress, lookup as dnsLookup } from 'node:dns';
import * as http from 'node:http';
import * as https from 'node:https';
import { isIP } from 'node:net';
import * as tls from 'node:tls';

/**
 * The one rule for every outbound call to an address an organization chose (a push hub's endpoint,
 * a CIBA client's notification endpoint, later webhooks and syslog; DECISIONS 10.2): the service
 * connects only to public unicast addresses, and to loopback only where a documented switch allows
 * it. It is decided on the address actually connected: a name is checked on what it resolves to,
 * at each connection (a lookup hook), and an IP literal in any spelling (`2130706433`, `127.1`,
 * `0x7f000001`, `[::ffff:7f00:1]`) on the address the URL parser makes of it. Redirects are never
 * followed. What a tenant may see of a failure is a coarse class (OutboundFailureKind), never the
 * network's own error (OWASP SSRF prevention; ASVS V12.6.1).
 */

/** What an address is, for the outbound rule. Only `public` is reachable, and `loopback` where a switch allows it. */
export type AddressClass = 'public' | 'loopback' | 'unspecified' | 'private' | 'link-local' | 'carrier-grade-nat' | 'multicast' | 'reserved';

/** Where a caller may connect: loopback only when its switch (named in messages) says so. */
export interface OutboundPolicy {
  allowLoopback: boolean;
  /** The configuration variable that allows loopback, e.g. PUSH_LOOPBACK_HUBS. */
  loopbackSetting: string;
}

/** The coarse classes of a failed call, the only thing a tenant sees of it; `http_<status>` is an answer's. */
export type OutboundFailureKind = 'address_not_allowed' | 'connection_failed' | 'timeout' | 'tls_error';

/** What an outbound answer or failure is called where a tenant can read it: a failure's kind, `redirect_refused` for a 3xx, else `http_<status>`. */
export function outboundResult(outcome: { status: number } | OutboundFailure): string {
  if (outcome instanceof OutboundFailure) return outcome.kind;
  if (outcome.status >= 300 && outcome.status < 400) return 'redirect_refused';
  return `http_${outcome.status}`;
}

/**
 * A call that got no answer. `kind` is what may be shown or audited; `cause` is the network's own
 * error, for the service's log only (it may name internal addresses, ports or certificate names).
 */
export class OutboundFailure extends Error {
  constructor(
    readonly kind: OutboundFailureKind,
    override readonly cause?: unknown,
  ) {
    super(`outbound call failed: ${kind}`);
    this.name = 'OutboundFailure';
  }
}

/** IPv4 ranges that are not public (RFC 6890 and the IANA special-purpose registry); first match wins. */
const IPV4_RANGES: readonly (readonly [base: string, prefix: number, cls: AddressClass])[] = [
  ['0.0.0.0', 8, 'unspecified'], // "this network": 0.0.0.0 connects to the machine itself
  ['10.0.0.0', 8, 'private'], // RFC 1918
  ['100.64.0.0', 10, 'carrier-grade-nat'], // RFC 6598
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'], // cloud metadata services live here
  ['172.16.0.0', 12, 'private'], // RFC 1918
  ['192.0.0.0', 24, 'reserved'], // IETF protocol assignments
  ['192.0.2.0', 24, 'reserved'], // documentation
  ['192.88.99.0', 24, 'reserved'], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16, 'private'], // RFC 1918
  ['198.18.0.0', 15, 'reserved'], // benchmarking
  ['198.51.100.0', 24, 'reserved'], // documentation
  ['203.0.113.0', 24, 'reserved'], // documentation
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'], // future use, and 255.255.255.255 broadcast
];

function ipv4Number(dotted: string): number {
  return dotted.split('.').reduce((value, octet) => value * 256 + Number(octet), 0);
}

function classOfIpv4(value: number): AddressClass {
  for (const [base, prefix, cls] of IPV4_RANGES) {
    const size = 2 ** (32 - prefix);
    if (Math.floor(value / size) === Math.floor(ipv4Number(base) / size)) return cls;
  }
  return 'public';
}

/** The eight 16-bit groups of an IPv6 address given in the URL parser's canonical form (hex only, at most one `::`). */
function ipv6Groups(canonical: string): number[] {
  const [head, tail] = canonical.includes('::') ? canonical.split('::') : [canonical, undefined];
  const parse = (part: string | undefined) => (part ? part.split(':').map((group) => parseInt(group, 16)) : []);
  const first = parse(head);
  if (tail === undefined) return first;
  const last = parse(tail);
  return [...first, ...new Array<number>(8 - first.length - last.length).fill(0), ...last];
}

function classOfIpv6(groups: number[]): AddressClass {
  const embeddedIpv4 = () => classOfIpv4(groups[6] * 65536 + groups[7]);
  const zerosUpTo = (n: number) => groups.slice(0, n).every((group) => group === 0);
  if (zerosUpTo(8)) return 'unspecified';
  if (zerosUpTo(7) && groups[7] === 1) return 'loopback';
  // IPv4-mapped (::ffff:a.b.c.d) and the deprecated IPv4-compatible (::a.b.c.d) forms reach the IPv4 address.
  if (zerosUpTo(5) && groups[5] === 0xffff) return embeddedIpv4();
  if (zerosUpTo(6)) return embeddedIpv4();
  // NAT64 (RFC 6052 well-known prefix 64:ff9b::/96) reaches the embedded IPv4 address through a translator.
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((group) => group === 0)) return embeddedIpv4();
  // 6to4 (2002::/16) carries an IPv4 address in its second and third groups.
  if (groups[0] === 0x2002) return classOfIpv4(groups[1] * 65536 + groups[2]);
  if ((groups[0] & 0xfe00) === 0xfc00) return 'private'; // RFC 4193 unique local
  if ((groups[0] & 0xffc0) === 0xfe80) return 'link-local';
  if ((groups[0] & 0xffc0) === 0xfec0) return 'private'; // site-local (deprecated)
  if ((groups[0] & 0xff00) === 0xff00) return 'multicast';
  if (groups[0] === 0x2001 && groups[1] === 0x0db8) return 'reserved'; // documentation
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups[2] === 1) return 'private'; // local-use NAT64 (RFC 8215)
  // Only global unicast (2000::/3) is public; the rest of the space is reserved or special.
  return (groups[0] & 0xe000) === 0x2000 ? 'public' : 'reserved';
}

/**
 * The class of an IP literal in any spelling a URL may hold (`127.1`, `2130706433`, `0x7f000001`,
 * `0177.0.0.1`, `::ffff:7f00:1` with or without brackets), or undefined when `host` is a name. The
 * URL parser of the special schemes normalises it exactly as the request will.
 */
export function addressClassOf(host: string): AddressClass | undefined {
  const bare = host.replace(/^\[|\]$/g, '');
  let hostname: string;
  try {
    hostname = new URL(`http://${isIP(bare) === 6 ? `[${bare}]` : bare}/`).hostname;
  } catch {
    return undefined;
  }
  if (hostname.startsWith('[')) return classOfIpv6(ipv6Groups(hostname.slice(1, -1)));
  if (isIP(hostname) === 4) return classOfIpv4(ipv4Number(hostname));
  return undefined;
}

function allowed(cls: AddressClass, policy: OutboundPolicy): boolean {
  return cls === 'public' || (cls === 'loopback' && policy.allowLoopback);
}

/** Names that are the machine itself without asking a resolver (RFC 6761 6.3). */
function isLoopbackName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * Why an endpoint whose host is `hostname` may not be registered, or undefined: the check at create
 * and replace, on what is known without a resolver (an IP literal in any spelling, `localhost`). A
 * name that resolves inside is refused at connect time by the same rule (outboundLookup).
 */
export function outboundHostProblem(hostname: string, policy: OutboundPolicy): string | undefined {
  const cls = addressClassOf(hostname) ?? (isLoopbackName(hostname) ? 'loopback' : 'public');
  if (allowed(cls, policy)) return undefined;
  if (cls === 'loopback') return `names a loopback address, which only ${policy.loopbackSetting}=true allows (tests, a relay on the same machine)`;
  return 'names a private, link-local, shared or reserved address (loopback, RFC 1918, RFC 4193, 169.254/16, 100.64/10, 0.0.0.0, multicast), which the service does not call; use a public address';
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net, tls, http and https connections: resolves as usual, then refuses the
 * connection (OutboundFailure address_not_allowed) when any address the name resolves to is not
 * allowed, so the address connected is always one the rule accepted. A net or tls client (syslog)
 * passes it as `lookup` beside outboundHostProblem's check of an IP literal (net skips the lookup
 * for literals).
 */
export function outboundLookup(policy: OutboundPolicy) {
  return (hostname: string, options: { all?: boolean; family?: number | string }, callback: LookupCallback): void => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : Number(options.family ?? 0);
    dnsLookup(hostname, { all: true, family: family === 4 || family === 6 ? family : 0 }, (error, addresses) => {
      if (error) return callback(error, []);
      const refused = addresses.find((entry) => !allowed(addressClassOf(entry.address) ?? 'reserved', policy));
      if (refused || addresses.length === 0) return callback(new OutboundFailure('address_not_allowed') as unknown as NodeJS.ErrnoException, []);
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

/** What an outbound POST got back: its status and headers (the body is read and dropped). */
export interface OutboundAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
}

/** What a TLS connection trusts and presents beside the system's CAs: a CA to trust (PEM), a client certificate and key (PEM). */
export interface OutboundTls {
  /** Trusted instead of the system's CAs when given (a receiver with a private CA). */
  ca?: string;
  cert?: string;
  key?: string;
}

export interface OutboundPost {
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** Aborts the call (e.g. at shutdown); reported as connection_failed. */
  signal?: AbortSignal;
  /** https only: the CA to trust and the client certificate to present. */
  tls?: OutboundTls;
}

/**
 * An HTTP client bound to one outbound policy (node:http and node:https; undici is not a direct
 * dependency of the service, so its connect hook is not used). It follows no redirect: a 3xx is
 * answered to the caller like any status. It keeps connections alive per policy; close() at shutdown.
 */
export class OutboundHttp {
  private readonly lookup: ReturnType<typeof outboundLookup>;
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor(private readonly policy: OutboundPolicy) {
    this.lookup = outboundLookup(policy);
    this.httpAgent = new http.Agent({ keepAlive: true });
    this.httpsAgent = new https.Agent({ keepAlive: true });
  }

  /** POSTs `body` to `url`; rejects only with OutboundFailure (its cause for the log). */
  post(url: string, request: OutboundPost): Promise<OutboundAnswer> {
    let target: URL;
    try {
      target = new URL(url);
    } catch (error) {
      return Promise.reject(new OutboundFailure('connection_failed', error));
    }
    const secure = target.protocol === 'https:';
    if (!secure && target.protocol !== 'http:')
      return Promise.reject(new OutboundFailure('connection_failed', new Error(`unsupported scheme ${target.protocol}`)));
    // net does not call the lookup for an IP literal: the literal itself is checked here.
    const literal = addressClassOf(target.hostname);
    if (literal && !allowed(literal, this.policy)) return Promise.reject(new OutboundFailure('address_not_allowed'));
    const timeout = AbortSignal.timeout(request.timeoutMs);
    const signal = request.signal ? AbortSignal.any([timeout, request.signal]) : timeout;
    return new Promise<OutboundAnswer>((resolve, reject) => {
      const fail = (error: unknown) => reject(error instanceof OutboundFailure ? error : new OutboundFailure(failureKind(error, timeout.aborted), error));
      const call = (secure ? https : http).request(
        target,
        {
          method: 'POST',
          headers: { ...request.headers, 'Content-Length': String(Buffer.byteLength(request.body)) },
          agent: secure ? this.httpsAgent : this.httpAgent,
          ...(secure && request.tls ? tlsOptions(request.tls) : {}),
          lookup: this.lookup as unknown as http.RequestOptions['lookup'],
          signal,
        },
        (response) => {
          // The body is not kept: nothing the target says may reach a log or a tenant.
          response.on('error', fail);
          response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers }));
          response.resume();
        },
      );
      call.on('error', fail);
      call.end(request.body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

function tlsOptions(given: OutboundTls): Pick<tls.ConnectionOptions, 'ca' | 'cert' | 'key'> {
  return { ...(given.ca ? { ca: given.ca } : {}), ...(given.cert && given.key ? { cert: given.cert, key: given.key } : {}) };
}

export interface OutboundTlsConnect {
  host: string;
  port: number;
  timeoutMs: number;
  tls?: OutboundTls;
  signal?: AbortSignal;
}

/**
 * A raw TLS connection (syslog over TLS, RFC 5425) under the same rule as OutboundHttp: an IP
 * literal is checked here, a name on every address it resolves to (outboundLookup), and the
 * server's certificate is verified (against `tls.ca` when given, else the system's CAs) for the
 * host name. Resolves once the handshake is done; rejects only with OutboundFailure.
 */
export function outboundTlsConnect(policy: OutboundPolicy, target: OutboundTlsConnect): Promise<tls.TLSSocket> {
  const literal = addressClassOf(target.host);
  if (literal && !allowed(literal, policy)) return Promise.reject(new OutboundFailure('address_not_allowed'));
  const hostname = target.host.replace(/^\[|\]$/g, '');
  return new Promise<tls.TLSSocket>((resolve, reject) => {
    let settled = false;
    const socket = tls.connect({
      host: hostname,
      port: target.port,
      // SNI is a name, never an address (RFC 6066 3).
      ...(isIP(hostname) ? {} : { servername: hostname }),
      lookup: outboundLookup(policy) as unknown as tls.ConnectionOptions['lookup'],
      ...(target.tls ? tlsOptions(target.tls) : {}),
    });
    const fail = (kind: OutboundFailureKind | undefined, error: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      target.signal?.removeEventListener('abort', abort);
      socket.destroy();
      reject(error instanceof OutboundFailure ? error : new OutboundFailure(kind ?? failureKind(error, false), error));
    };
    const timer = setTimeout(() => fail('timeout', new Error('connect timeout')), target.timeoutMs);
    const abort = () => fail('connection_failed', new Error('aborted'));
    target.signal?.addEventListener('abort', abort, { once: true });
    socket.once('error', (error) => fail(undefined, error));
    socket.once('secureConnect', () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      target.signal?.removeEventListener('abort', abort);
      resolve(socket);
    });
  });
}

function failureKind(error: unknown, timedOut: boolean): OutboundFailureKind {
  if (timedOut) return 'timeout';
  const code = String((error as { code?: unknown } | undefined)?.code ?? '');
  if (/CERT|SSL|TLS|EPROTO|SIGNATURE|ISSUER/.test(code)) return 'tls_error';
  return 'connection_failed';
}
