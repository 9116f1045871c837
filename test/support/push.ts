import { createHmac, generateKeyPairSync, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { IncomingMessage, Server, ServerResponse, createServer } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { TestApp } from './test-app';

/**
 * An authenticator stored directly (the registration itself is test/authenticators.e2e-spec.ts's
 * subject): a fresh P-256 key, the operating system and push handle given. Answers its id.
 */
export async function insertAuthenticator(
  t: Pick<TestApp, 'db' | 'clock'>,
  org: string,
  userId: string,
  options: { operatingSystem?: string; pushHandle?: string; displayName?: string } = {},
): Promise<string> {
  const id = randomUUID();
  const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
  const now = t.clock.now();
  await t.db.query(
    `INSERT INTO authenticators (id, org_id, user_id, display_name, operating_system, push_handle, public_key, thumbprint, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
    [
      id,
      org,
      userId,
      options.displayName ?? 'Test phone',
      options.operatingSystem ?? 'Android',
      options.pushHandle ?? `handle-${id}`,
      JSON.stringify({ kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y }),
      `thumbprint-${id}`,
      now,
    ],
  );
  return id;
}

/** What the fake hub answers to one send. `hangMs`: answer only after that long (a slow or dead hub). */
export interface HubAnswer {
  status: number;
  retryAfter?: string;
  /** A Location header (a redirecting hub). */
  location?: string;
  hangMs?: number;
}

/** One request the fake hub received, whatever it answered. */
export interface HubSend {
  hub: string;
  /** The idempotency key (the notification's id). */
  key: string;
  handle: string;
  format: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** Whether the SharedAccessSignature checked out (a send without a valid one is answered 401). */
  signatureValid: boolean;
  /** Milliseconds (performance clock) when it arrived. */
  at: number;
  answered: number;
}

/**
 * A fake notification hub (issue 25): an HTTP server on loopback reached through a connection string
 * whose endpoint names it. It checks each send's SharedAccessSignature with its own implementation
 * of the Service Bus scheme (not the service's code), the REST path and query, and records every
 * request. It answers 201 unless told otherwise: `answerNext` queues answers for the next sends,
 * `answerAlways` changes the default (429 with Retry-After, 500, 410, a hang, ...).
 */
export class FakeNotificationHub {
  readonly sends: HubSend[] = [];
  readonly keyName = 'DefaultFullSharedAccessSignature';
  readonly key = randomBytes(32).toString('base64');
  private readonly queued: HubAnswer[] = [];
  private always: HubAnswer = { status: 201 };
  private readonly sockets = new Set<Socket>();
  private arrivalListeners: (() => void)[] = [];

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(): Promise<FakeNotificationHub> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const hub = new FakeNotificationHub(server, (server.address() as AddressInfo).port);
    server.on('request', (req, res) => hub.handle(req, res));
    server.on('connection', (socket) => {
      hub.sockets.add(socket);
      socket.on('close', () => hub.sockets.delete(socket));
    });
    return hub;
  }

  connectionString(key = this.key): string {
    return `Endpoint=sb://127.0.0.1:${this.port}/;SharedAccessKeyName=${this.keyName};SharedAccessKey=${key}`;
  }

  answerNext(...answers: HubAnswer[]): void {
    this.queued.push(...answers);
  }

  answerAlways(answer: HubAnswer): void {
    this.always = answer;
  }

  /** The sends with a valid signature that the hub accepted (2xx). */
  accepted(): HubSend[] {
    return this.sends.filter((send) => send.signatureValid && send.answered >= 200 && send.answered < 300);
  }

  /** Resolves once `count` requests have arrived (or rejects after `timeoutMs`). */
  async waitForSends(count: number, timeoutMs = 10_000): Promise<HubSend[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.sends.length < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`the fake hub received ${this.sends.length} sends, expected ${count}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 50));
        this.arrivalListeners.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.sends;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
      const match = /^\/(.+)\/messages\/$/.exec(url.pathname);
      const wellFormed = req.method === 'POST' && match !== null && url.searchParams.get('api-version') === '2015-01' && url.searchParams.has('direct');
      const hub = match?.[1] ?? '';
      const signatureValid = wellFormed && this.verifies(String(req.headers.authorization ?? ''), `http://${req.headers.host}/${hub}`);
      const answer = !wellFormed ? { status: 400 } : !signatureValid ? { status: 401 } : (this.queued.shift() ?? this.always);
      this.sends.push({
        hub: decodeURIComponent(hub),
        key: String(req.headers['idempotency-key'] ?? ''),
        handle: String(req.headers['servicebusnotification-devicehandle'] ?? ''),
        format: String(req.headers['servicebusnotification-format'] ?? ''),
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        signatureValid,
        at: performance.now(),
        answered: answer.status,
      });
      const listeners = this.arrivalListeners;
      this.arrivalListeners = [];
      for (const listener of listeners) listener();
      const reply = () => {
        if (res.destroyed) return;
        res.writeHead(answer.status, {
          ...(answer.retryAfter ? { 'Retry-After': answer.retryAfter } : {}),
          ...(answer.location ? { Location: answer.location } : {}),
        });
        res.end();
      };
      if (answer.hangMs) setTimeout(reply, answer.hangMs).unref();
      else reply();
    });
  }

  /**
   * The Service Bus SharedAccessSignature check, written here from the scheme rather than taken
   * from the service: `sr` is the resource URI lower-cased and URL-encoded, `sig` the URL-encoded
   * base64 HMAC-SHA256 of `sr + "\n" + se` keyed with the key's text, `se` still in the future,
   * `skn` this hub's key name.
   */
  private verifies(authorization: string, resource: string): boolean {
    const prefix = 'SharedAccessSignature ';
    if (!authorization.startsWith(prefix)) return false;
    const fields = new Map(
      authorization
        .slice(prefix.length)
        .split('&')
        .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)] as const),
    );
    const sr = fields.get('sr');
    const se = fields.get('se');
    const sig = fields.get('sig');
    if (fields.size !== 4 || !sr || !se || !sig || fields.get('skn') !== this.keyName) return false;
    if (sr !== encodeURIComponent(resource.toLowerCase()).toLowerCase()) return false;
    if (!/^\d+$/.test(se) || Number(se) <= Date.now() / 1000) return false;
    const expected = createHmac('sha256', Buffer.from(this.key, 'utf8')).update(`${sr}\n${se}`).digest();
    const given = Buffer.from(decodeURIComponent(sig), 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}

const GATEWAY_URN = 'urn:vendor:scim:api:idp:2.0:DeliveryGateway:Push';
const POLICY_URN = 'urn:vendor:scim:api:idp:2.0:Policy:Authenticator';

/**
 * A gateway of `org` pointing at `hub` (through the configuration API, so its connection string is
 * sealed as in production), bound by a new authenticator policy. Answers the gateway's id.
 */
export async function configureHubGateway(
  t: Pick<TestApp, 'http'>,
  token: string,
  org: string,
  hub: FakeNotificationHub,
  options: {
    type?: 'CLOUD_GCM_PUSH' | 'CLOUD_APNS_PUSH' | 'CLOUD_WNS_PUSH';
    name?: string;
    hubPath?: string;
    operatingSystems?: string[];
    ttl?: string;
    templates?: Record<string, { msg: string; title?: string }>;
    connectionString?: string;
  } = {},
): Promise<string> {
  const type = options.type ?? 'CLOUD_GCM_PUSH';
  const gateway = await t.http
    .post(`/configuration/${org}/v2/DeliveryGateway/Push?api-version=3`)
    .auth(token, { type: 'bearer' })
    .set('Content-Type', 'application/scim+json')
    .send(
      JSON.stringify({
        schemas: [GATEWAY_URN],
        type,
        name: options.name ?? `${type} hub ${hub.port}`,
        hub: options.hubPath ?? 'wallet-hub',
        connectionString: options.connectionString ?? hub.connectionString(),
        notificationTimeToLive: options.ttl ?? '3600',
        supportedOperatingSystems:
          options.operatingSystems ?? { CLOUD_GCM_PUSH: ['Android'], CLOUD_APNS_PUSH: ['iOS12', 'iOS13'], CLOUD_WNS_PUSH: ['WINDOWS11'] }[type],
        messageTemplates: options.templates ?? {
          credential: { title: 'Credential', msg: 'Your credential is {{event}}' },
          challenge: { msg: 'Approve: {{bindingMessage}}' },
        },
      }),
    );
  if (gateway.status !== 201) throw new Error(`create gateway failed: ${gateway.status} ${JSON.stringify(gateway.body)}`);
  const policy = await t.http
    .post(`/configuration/${org}/v2/Policy/Authenticator`)
    .auth(token, { type: 'bearer' })
    .set('Content-Type', 'application/scim+json')
    .send(JSON.stringify({ schemas: [POLICY_URN], name: `Policy for ${gateway.body.name}`, deliveryGateways: [{ value: gateway.body.id }] }));
  if (policy.status !== 201) throw new Error(`create policy failed: ${policy.status} ${JSON.stringify(policy.body)}`);
  return gateway.body.id;
}

/** Waits until `check` answers true (polling every 20 ms), or fails with `what` after `timeoutMs`. */
export async function eventually(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
