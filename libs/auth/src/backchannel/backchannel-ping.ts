import { Inject, Injectable } from '@nestjs/common';
import { AuditLog } from '@app/audit';
import { DataCipher } from '@app/common';
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
 * three attempts on a network error or a 5xx; redirects are not followed. A ping that never arrives
 * costs the client nothing it cannot recover: it may still poll the token endpoint at `interval`.
 * Neither the token nor the auth_req_id is ever logged or audited.
 */
@Injectable()
export class BackchannelPing {
  constructor(
    private readonly requests: BackchannelRequestRepository,
    private readonly cipher: DataCipher,
    private readonly audit: AuditLog,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async send(request: BackchannelRequestRow): Promise<void> {
    let endpoint = '';
    try {
      const stored = await this.requests.findPingSealed(request.org_id, request.id);
      if (!stored) return;
      const { keyId, sealed } = JSON.parse(stored) as { keyId: string; sealed: string };
      const ping = JSON.parse(this.cipher.open({ keyId, sealed: Buffer.from(sealed, 'base64') }, pingContext(request.id))) as SealedPing;
      endpoint = ping.endpoint;
      const status = await this.post(ping);
      await this.record(request, endpoint, status >= 200 && status < 300 ? 'success' : 'failure', { status });
    } catch (error) {
      this.logger.warn({ requestId: request.id, err: { message: (error as Error).message } }, 'CIBA ping not delivered; the client may still poll');
      await this.record(request, endpoint, 'failure', { error: (error as Error).name }).catch(() => undefined);
    }
  }

  /** Answers the last HTTP status; throws when no attempt got an answer. */
  private async post(ping: SealedPing): Promise<number> {
    let lastError: unknown;
    let lastStatus: number | undefined;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, BACKOFF_MS[attempt - 1]));
      try {
        const response = await fetch(ping.endpoint, {
          method: 'POST',
          headers: { Authorization: `Bearer ${ping.clientNotificationToken}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ auth_req_id: ping.authReqId }),
          redirect: 'manual',
          signal: AbortSignal.timeout(TIMEOUT_MS),
        });
        await response.body?.cancel();
        lastStatus = response.status;
        if (response.status < 500) return response.status;
      } catch (error) {
        lastError = error;
      }
    }
    if (lastStatus !== undefined) return lastStatus;
    throw lastError instanceof Error ? lastError : new Error('the notification endpoint did not answer');
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
