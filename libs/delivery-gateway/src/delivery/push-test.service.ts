import { randomUUID } from 'node:crypto';
import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { Actor, AuditLog, byActor } from '@app/audit';
import { Clock, DataCipher, DomainError, OutboundFailure, OutboundHttp, notFound, parseBody, z } from '@app/common';
import { AppConfig } from '@app/config';
import { LOGGER, Logger } from '@app/observability';
import { parseResourceId } from '../common/request-rules';
import { connectionStringParts } from '../gateways/connection-string';
import { PushGatewayRepository } from '../gateways/push-gateway.repository';
import { hubPolicy, sealContext } from '../gateways/push-gateway.service';
import { SIGNATURE_LIFETIME_S, hubMessage, hubUrls, sharedAccessSignature } from './hub-request';
import { verdictOf } from './retry-policy';
import { failureText, networkCause } from './push-sender';

/** A test send names the device it goes to: the hub's direct send needs a handle (an administrator's own phone). */
export const testSendSchema = z
  .object({
    pushHandle: z
      .string()
      .min(1)
      .max(4096)
      .regex(/^[\x21-\x7e]+$/, "must be the device's push handle (printable characters, no spaces)"),
  })
  .strict();

/** What one test send did (DECISIONS 10.7): sent, refused by the hub, or no answer, with the class of the reason. */
export interface TestSendResult {
  outcome: 'sent' | 'refused' | 'unreachable';
  /** The hub's HTTP status; null when no answer came. */
  status: number | null;
  /** The coarse class: `sent`, `rejected`, `gone`, `throttled`, `server`, `redirect_refused`, or the outbound failure's class. */
  reason: string;
  /** A sentence of the service's own (never the network's error: DECISIONS 10.5). */
  detail: string;
}

/**
 * The test send of a push gateway (DECISIONS 10.7): one notification with the gateway's own
 * credential template straight to the hub, now, through the outbound rule (DECISIONS 10.2), and its
 * outcome answered. It is not a notification of anyone: no outbox row, no retry, no circuit breaker.
 */
@Injectable()
export class PushTestService implements OnApplicationShutdown {
  private readonly http: OutboundHttp;
  private readonly timeoutMs: number;

  constructor(
    private readonly gateways: PushGatewayRepository,
    private readonly cipher: DataCipher,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.http = new OutboundHttp(hubPolicy(config));
    this.timeoutMs = config.push.sendTimeoutMs;
  }

  onApplicationShutdown(): void {
    this.http.close();
  }

  async send(orgId: string, rawId: string, body: unknown, actor: Actor): Promise<TestSendResult> {
    const id = parseResourceId(rawId);
    const row = id ? await this.gateways.findWithConnectionString(orgId, id) : undefined;
    if (!row) throw notFound(`Tenant "${orgId}" has no push delivery gateway "${rawId.slice(0, 40)}".`);
    const { pushHandle } = parseBody(testSendSchema, body);
    if (!row.hub || !row.connectionString) {
      throw new DomainError(
        'CONFLICT',
        `Push delivery gateway ${row.id} ("${row.name}") has no ${row.hub ? 'connection string' : 'hub'}; set it with PUT .../DeliveryGateway/Push/${row.id} first.`,
      );
    }
    let plain: string;
    try {
      plain = this.cipher.open(row.connectionString, sealContext(row.org_id, row.id));
    } catch {
      throw new DomainError('CONFLICT', `The connection string of gateway ${row.id} cannot be opened with DATA_ENCRYPTION_KEYS; set it again with PUT.`);
    }
    const parts = connectionStringParts(plain);
    const urls = hubUrls(parts, row.hub);
    const key = randomUUID();
    const message = hubMessage(
      { type: row.type, notificationTtlS: row.notification_ttl_s, messageTemplates: row.message_templates },
      { id: key, template: 'credential', values: { event: 'test', message: `Test notification from ${orgId}.` }, pushHandle },
      this.clock.now(),
    );
    let result: TestSendResult;
    try {
      const answer = await this.http.post(urls.send, {
        headers: {
          ...message.headers,
          Authorization: sharedAccessSignature(urls.resource, parts.keyName, parts.key, Math.floor(Date.now() / 1000) + SIGNATURE_LIFETIME_S),
        },
        body: message.body,
        timeoutMs: this.timeoutMs,
      });
      result = verdict(answer.status);
    } catch (error) {
      const kind = error instanceof OutboundFailure ? error.kind : 'connection_failed';
      this.logger.debug({ gateway: row.id, kind, err: networkCause(error) }, 'push test send got no answer');
      result = { outcome: 'unreachable', status: null, reason: kind, detail: failureText(kind, this.timeoutMs) };
    }
    // Never the push handle (DECISIONS 10.5): it addresses a person's device.
    await this.audit.record({
      org: orgId,
      ...byActor(actor),
      action: 'deliveryGateway.test',
      target: row.id,
      outcome: result.outcome === 'sent' ? 'success' : 'failure',
      details: { status: result.status, reason: result.reason },
    });
    return result;
  }
}

function verdict(status: number): TestSendResult {
  switch (verdictOf(status)) {
    case 'sent':
      return { outcome: 'sent', status, reason: 'sent', detail: `The hub accepted the test notification (${status}).` };
    case 'gone':
      return { outcome: 'refused', status, reason: 'gone', detail: `The hub answered ${status}: the push handle is gone.` };
    case 'retry':
      return {
        outcome: 'refused',
        status,
        reason: status === 429 ? 'throttled' : 'server',
        detail: `The hub answered ${status}; a notification would be retried later.`,
      };
    default:
      if (status >= 300 && status < 400) {
        return {
          outcome: 'refused',
          status,
          reason: 'redirect_refused',
          detail: `redirect_refused: the hub answered ${status}, a redirect, which is not followed.`,
        };
      }
      return { outcome: 'refused', status, reason: 'rejected', detail: `The hub refused the test notification with ${status}.` };
  }
}
