import { Injectable } from '@nestjs/common';
import { AuditLog } from '@app/audit';
import {
  Actor,
  Clock,
  DataCipher,
  DomainError,
  IfMatch,
  OutboundPolicy,
  SealedValue,
  UnknownKeyError,
  invalidValue,
  notFound,
  outboundHostProblem,
  parseBody,
  preconditionFailed,
  uniqueness,
} from '@app/common';
import { AppConfig } from '@app/config';
import { ChangeFeed, Database, FeedCache, PG_FOREIGN_KEY_VIOLATION, PG_UNIQUE_VIOLATION, Transaction, isPgError } from '@app/persistence';
import { ApiVersion, parseResourceId } from '../common/request-rules';
import { AuthenticatorPolicyRepository } from '../policies/authenticator-policy.repository';
import { connectionStringParts } from './connection-string';
import { PushGatewayFields, PushGatewayRepository, PushGatewayRow, PushGatewaySecretRow } from './push-gateway.repository';
import {
  CreateGatewayInput,
  DEFAULT_NOTIFICATION_TTL_S,
  MessageTemplate,
  MessageTemplates,
  ReplaceGatewayInput,
  createGatewaySchema,
  refuseLaterAttributes,
  replaceGatewaySchema,
} from './push-gateway.schema';

/** Who acts, for the audit log. */
/** A gateway just written, with its connection string in clear for the answer (and only for it). */
export interface WrittenGateway {
  row: PushGatewayRow;
  connectionString: string | null;
}

/** Replaces that lose a race without If-Match are merged again on the newer version, this many times. */
const REPLACE_ATTEMPTS = 5;
/** Organizations whose gateway list this instance keeps in memory. */
const MAX_CACHED_ORGANIZATIONS = 10_000;

/**
 * The rules of push delivery gateways (DECISIONS 10). Callers pass the organization already checked
 * against the tenant of the path; every lookup is scoped to it, so another organization's id is a
 * 404 (DECISIONS 2). The connection string is sealed before it reaches the repository and opened
 * only to echo it in a create or replace answer; it never goes to the audit log or the logs.
 */
@Injectable()
export class PushGatewayService {
  /**
   * Each organization's gateways (without their connection strings) as one entry: GET of the list
   * and of one gateway read memory (Issue 15: configuration reads from the change-feed caches).
   * Every create, replace and delete publishes `gateway` {org} with its commit; an organization's
   * deletion publishes `organization`.
   */
  private readonly cache: FeedCache<PushGatewayRow[]>;
  private readonly outbound: OutboundPolicy;

  constructor(
    private readonly db: Database,
    private readonly gateways: PushGatewayRepository,
    private readonly policies: AuthenticatorPolicyRepository,
    private readonly cipher: DataCipher,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    private readonly changes: ChangeFeed,
    config: AppConfig,
  ) {
    this.outbound = hubPolicy(config);
    this.cache = new FeedCache(changes, {
      evicts: (change) => (change.topic === 'gateway' || change.topic === 'organization' ? { key: change.id } : undefined),
      maxEntries: MAX_CACHED_ORGANIZATIONS,
    });
  }

  async list(orgId: string): Promise<PushGatewayRow[]> {
    return (await this.cache.read(orgId, () => this.gateways.list(orgId)))!;
  }

  async get(orgId: string, rawId: string): Promise<PushGatewayRow> {
    const id = parseResourceId(rawId);
    const row = id && (await this.list(orgId)).find((gateway) => gateway.id === id);
    if (!row) throw gatewayNotFound(orgId, rawId);
    return row;
  }

  /**
   * A connection string whose Endpoint is an address the sender would refuse (DECISIONS 10.2: an IP
   * literal in any spelling, or localhost, that is loopback while PUSH_LOOPBACK_HUBS=false, or
   * private, link-local, shared or reserved) is a 400 at once rather than a failed send later. A name
   * is not resolved here: the sender decides on the address it connects to.
   */
  private refuseInsideEndpoint(connectionString: string | null | undefined): void {
    if (!connectionString) return;
    const problem = outboundHostProblem(connectionStringParts(connectionString).hostname, this.outbound);
    if (problem) throw invalidValue(`Invalid push delivery gateway: connectionString: Endpoint ${problem}.`);
  }

  /** With the commit of `tx`: every instance reads this organization's gateways from the database again. */
  private changed(orgId: string, tx: Transaction): void {
    this.changes.publishOnCommit(tx, 'gateway', [orgId]);
  }

  async create(orgId: string, body: unknown, version: ApiVersion, actor: Actor): Promise<WrittenGateway> {
    refuseLaterAttributes(body, version);
    const input: CreateGatewayInput = parseBody(createGatewaySchema, body, 'push delivery gateway');
    this.refuseInsideEndpoint(input.connectionString);
    try {
      const row = await this.db.transaction(async (tx) => {
        const id = await this.gateways.nextId(tx);
        const fields: PushGatewayFields = {
          name: input.name,
          hub: input.hub ?? null,
          connectionString: input.connectionString ? this.cipher.seal(input.connectionString, sealContext(orgId, id)) : null,
          notificationTtlS: input.notificationTimeToLive ?? DEFAULT_NOTIFICATION_TTL_S,
          supportedOperatingSystems: input.supportedOperatingSystems ?? [],
          appId: input.appId ?? null,
          notes: input.notes ?? null,
          messageTemplates: mergeTemplates({}, input.messageTemplates),
        };
        const created = await this.gateways.insert(orgId, id, input.type, fields, this.clock.now(), tx);
        await this.audit.record(
          {
            org: orgId,
            actor: actor.name,
            action: 'deliveryGateway.create',
            target: id,
            outcome: 'success',
            sourceAddress: actor.sourceAddress,
            correlationId: actor.correlationId,
            details: auditDetails(created, body, version),
          },
          tx,
        );
        this.changed(orgId, tx);
        return created;
      });
      return { row, connectionString: input.connectionString ?? null };
    } catch (error) {
      throw translateWriteError(error, orgId, input.name);
    }
  }

  /**
   * PUT with the replace rules of DECISIONS 10: `type` absent or unchanged, attributes left out keep
   * their values, a default gateway keeps its name. `If-Match` is checked before the body; the write
   * is conditional on the version it was merged from, so of two replaces of the same version one
   * wins: with If-Match the other gets 412, without it the other is merged again on the new version.
   */
  async replace(orgId: string, rawId: string, body: unknown, version: ApiVersion, ifMatch: IfMatch | undefined, actor: Actor): Promise<WrittenGateway> {
    const id = parseResourceId(rawId);
    let current = id && (await this.gateways.findWithConnectionString(orgId, id));
    if (!id || !current) throw gatewayNotFound(orgId, rawId);
    if (ifMatch && !ifMatch.matches(current.version)) throw preconditionFailed(`Push delivery gateway ${id}`, current.version);
    refuseLaterAttributes(body, version);
    const input = parseBody(replaceGatewaySchema, body, 'push delivery gateway');
    this.refuseInsideEndpoint(input.connectionString);
    for (let attempt = 1; ; attempt++) {
      const { fields, connectionString } = this.merge(orgId, current, input);
      const from: PushGatewaySecretRow = current;
      let written: PushGatewaySecretRow | undefined;
      try {
        written = await this.db.transaction(async (tx) => {
          const updated = await this.gateways.updateIfVersion(orgId, id, from.version, fields, this.clock.now(), tx);
          if (updated) {
            await this.audit.record(
              {
                org: orgId,
                actor: actor.name,
                action: 'deliveryGateway.replace',
                target: id,
                outcome: 'success',
                sourceAddress: actor.sourceAddress,
                correlationId: actor.correlationId,
                details: auditDetails(updated, body, version),
              },
              tx,
            );
            this.changed(orgId, tx);
          }
          return updated;
        });
      } catch (error) {
        throw translateWriteError(error, orgId, fields.name);
      }
      if (written) {
        return { row: written, connectionString };
      }
      const newer = await this.gateways.findWithConnectionString(orgId, id);
      if (!newer) throw gatewayNotFound(orgId, rawId);
      if (ifMatch?.pinsVersion) throw preconditionFailed(`Push delivery gateway ${id}`, newer.version);
      if (attempt >= REPLACE_ATTEMPTS)
        throw new DomainError('CONFLICT', `Push delivery gateway ${id} is being changed by others at this moment; retry the replace.`);
      current = newer;
    }
  }

  /** DELETE: refused for default gateways and for gateways an authenticator policy still lists (409). */
  async delete(orgId: string, rawId: string, ifMatch: IfMatch | undefined, actor: Actor): Promise<void> {
    const id = parseResourceId(rawId);
    if (!id) throw gatewayNotFound(orgId, rawId);
    try {
      await this.db.transaction(async (tx) => {
        const row = await this.gateways.lock(orgId, id, tx);
        if (!row) throw gatewayNotFound(orgId, rawId);
        if (ifMatch && !ifMatch.matches(row.version)) throw preconditionFailed(`Push delivery gateway ${id}`, row.version);
        if (row.is_default) {
          throw new DomainError(
            'CONFLICT',
            `Push delivery gateway ${id} ("${row.name}") is a default gateway of tenant "${orgId}" and cannot be deleted; configure it instead.`,
          );
        }
        const bound = await this.policies.boundTo(orgId, id, tx);
        if (bound.length > 0) throw stillBound(id, row.name, bound);
        await this.gateways.delete(orgId, id, tx);
        await this.audit.record(
          {
            org: orgId,
            actor: actor.name,
            action: 'deliveryGateway.delete',
            target: id,
            outcome: 'success',
            sourceAddress: actor.sourceAddress,
            correlationId: actor.correlationId,
            details: { name: row.name, type: row.type },
          },
          tx,
        );
        this.changed(orgId, tx);
      });
    } catch (error) {
      // The row lock keeps bindings from appearing meanwhile; the foreign key is the last word anyway.
      if (isPgError(error, PG_FOREIGN_KEY_VIOLATION)) {
        const row = await this.gateways.findById(orgId, id);
        throw stillBound(id, row?.name ?? id, await this.policies.boundTo(orgId, id));
      }
      throw error;
    }
  }

  private merge(orgId: string, current: PushGatewaySecretRow, input: ReplaceGatewayInput): { fields: PushGatewayFields; connectionString: string | null } {
    if (input.type !== undefined && input.type !== current.type) {
      throw new DomainError(
        'MUTABILITY',
        `type cannot change: push delivery gateway ${current.id} is ${current.type}. Leave type out of the replace (or send the same value); create a new gateway for another type.`,
      );
    }
    if (current.is_default && input.name !== undefined && input.name !== current.name) {
      throw new DomainError('MUTABILITY', `name of a default gateway cannot change: push delivery gateway ${current.id} stays "${current.name}".`);
    }
    const { sealed, plain } = this.connectionStringFor(orgId, current, input.connectionString);
    const fields: PushGatewayFields = {
      name: input.name ?? current.name,
      hub: input.hub === undefined ? current.hub : input.hub,
      connectionString: sealed,
      notificationTtlS: input.notificationTimeToLive === undefined ? current.notification_ttl_s : (input.notificationTimeToLive ?? DEFAULT_NOTIFICATION_TTL_S),
      supportedOperatingSystems: input.supportedOperatingSystems === undefined ? current.supported_operating_systems : (input.supportedOperatingSystems ?? []),
      appId: input.appId === undefined ? current.app_id : input.appId,
      notes: input.notes === undefined ? current.notes : input.notes,
      messageTemplates: input.messageTemplates === undefined ? current.message_templates : mergeTemplates(current.message_templates, input.messageTemplates),
    };
    return { fields, connectionString: plain };
  }

  /**
   * The connection string after a replace: the new one sealed, none, or the stored one (left out of
   * the body), opened to echo it and re-sealed when an older key sealed it, so values move to the
   * newest key as gateways are replaced.
   */
  private connectionStringFor(
    orgId: string,
    current: PushGatewaySecretRow,
    given: string | null | undefined,
  ): { sealed: SealedValue | null; plain: string | null } {
    const context = sealContext(orgId, current.id);
    if (given === null) return { sealed: null, plain: null };
    if (given !== undefined) return { sealed: this.cipher.seal(given, context), plain: given };
    if (!current.connectionString) return { sealed: null, plain: null };
    let plain: string;
    try {
      plain = this.cipher.open(current.connectionString, context);
    } catch (error) {
      const reason =
        error instanceof UnknownKeyError
          ? `was sealed with the key "${error.keyId}", which DATA_ENCRYPTION_KEYS no longer holds`
          : `cannot be opened with the key "${current.connectionString.keyId}" (it was altered or belongs to another gateway)`;
      throw new DomainError(
        'CONFLICT',
        `The stored connectionString of push delivery gateway ${current.id} ${reason}; send a new connectionString in this replace.`,
      );
    }
    const sealed = this.cipher.isStale(current.connectionString) ? this.cipher.seal(plain, context) : current.connectionString;
    return { sealed, plain };
  }
}

/** Associated data of a sealed connection string: it opens only in its own gateway row. */
export const sealContext = (orgId: string, id: string): string => `push-delivery-gateway:${orgId}:${id}:connectionString`;

function gatewayNotFound(orgId: string, rawId: string): DomainError {
  return notFound(`Tenant "${orgId}" has no push delivery gateway "${rawId.slice(0, 40)}".`);
}

function stillBound(id: string, name: string, policies: { id: string; name: string }[]): DomainError {
  if (policies.length === 0)
    return new DomainError('CONFLICT', `Push delivery gateway ${id} ("${name}") was being bound to an authenticator policy at that moment; retry the delete.`);
  const named = policies.map((p) => `"${p.name}" (id ${p.id})`).join(', ');
  return new DomainError(
    'CONFLICT',
    `Push delivery gateway ${id} ("${name}") is still bound to authenticator polic${policies.length > 1 ? 'ies' : 'y'} ${named}; remove it from their deliveryGateways first.`,
  );
}

/** A write refused by the database: the name index decides uniqueness, also between concurrent creates. */
function translateWriteError(error: unknown, orgId: string, name: string): unknown {
  if (isPgError(error, PG_UNIQUE_VIOLATION))
    return uniqueness(`Tenant "${orgId}" already has a push delivery gateway named "${name}" (names are unique per tenant, ignoring case).`);
  return error;
}

/** Templates after a change: each of `credential` and `challenge` kept when left out, cleared by null. */
function mergeTemplates(current: MessageTemplates, given: CreateGatewayInput['messageTemplates']): MessageTemplates {
  if (!given) return {};
  const result: MessageTemplates = {};
  for (const key of ['credential', 'challenge'] as const) {
    const value = given[key] === undefined ? current[key] : given[key];
    if (value) result[key] = template(value);
  }
  return result;
}

function template(value: { msg: string; title?: string | null }): MessageTemplate {
  return value.title ? { msg: value.msg, title: value.title } : { msg: value.msg };
}

/** What the audit log keeps of a write: names of the attributes sent, never a value of the connection string. */
function auditDetails(row: PushGatewayRow, body: unknown, version: ApiVersion): Record<string, unknown> {
  const attributes = Object.keys(body as object).filter((key) => key !== 'schemas' && key !== 'id' && key !== 'meta');
  return { name: row.name, type: row.type, version: row.version, apiVersion: version, attributes };
}

/** The outbound rule of notification hubs (DECISIONS 10.2): loopback only with PUSH_LOOPBACK_HUBS=true. */
export function hubPolicy(config: AppConfig): OutboundPolicy {
  return { allowLoopback: config.push.loopbackHubs, loopbackSetting: 'PUSH_LOOPBACK_HUBS' };
}
