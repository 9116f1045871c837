import { Injectable } from '@nestjs/common';
import { DataCipher, OutboundFailure, OutboundFailureKind, OutboundHttp, OutboundPolicy, OutboundTls, outboundResult, outboundTlsConnect } from '@app/common';
import { AppConfig } from '@app/config';
import { DestinationSecretRow } from './audit-destination.repository';
import { StreamedEvent, syslogFrame, syslogMessage, webhookBody, webhookHeaders } from './audit-stream-format';

/** The outbound rule for audit destinations (DECISIONS 10.2, 11.4): public addresses, loopback only with AUDIT_STREAM_LOOPBACK. */
export function streamPolicy(config: AppConfig): OutboundPolicy {
  return { allowLoopback: config.auditStream.loopback, loopbackSetting: 'AUDIT_STREAM_LOOPBACK' };
}

/** What sealed a destination's secrets: its organization ('' for the platform's), its id and the field. */
export const destinationSealContext = (orgId: string | null, id: string, field: 'secret' | 'clientKey'): string =>
  `audit-destination:${orgId ?? ''}:${id}:${field}`;

/**
 * The coarse class of a failed delivery, the only thing an administrator sees of it (as for push,
 * DECISIONS 10.5): `timeout`, `connection_failed`, `tls_error`, `address_not_allowed`,
 * `redirect_refused`, `http_<status>`, or `secret_unreadable` (DATA_ENCRYPTION_KEYS lost its key).
 */
export type DeliveryResult = { delivered: true } | { delivered: false; failure: string };

const SENTENCES: Record<OutboundFailureKind, string> = {
  timeout: 'no answer within the send timeout',
  connection_failed: 'the destination could not be reached',
  tls_error: 'no trusted TLS connection to the destination',
  address_not_allowed: 'the destination is not a public address (loopback only with AUDIT_STREAM_LOOPBACK=true); nothing was sent',
};

/** The text stored and shown for a failure class: the class, then a fixed sentence, never the network's own error. */
export function failureText(failure: string): string {
  if (failure in SENTENCES) return `${failure}: ${SENTENCES[failure as OutboundFailureKind]}`;
  if (failure === 'redirect_refused') return 'redirect_refused: the webhook answered a redirect, which is not followed';
  if (failure === 'secret_unreadable') return 'secret_unreadable: a secret of the destination cannot be opened with DATA_ENCRYPTION_KEYS';
  if (failure.startsWith('http_')) return `${failure}: the webhook answered ${failure.slice(5)}, not 2xx`;
  return failure;
}

/**
 * Sends events to one destination: a webhook gets one signed POST per event (2xx is delivered,
 * anything else a failure retried later); a syslog receiver gets every event of the batch on one TLS
 * connection, RFC 5425 frames, and they count as delivered when the receiver closed the connection
 * after our close (it read up to our end), since syslog has no acknowledgement of its own.
 */
@Injectable()
export class AuditStreamTransport {
  private readonly policy: OutboundPolicy;
  private readonly http: OutboundHttp;
  private readonly timeoutMs: number;

  constructor(
    private readonly cipher: DataCipher,
    config: AppConfig,
  ) {
    this.policy = streamPolicy(config);
    this.http = new OutboundHttp(this.policy);
    this.timeoutMs = config.auditStream.sendTimeoutMs;
  }

  async deliver(destination: DestinationSecretRow, events: readonly StreamedEvent[], signal?: AbortSignal, type?: string): Promise<DeliveryResult[]> {
    let tls: OutboundTls | undefined;
    let secret: string | undefined;
    try {
      tls = this.tlsOf(destination);
      if (destination.type === 'webhook') secret = this.cipher.open(destination.secret!, destinationSealContext(destination.org_id, destination.id, 'secret'));
    } catch {
      return events.map(() => ({ delivered: false, failure: 'secret_unreadable' }));
    }
    if (destination.type === 'webhook') {
      return Promise.all(events.map((event) => this.post(destination.url!, secret!, event, tls, signal, type)));
    }
    try {
      await this.syslog(destination.host!, destination.port!, events, tls, signal);
      return events.map(() => ({ delivered: true }));
    } catch (error) {
      const failure = error instanceof OutboundFailure ? error.kind : 'connection_failed';
      return events.map(() => ({ delivered: false, failure }));
    }
  }

  close(): void {
    this.http.close();
  }

  private tlsOf(destination: DestinationSecretRow): OutboundTls | undefined {
    const tls: OutboundTls = {};
    if (destination.ca_certificate) tls.ca = destination.ca_certificate;
    if (destination.client_certificate && destination.clientKey) {
      tls.cert = destination.client_certificate;
      tls.key = this.cipher.open(destination.clientKey, destinationSealContext(destination.org_id, destination.id, 'clientKey'));
    }
    return Object.keys(tls).length > 0 ? tls : undefined;
  }

  private async post(
    url: string,
    secret: string,
    event: StreamedEvent,
    tls: OutboundTls | undefined,
    signal?: AbortSignal,
    type?: string,
  ): Promise<DeliveryResult> {
    const body = webhookBody(event, type);
    try {
      const answer = await this.http.post(url, {
        headers: webhookHeaders(secret, event.id, Math.floor(Date.now() / 1000), body),
        body,
        timeoutMs: this.timeoutMs,
        signal,
        tls,
      });
      if (answer.status >= 200 && answer.status < 300) return { delivered: true };
      return { delivered: false, failure: outboundResult(answer) };
    } catch (error) {
      return { delivered: false, failure: error instanceof OutboundFailure ? error.kind : 'connection_failed' };
    }
  }

  private async syslog(host: string, port: number, events: readonly StreamedEvent[], tls: OutboundTls | undefined, signal?: AbortSignal): Promise<void> {
    const socket = await outboundTlsConnect(this.policy, { host, port, timeoutMs: this.timeoutMs, tls, signal });
    await new Promise<void>((resolve, reject) => {
      let peerEnded = false;
      let failed = false;
      const fail = (kind: OutboundFailureKind, cause?: unknown) => {
        if (failed) return;
        failed = true;
        clearTimeout(timer);
        socket.destroy();
        reject(new OutboundFailure(kind, cause));
      };
      const timer = setTimeout(() => fail('timeout'), this.timeoutMs);
      const abort = () => fail('connection_failed', new Error('aborted'));
      signal?.addEventListener('abort', abort, { once: true });
      socket.on('error', (error) => fail('connection_failed', error));
      // Whatever the receiver says is read and dropped.
      socket.on('data', () => undefined);
      socket.on('end', () => (peerEnded = true));
      socket.on('close', () => {
        signal?.removeEventListener('abort', abort);
        if (failed) return;
        if (!peerEnded) return fail('connection_failed', new Error('closed without the receiver reading to the end'));
        clearTimeout(timer);
        resolve();
      });
      socket.end(Buffer.concat(events.map((event) => syslogFrame(syslogMessage(event)))));
    });
  }
}
