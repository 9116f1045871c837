import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
  Actor,
  Clock,
  DataCipher,
  DomainError,
  IfMatch,
  OutboundPolicy,
  Page,
  SealedValue,
  invalidValue,
  isoTimestamp,
  notFound,
  outboundHostProblem,
  parseBody,
  parsePage,
  uniqueness,
} from '@app/common';
import { AppConfig } from '@app/config';
import { Database, PG_UNIQUE_VIOLATION, Transaction, isPgError } from '@app/persistence';
import { AuditLog, byActor } from '../audit-log';
import { AuditDestinationRepository, DestinationFields, DestinationRow, DestinationSecretRow } from './audit-destination.repository';
import {
  caCertificateProblem,
  clientPairProblem,
  createDestinationSchema,
  syslogHostProblem,
  updateDestinationSchema,
  webhookUrlProblem,
} from './audit-destination.schema';
import { AuditOutboxRepository, DeliveryRow, StreamDeliveryState } from './audit-outbox.repository';
import { StreamedEvent, newWebhookSecret } from './audit-stream-format';
import { AuditStreamTransport, destinationSealContext, failureText, streamPolicy } from './audit-stream-transport';

/** RFC 5425 4.1: syslog over TLS listens on 6514. */
export const SYSLOG_TLS_PORT = 6514;
const STATES: readonly StreamDeliveryState[] = ['pending', 'delivered', 'deadLettered'];
const ID_PATTERN = /^[1-9][0-9]{0,17}$/;

/** What a test send answers: delivered, or the coarse class of why not. */
export interface TestSendResult {
  delivered: boolean;
  result: string;
  detail: string | null;
}

/**
 * The audit stream's destinations (DECISIONS 11.4): an organization's (`orgId`) or the platform's
 * (`orgId` null). Validates, seals the secrets (the webhook secret, generated here and answered once;
 * the TLS client key), applies the outbound rule to the address, and audits every change.
 */
@Injectable()
export class AuditDestinationService {
  private readonly policy: OutboundPolicy;

  constructor(
    private readonly destinations: AuditDestinationRepository,
    private readonly outbox: AuditOutboxRepository,
    private readonly transport: AuditStreamTransport,
    private readonly cipher: DataCipher,
    private readonly audit: AuditLog,
    private readonly db: Database,
    private readonly clock: Clock,
    config: AppConfig,
  ) {
    this.policy = streamPolicy(config);
  }

  list(orgId: string | null, page: Page): Promise<{ rows: DestinationRow[]; total: number }> {
    return this.destinations.page(orgId, page.startIndex, page.count);
  }

  async get(orgId: string | null, id: string): Promise<DestinationRow> {
    const row = ID_PATTERN.test(id) ? await this.destinations.find(orgId, id) : undefined;
    if (!row) throw destinationNotFound(orgId, id);
    return row;
  }

  /** Creates a destination; a webhook's secret is in the answer, this once. */
  async create(orgId: string | null, body: unknown, actor: Actor): Promise<{ row: DestinationRow; secret: string | null }> {
    const input = parseBody(createDestinationSchema, body);
    const endpoint = this.endpoint(input.type, input);
    const pair = this.pair(input.clientCertificate ?? null, input.clientKey ?? null);
    if (input.caCertificate) this.check(caCertificateProblem(input.caCertificate));
    const secret = input.type === 'webhook' ? newWebhookSecret() : null;
    return this.writing(orgId, input.name, async (tx) => {
      const id = await this.destinations.nextId(tx);
      const fields: DestinationFields = {
        name: input.name,
        ...endpoint,
        enabled: input.enabled ?? true,
        caCertificate: input.caCertificate ?? null,
        clientCertificate: pair?.certificate ?? null,
        clientKey: pair ? this.cipher.seal(pair.key, destinationSealContext(orgId, id, 'clientKey')) : null,
      };
      const sealedSecret = secret ? this.cipher.seal(secret, destinationSealContext(orgId, id, 'secret')) : null;
      const row = await this.destinations.insert(orgId, id, input.type, fields, sealedSecret, this.clock.now(), tx);
      await this.record(orgId, 'audit_destination.create', row, actor, tx, { type: row.type, enabled: row.enabled, address: addressOf(row) });
      return { row, secret };
    });
  }

  async update(orgId: string | null, rawId: string, body: unknown, ifMatch: IfMatch | undefined, actor: Actor): Promise<DestinationRow> {
    const input = parseBody(updateDestinationSchema, body);
    const current = await this.get(orgId, rawId);
    const endpoint =
      input.url !== undefined || input.host !== undefined || input.port !== undefined
        ? this.endpoint(current.type, {
            url: input.url ?? (current.type === 'webhook' ? current.url! : undefined),
            host: input.host ?? current.host ?? undefined,
            port: input.port ?? current.port ?? undefined,
          })
        : { url: current.url, host: current.host, port: current.port };
    if (input.caCertificate) this.check(caCertificateProblem(input.caCertificate));
    if ((input.clientCertificate === undefined) !== (input.clientKey === undefined) || (input.clientCertificate === null) !== (input.clientKey === null)) {
      throw invalidValue('clientCertificate and clientKey change together: give both, or null for both to remove them.');
    }
    const pair = input.clientCertificate !== undefined ? this.pair(input.clientCertificate ?? null, input.clientKey ?? null) : undefined;
    return this.writing(orgId, input.name ?? current.name, async (tx) => {
      const locked = await this.destinations.findWithSecretsForUpdate(orgId, current.id, tx);
      if (!locked) throw destinationNotFound(orgId, rawId);
      ifMatch?.assertMatches(`Audit destination ${locked.id}`, locked.version);
      let clientKey: SealedValue | null = locked.clientKey;
      let clientCertificate = locked.client_certificate;
      if (pair !== undefined) {
        clientCertificate = pair?.certificate ?? null;
        clientKey = pair ? this.cipher.seal(pair.key, destinationSealContext(orgId, locked.id, 'clientKey')) : null;
      }
      const fields: DestinationFields = {
        name: input.name ?? locked.name,
        ...endpoint,
        enabled: input.enabled ?? locked.enabled,
        caCertificate: input.caCertificate === undefined ? locked.ca_certificate : input.caCertificate,
        clientCertificate,
        clientKey,
      };
      const row = await this.destinations.update(locked.id, fields, this.clock.now(), tx);
      await this.record(orgId, 'audit_destination.update', row, actor, tx, {
        changed: Object.keys(input).filter((key) => key !== 'clientKey'),
        enabled: row.enabled,
        address: addressOf(row),
      });
      return row;
    });
  }

  async delete(orgId: string | null, rawId: string, ifMatch: IfMatch | undefined, actor: Actor): Promise<void> {
    const current = await this.get(orgId, rawId);
    await this.db.transaction(async (tx) => {
      const locked = await this.destinations.findWithSecretsForUpdate(orgId, current.id, tx);
      if (!locked) throw destinationNotFound(orgId, rawId);
      ifMatch?.assertMatches(`Audit destination ${locked.id}`, locked.version);
      await this.destinations.delete(locked.id, tx);
      await this.record(orgId, 'audit_destination.delete', locked, actor, tx, { type: locked.type, address: addressOf(locked) });
    });
  }

  /**
   * Sends one test event (type `audit.test`, id `test-<uuid>`, not an audit event of the log) to the
   * destination now, whether enabled or not, and answers what happened in the coarse classes of the
   * delivery view. The attempt is audited.
   */
  async testSend(orgId: string | null, rawId: string, actor: Actor): Promise<TestSendResult> {
    const current = await this.get(orgId, rawId);
    const destination = (await this.destinations.findWithSecrets(orgId, current.id)) as DestinationSecretRow;
    const now = this.clock.now();
    const event: StreamedEvent = {
      id: `test-${randomUUID()}`,
      occurred: isoTimestamp(now),
      org: orgId,
      actor: actor.name,
      action: 'audit_destination.test',
      code: 75004,
      target: destination.id,
      outcome: 'success',
      sourceAddress: actor.sourceAddress ?? null,
      correlationId: actor.correlationId ?? null,
      details: { test: true },
      chain: null,
    };
    const [result] = await this.transport.deliver(destination, [event], undefined, 'audit.test');
    const answer: TestSendResult = result.delivered
      ? { delivered: true, result: 'delivered', detail: null }
      : { delivered: false, result: result.failure, detail: failureText(result.failure) };
    await this.audit.record({
      org: orgId,
      ...byActor(actor),
      action: 'audit_destination.test',
      target: destination.id,
      outcome: result.delivered ? 'success' : 'failure',
      details: { testEvent: event.id, result: answer.result },
    });
    return answer;
  }

  parseDeliveryQuery(query: Record<string, unknown>): { page: Page; state?: StreamDeliveryState } {
    const allowed = ['startIndex', 'count', 'state'];
    for (const [name, value] of Object.entries(query)) {
      if (!allowed.includes(name)) throw invalidValue(`Unknown query parameter ${name.slice(0, 40)}; this list takes ${allowed.join(', ')}.`);
      if (typeof value !== 'string') throw invalidValue(`Query parameter ${name} must be given once.`);
    }
    const state = query.state as string | undefined;
    if (state !== undefined && !STATES.includes(state as StreamDeliveryState)) {
      throw invalidValue(`Query parameter state must be one of ${STATES.join(', ')}; got "${state.slice(0, 40)}".`);
    }
    return { page: parsePage(query), state: state as StreamDeliveryState | undefined };
  }

  async deliveries(orgId: string | null, rawId: string, query: Record<string, unknown>): Promise<{ rows: DeliveryRow[]; total: number; page: Page }> {
    const parsed = this.parseDeliveryQuery(query);
    const destination = await this.get(orgId, rawId);
    const { rows, total } = await this.outbox.page(destination.id, parsed.state, parsed.page.startIndex, parsed.page.count);
    return { rows, total, page: parsed.page };
  }

  /** Puts a dead letter back in the queue (404 when the event has no dead letter at this destination). */
  async redrive(orgId: string | null, rawId: string, eventId: string, actor: Actor): Promise<void> {
    const destination = await this.get(orgId, rawId);
    if (!ID_PATTERN.test(eventId)) throw notFound(`Audit event "${eventId.slice(0, 40)}" has no delivery at destination ${destination.id}.`);
    await this.db.transaction(async (tx) => {
      if (!(await this.outbox.redrive(destination.id, eventId, this.clock.now(), tx))) {
        const state = await this.outbox.stateOf(destination.id, eventId, tx);
        if (state)
          throw new DomainError(
            'CONFLICT',
            `The delivery of audit event ${eventId} to destination ${destination.id} is ${state}, not deadLettered; only a dead letter is redriven.`,
          );
        throw notFound(`Audit event ${eventId} has no delivery at destination ${destination.id}.`);
      }
      await this.audit.record(
        { org: orgId, ...byActor(actor), action: 'audit_destination.redrive', target: destination.id, outcome: 'success', details: { eventId } },
        tx,
      );
    });
  }

  private async writing<T>(orgId: string | null, name: string, work: (tx: Transaction) => Promise<T>): Promise<T> {
    try {
      return await this.db.transaction(work);
    } catch (error) {
      if (isPgError(error, PG_UNIQUE_VIOLATION)) {
        throw uniqueness(`${orgId === null ? 'The platform' : `Organization "${orgId}"`} already has an audit destination named "${name.slice(0, 200)}".`);
      }
      throw error;
    }
  }

  private record(
    orgId: string | null,
    action: 'audit_destination.create' | 'audit_destination.update' | 'audit_destination.delete',
    row: DestinationRow,
    actor: Actor,
    tx: Transaction,
    details: Record<string, unknown>,
  ) {
    return this.audit.record({ org: orgId, ...byActor(actor), action, target: row.id, outcome: 'success', details: { name: row.name, ...details } }, tx);
  }

  /** The address fields of the destination's type, checked against the outbound rule. */
  private endpoint(type: 'syslog' | 'webhook', input: { url?: string; host?: string; port?: number }): Pick<DestinationFields, 'url' | 'host' | 'port'> {
    if (type === 'webhook') {
      if (input.host !== undefined || input.port !== undefined) throw invalidValue('A webhook destination takes url, not host or port.');
      if (input.url === undefined) throw invalidValue('A webhook destination needs url (https).');
      this.check(webhookUrlProblem(input.url));
      const hostname = new URL(input.url).hostname;
      const problem = outboundHostProblem(hostname, this.policy);
      if (problem) throw invalidValue(`url ${problem}.`);
      return { url: input.url, host: null, port: null };
    }
    if (input.url !== undefined) throw invalidValue('A syslog destination takes host and port, not url.');
    if (input.host === undefined) throw invalidValue('A syslog destination needs host (and port, 6514 when left out).');
    this.check(syslogHostProblem(input.host));
    const problem = outboundHostProblem(input.host.replace(/^\[|\]$/g, ''), this.policy);
    if (problem) throw invalidValue(`host ${problem}.`);
    return { url: null, host: input.host, port: input.port ?? SYSLOG_TLS_PORT };
  }

  private pair(certificate: string | null, key: string | null): { certificate: string; key: string } | null {
    if (certificate === null && key === null) return null;
    if (certificate === null || key === null) throw invalidValue('clientCertificate and clientKey go together: give both or neither.');
    this.check(clientPairProblem(certificate, key));
    return { certificate, key };
  }

  private check(problem: string | undefined): void {
    if (problem) throw invalidValue(`Invalid request body: ${problem}.`);
  }
}

/** Where a destination sends, for audit details: a webhook's origin (no path: it may carry a token), a syslog host and port. */
function addressOf(row: DestinationRow): string {
  return row.type === 'webhook' ? new URL(row.url!).origin : `${row.host}:${row.port}`;
}

function destinationNotFound(orgId: string | null, id: string): DomainError {
  return notFound(`${orgId === null ? 'The platform' : `Organization "${orgId}"`} has no audit destination "${id.slice(0, 40)}".`);
}
