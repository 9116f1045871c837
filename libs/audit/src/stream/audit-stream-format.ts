import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { hostname } from 'node:os';
import { isoTimestamp } from '@app/common';

/**
 * What the audit event stream sends (DECISIONS 11.4): the same JSON for both kinds of destination,
 * framed as a syslog message (RFC 5424 over TLS, RFC 5425 octet counting) or as a webhook body
 * signed the Standard Webhooks way (webhook-id, webhook-timestamp, webhook-signature: v1,<base64
 * HMAC-SHA256 of "id.timestamp.body">).
 */

/** An audit event as the stream carries it, with its place in its chain once the chainer linked it (else null). */
export interface StreamedEvent {
  /** The audit event's id: the same on every retry, what a receiver deduplicates on. */
  id: string;
  occurred: string;
  org: string | null;
  actor: string;
  action: string;
  code: number;
  target: string | null;
  outcome: 'success' | 'failure';
  sourceAddress: string | null;
  correlationId: string | null;
  details: Record<string, unknown>;
  /** `seq` and `digest` of DECISIONS 11.2; null when the event was sent before the chainer reached it. */
  chain: { seq: string; digest: string } | null;
}

export interface StreamedEventRow {
  event_id: string;
  occurred_at: Date;
  org_id: string | null;
  actor: string;
  action: string;
  code: number;
  target: string | null;
  outcome: 'success' | 'failure';
  source_address: string | null;
  details: Record<string, unknown>;
  correlation_id: string | null;
  chain_seq: string | null;
  digest: string | null;
}

export function streamedEvent(row: StreamedEventRow): StreamedEvent {
  return {
    id: row.event_id,
    occurred: isoTimestamp(row.occurred_at),
    org: row.org_id,
    actor: row.actor,
    action: row.action,
    code: row.code,
    target: row.target,
    outcome: row.outcome,
    sourceAddress: row.source_address,
    correlationId: row.correlation_id,
    details: row.details,
    chain: row.chain_seq !== null && row.digest !== null ? { seq: row.chain_seq, digest: row.digest } : null,
  };
}

/** The webhook body: Standard Webhooks' envelope, `type`, `timestamp` and the event as `data`. */
export function webhookBody(event: StreamedEvent, type = 'audit.event'): string {
  return JSON.stringify({ type, timestamp: event.occurred, data: event });
}

/** A webhook secret as the server generates it: `whsec_` and 32 random bytes in base64 (Standard Webhooks). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The key bytes of a `whsec_` secret. */
function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

/**
 * The headers of a signed webhook call: `webhook-id` (the event id), `webhook-timestamp` (Unix
 * seconds of this attempt) and `webhook-signature` = `v1,` + base64(HMAC-SHA256(key, `${id}.${timestamp}.${body}`)).
 */
export function webhookHeaders(secret: string, id: string, timestampS: number, body: string): Record<string, string> {
  const signature = createHmac('sha256', secretKey(secret)).update(`${id}.${timestampS}.${body}`).digest('base64');
  return {
    'Content-Type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestampS),
    'webhook-signature': `v1,${signature}`,
  };
}

/**
 * What a receiver does (and the tests do): recompute the signature over the id, timestamp and raw
 * body, compare in constant time with each `v1,` signature of the header, and refuse a timestamp more
 * than `toleranceS` from now (a replayed call).
 */
export function verifyWebhook(secret: string, headers: Record<string, string | undefined>, body: string, nowS: number, toleranceS = 300): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (!id || !timestamp || !signatures || !/^\d{1,12}$/.test(timestamp)) return false;
  if (Math.abs(nowS - Number(timestamp)) > toleranceS) return false;
  const expected = createHmac('sha256', secretKey(secret)).update(`${id}.${timestamp}.${body}`).digest();
  return signatures.split(' ').some((entry) => {
    const [version, value] = entry.split(',', 2);
    if (version !== 'v1' || !value) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

/** RFC 5424 6.2.1: facility 13 is "log audit"; a success is Notice (5), a failure Warning (4). */
const FACILITY_LOG_AUDIT = 13;

/**
 * The SD-ID of the structured element (RFC 5424 6.3.2): `name@<private enterprise number>`. 32473 is
 * the number RFC 5612 reserves for documentation and examples; a deployment that has its own can
 * filter on the element's name regardless.
 */
export const SYSLOG_SD_ID = 'audit@32473';
export const SYSLOG_APP_NAME = 'credential-platform';

/** An SD-PARAM value with `"`, `\` and `]` escaped (RFC 5424 6.3.3). */
function sdValue(value: string): string {
  return value.replace(/[\\"\]]/g, (c) => `\\${c}`);
}

/** PRINTUSASCII without space, at most `max` characters, or the NILVALUE `-` (RFC 5424 6.2). */
function header(value: string | null | undefined, max: number): string {
  const printable = (value ?? '').replace(/[^\x21-\x7e]/g, '').slice(0, max);
  return printable.length > 0 ? printable : '-';
}

const HOSTNAME = hostname();

/**
 * One RFC 5424 message: `<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID [audit@32473 ...] BOM{json}`.
 * MSGID is the action; the structured element repeats what a SIEM filters on (id, org, code,
 * outcome, digest); MSG is the event's JSON in UTF-8, after the BOM RFC 5424 6.4 asks for.
 */
export function syslogMessage(event: StreamedEvent): string {
  const pri = FACILITY_LOG_AUDIT * 8 + (event.outcome === 'failure' ? 4 : 5);
  const params: [string, string | null][] = [
    ['id', event.id],
    ['org', event.org],
    ['code', String(event.code)],
    ['outcome', event.outcome],
    ['actor', event.actor],
    ['digest', event.chain?.digest ?? null],
  ];
  const sd = `[${SYSLOG_SD_ID}${params
    .filter((entry): entry is [string, string] => entry[1] !== null)
    .map(([name, value]) => ` ${name}="${sdValue(value)}"`)
    .join('')}]`;
  return `<${pri}>1 ${event.occurred} ${header(HOSTNAME, 255)} ${SYSLOG_APP_NAME} ${header(String(process.pid), 128)} ${header(event.action, 32)} ${sd} \uFEFF${JSON.stringify(event)}`;
}

/** RFC 5425 4.3: octet counting, `MSG-LEN SP SYSLOG-MSG`, the length in octets of the UTF-8 message. */
export function syslogFrame(message: string): Buffer {
  const bytes = Buffer.from(message, 'utf8');
  return Buffer.concat([Buffer.from(`${bytes.length} `, 'ascii'), bytes]);
}
