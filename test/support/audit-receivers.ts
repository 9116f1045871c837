import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as https from 'node:https';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tls from 'node:tls';
import { openssl } from './certificates';

/** A self-signed server certificate for 127.0.0.1 and localhost, made by openssl for this run (PEM). */
export function selfSignedServerCertificate(subject = 'audit-receiver'): { cert: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), 'audit-receiver-'));
  try {
    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    openssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      `/CN=${subject}`,
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    );
    return { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One RFC 5424 message as the receiver parsed it (RFC 5424 6: HEADER SP STRUCTURED-DATA [SP MSG]). */
export interface SyslogMessage {
  raw: string;
  pri: number;
  version: number;
  timestamp: string;
  hostname: string;
  appName: string;
  procId: string;
  msgId: string;
  structuredData: Record<string, Record<string, string>>;
  /** MSG after its UTF-8 BOM, parsed as JSON. */
  event: { id: string; action: string; org: string | null; chain: unknown; [key: string]: unknown };
  hadBom: boolean;
}

/** RFC 5424's HEADER and one or more SD-ELEMENTs, with the escapes of 6.3.3. */
export function parseSyslogMessage(raw: string): SyslogMessage {
  const head = /^<(\d{1,3})>(\d) (\S+) (\S+) (\S+) (\S+) (\S+) /.exec(raw);
  if (!head) throw new Error(`not an RFC 5424 header: ${raw.slice(0, 80)}`);
  let rest = raw.slice(head[0].length);
  const structuredData: Record<string, Record<string, string>> = {};
  if (rest.startsWith('-')) rest = rest.slice(1);
  while (rest.startsWith('[')) {
    const id = /^\[([^\s\]=" ]+)/.exec(rest)!;
    rest = rest.slice(id[0].length);
    const params: Record<string, string> = {};
    for (;;) {
      const param = /^ ([^\s\]="]+)="((?:[^"\\]|\\.)*)"/.exec(rest);
      if (!param) break;
      params[param[1]] = param[2].replace(/\\(["\\\]])/g, '$1');
      rest = rest.slice(param[0].length);
    }
    if (!rest.startsWith(']')) throw new Error(`bad SD-ELEMENT near ${rest.slice(0, 40)}`);
    rest = rest.slice(1);
    structuredData[id[1]] = params;
  }
  if (!rest.startsWith(' ')) throw new Error('no MSG');
  const msg = rest.slice(1);
  const hadBom = msg.startsWith('\uFEFF');
  return {
    raw,
    pri: Number(head[1]),
    version: Number(head[2]),
    timestamp: head[3],
    hostname: head[4],
    appName: head[5],
    procId: head[6],
    msgId: head[7],
    structuredData,
    event: JSON.parse(hadBom ? msg.slice(1) : msg),
    hadBom,
  };
}

/** Splits RFC 5425 octet-counted frames (`MSG-LEN SP SYSLOG-MSG`) off `buffer`; answers the messages and what is left. */
export function takeFrames(buffer: Buffer): { messages: string[]; rest: Buffer } {
  const messages: string[] = [];
  let offset = 0;
  for (;;) {
    const space = buffer.indexOf(0x20, offset);
    if (space < 0) break;
    const lengthText = buffer.subarray(offset, space).toString('ascii');
    if (!/^[1-9][0-9]{0,8}$/.test(lengthText)) throw new Error(`bad MSG-LEN "${lengthText}"`);
    const length = Number(lengthText);
    if (buffer.length < space + 1 + length) break;
    messages.push(buffer.subarray(space + 1, space + 1 + length).toString('utf8'));
    offset = space + 1 + length;
  }
  return { messages, rest: buffer.subarray(offset) };
}

/** A syslog-over-TLS receiver (RFC 5425) for tests: parses every frame, can go down and come back on its port. */
export class SyslogReceiver {
  readonly messages: SyslogMessage[] = [];
  private server?: tls.Server;
  private readonly sockets = new Set<tls.TLSSocket>();
  port = 0;

  private constructor(private readonly credentials: { cert: string; key: string }) {}

  static async start(credentials: { cert: string; key: string }): Promise<SyslogReceiver> {
    const receiver = new SyslogReceiver(credentials);
    await receiver.up();
    return receiver;
  }

  async up(): Promise<void> {
    const server = tls.createServer({ cert: this.credentials.cert, key: this.credentials.key }, (socket) => {
      this.sockets.add(socket);
      let buffer: Buffer = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        const { messages, rest } = takeFrames(Buffer.concat([buffer, chunk]));
        buffer = rest;
        for (const message of messages) this.messages.push(parseSyslogMessage(message));
      });
      socket.on('error', () => undefined);
      socket.on('close', () => this.sockets.delete(socket));
    });
    server.on('tlsClientError', () => undefined);
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Stops listening and drops every connection (an outage). */
  async down(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = undefined;
  }

  ids(): string[] {
    return this.messages.map((message) => message.event.id);
  }
}

export interface WebhookCall {
  headers: Record<string, string | undefined>;
  body: string;
  answered: number;
}

/** An HTTPS webhook receiver for tests: records every call with its raw body; answers `status` (200), can go down and come back. */
export class WebhookReceiver {
  readonly calls: WebhookCall[] = [];
  status = 200;
  /** Calls to take and never answer (a receiver that hangs), before answering again. */
  hangNext = 0;
  private server?: https.Server;
  port = 0;

  private constructor(private readonly credentials: { cert: string; key: string }) {}

  static async start(credentials: { cert: string; key: string }): Promise<WebhookReceiver> {
    const receiver = new WebhookReceiver(credentials);
    await receiver.up();
    return receiver;
  }

  get url(): string {
    return `https://127.0.0.1:${this.port}/hooks/audit`;
  }

  async up(): Promise<void> {
    const server = https.createServer({ cert: this.credentials.cert, key: this.credentials.key }, (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        if (this.hangNext > 0) {
          this.hangNext--;
          this.calls.push({ headers: request.headers as Record<string, string | undefined>, body: Buffer.concat(chunks).toString('utf8'), answered: 0 });
          return;
        }
        const answered = this.status;
        this.calls.push({ headers: request.headers as Record<string, string | undefined>, body: Buffer.concat(chunks).toString('utf8'), answered });
        response.writeHead(answered, { 'Content-Type': 'text/plain' }).end('ok');
      });
    });
    server.on('tlsClientError', () => undefined);
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async down(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = undefined;
  }

  /** The event ids of the calls answered 2xx. */
  acceptedIds(): string[] {
    return this.calls.filter((call) => call.answered >= 200 && call.answered < 300).map((call) => call.headers['webhook-id']!);
  }
}
