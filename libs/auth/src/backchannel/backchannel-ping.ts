import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { notificationEndpointPolicy } from '@app/accounts';
import { AuditLog } from '@app/audit';
import { DataCipher, OutboundFailure, OutboundHttp, outboundResult } from '@app/common';
import { AppConfig } from '@app/config';
import { LOGGER, Logger } from '@app/observability';
import { BackchannelRequestRepository, BackchannelRequestRow } from './backchannel-request.repository';

/** What a ping-mode request keeps sealed until the person decides. */
export interface SealedPing {
  endpoint: string;
  clientNotificationToken: string;
  authReqId: string;
}

const ATTEMPTS = 3;
const TIMEOUT_MS = 5_000;
const BACKOFF_MS = [500, 2_000];

/** The sealed value's context: it opens only for its own request. */
export function pingContext(requestId: string): string {
  return `backchannel-ping:${requestId}`;
}

export function sealPing(cipher: DataCipher, requestId: string, ping: SealedPing): string {
  const sealed = cipher.seal(JSON.stringify(ping), pingContext(requestId));
  return JSON.stringify({ keyId: sealed.keyId, sealed: sealed.sealed.toString('base64') });
}

/**
 * The ping of CIBA Core 1.0 section 10.2 (DECISIONS 16): once the person approved or denied, a POST of
 * `{"auth_req_id"}` to the client's notification endpoint with `Authorization: Bearer
 * <client_notification_token>`. Sent after the decision commits, off the app's answer, with up to
 * three attempts on a network error or a 5xx; redirects are not followed, and only a public address
 * is called (loopback with BACKCHANNEL_LOOPBACK_PINGS=true), decided on the address connected. A
 * ping that never arrives costs the client nothing it cannot recover: it may still poll the token
 * endpoint at `interval`. Neither the token nor the auth_req_id is ever logged or audited; the audit
 * records the outcome's coarse class only (`http_204`, `connection_failed`, ...).
 */
@Injectable()
export class BackchannelPing implements OnApplicationShutdown {
  private readonly http: OutboundHttp;

  constructor(
    private readonly requests: BackchannelRequestRepository,
    private readonly cipher: DataCipher,
    private readonly audit: AuditLog,
    config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.http = new OutboundHttp(notificationEndpointPolicy(config));
  }

  onApplicationShutdown(): void {
    this.http.close();
  }

  async send(request: BackchannelRequestRow): Promise<void> {
    let endpoint = '';
    try {
      const stored = await this.requests.findPingSealed(request.org_id, request.id);
      if (!stored) return;
      const { keyId, sealed } = JSON.parse(stored) as { keyId: string; sealed: string };
      const ping = JSON.parse(this.cipher.open({ keyId, sealed: Buffer.from(sealed, 'base64') }, pingContext(request.id))) as SealedPing;
      endpoint = ping.endpoint;
      const result = await this.post(request, ping);
      await this.record(request, endpoint, /^http_2\d\d$/.test(result) ? 'success' : 'failure', { result });
    } catch (error) {
      this.logger.warn({ requestId: request.id, err: { message: (error as Error).message } }, 'CIBA ping not delivered; the client may still poll');
      await this.record(request, endpoint, 'failure', { error: (error as Error).name }).catch(() => undefined);
    }
  }

  /**
   * Answers the last attempt's coarse class (`http_<status>`, `redirect_refused`, or a failure's kind).
   * An address the rule refuses is not tried again: it would be refused again.
   */
  private async post(request: BackchannelRequestRow, ping: SealedPing): Promise<string> {
    let result = 'connection_failed';
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, BACKOFF_MS[attempt - 1]));
      try {
        const answer = await this.http.post(ping.endpoint, {
          headers: { Authorization: `Bearer ${ping.clientNotificationToken}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ auth_req_id: ping.authReqId }),
          timeoutMs: TIMEOUT_MS,
        });
        result = outboundResult(answer);
        if (answer.status < 500) return result;
      } catch (error) {
        const failure = error instanceof OutboundFailure ? error : new OutboundFailure('connection_failed', error);
        result = failure.kind;
        // The network's own error (it may name internal addresses) goes to this log only, never to the audit.
        const cause = failure.cause as { code?: unknown; message?: unknown } | undefined;
        this.logger.warn(
          { requestId: request.id, attempt: attempt + 1, kind: failure.kind, err: { code: cause?.code, message: cause?.message } },
          'CIBA ping got no answer',
        );
        if (failure.kind === 'address_not_allowed') return result;
      }
    }
    return result;
  }

  private record(request: BackchannelRequestRow, endpoint: string, outcome: 'success' | 'failure', details: Record<string, unknown>): Promise<void> {
    return this.audit.record({
      org: request.org_id,
      actor: 'system',
      action: 'backchannel.ping',
      target: request.client_id,
      outcome,
      details: { requestId: request.id, endpoint: endpoint ? new URL(endpoint).origin : null, ...details },
    });
  }
}
