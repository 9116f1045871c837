import { Injectable } from '@nestjs/common';
import { AuditLog } from '@app/audit';
import { Clock, DomainError, Page, invalidValue, notFound, parseBody, uniqueness, IfMatch, preconditionFailed, Actor } from '@app/common';
import { Database, PG_UNIQUE_VIOLATION, Transaction, isPgError } from '@app/persistence';
import { parseResourceId } from '../common/request-rules';
import { PushGatewayRepository } from '../gateways/push-gateway.repository';
import { AuthenticatorPolicyFields, AuthenticatorPolicyRepository, AuthenticatorPolicyRow } from './authenticator-policy.repository';
import { createPolicySchema, replacePolicySchema } from './authenticator-policy.schema';

const REPLACE_ATTEMPTS = 5;

/**
 * Authenticator policies and their ordered push gateway bindings (DECISIONS 10, "Binding"). Every
 * bound gateway must be one of the tenant's (checked, and locked against deletion, in the same
 * transaction as the write; the composite foreign key is the last word). Replace follows the
 * gateway rules: attributes left out keep their values, If-Match before the body, conditional write.
 */
@Injectable()
export class AuthenticatorPolicyService {
  constructor(
    private readonly db: Database,
    private readonly policies: AuthenticatorPolicyRepository,
    private readonly gateways: PushGatewayRepository,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
  ) {}

  list(orgId: string, page: Page): Promise<{ rows: AuthenticatorPolicyRow[]; total: number }> {
    return this.policies.list(orgId, page.startIndex - 1, page.count);
  }

  async get(orgId: string, rawId: string): Promise<AuthenticatorPolicyRow> {
    const id = parseResourceId(rawId);
    const row = id && (await this.policies.findById(orgId, id));
    if (!row) throw policyNotFound(orgId, rawId);
    return row;
  }

  async create(orgId: string, body: unknown, actor: Actor): Promise<AuthenticatorPolicyRow> {
    const input = parseBody(createPolicySchema, body, 'authenticator policy');
    const fields: AuthenticatorPolicyFields = { name: input.name, description: input.description ?? null, gatewayIds: input.deliveryGateways ?? [] };
    const created = await this.write(orgId, fields, async (tx) => {
      const id = await this.policies.insert(orgId, fields, this.clock.now(), tx);
      await this.record(orgId, 'authenticatorPolicy.create', id, fields, actor, tx);
      return id;
    });
    return created!;
  }

  async replace(orgId: string, rawId: string, body: unknown, ifMatch: IfMatch | undefined, actor: Actor): Promise<AuthenticatorPolicyRow> {
    const id = parseResourceId(rawId);
    let current = id && (await this.policies.findById(orgId, id));
    if (!id || !current) throw policyNotFound(orgId, rawId);
    if (ifMatch && !ifMatch.matches(current.version)) throw preconditionFailed(`Authenticator policy ${id}`, current.version);
    const input = parseBody(replacePolicySchema, body, 'authenticator policy');
    for (let attempt = 1; ; attempt++) {
      const from: AuthenticatorPolicyRow = current;
      const fields: AuthenticatorPolicyFields = {
        name: input.name ?? from.name,
        description: input.description === undefined ? from.description : input.description,
        gatewayIds: input.deliveryGateways === undefined ? from.delivery_gateways.map((g) => g.value) : (input.deliveryGateways ?? []),
      };
      const written = await this.write(orgId, fields, async (tx) => {
        if (!(await this.policies.updateIfVersion(orgId, id, from.version, fields, this.clock.now(), tx))) return undefined;
        await this.record(orgId, 'authenticatorPolicy.replace', id, fields, actor, tx);
        return id;
      });
      if (written) return written;
      const newer = await this.policies.findById(orgId, id);
      if (!newer) throw policyNotFound(orgId, rawId);
      if (ifMatch?.pinsVersion) throw preconditionFailed(`Authenticator policy ${id}`, newer.version);
      if (attempt >= REPLACE_ATTEMPTS)
        throw new DomainError('CONFLICT', `Authenticator policy ${id} is being changed by others at this moment; retry the replace.`);
      current = newer;
    }
  }

  async delete(orgId: string, rawId: string, ifMatch: IfMatch | undefined, actor: Actor): Promise<void> {
    const id = parseResourceId(rawId);
    if (!id) throw policyNotFound(orgId, rawId);
    await this.db.transaction(async (tx) => {
      const deleted = await this.policies.delete(orgId, id, tx);
      if (!deleted) throw policyNotFound(orgId, rawId);
      // A stale If-Match undoes the delete (the transaction rolls back): one round trip in the usual case.
      if (ifMatch && !ifMatch.matches(deleted.version)) throw preconditionFailed(`Authenticator policy ${id}`, deleted.version);
      await this.audit.record(
        {
          org: orgId,
          actor: actor.name,
          action: 'authenticatorPolicy.delete',
          target: id,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
          details: { name: deleted.name },
        },
        tx,
      );
    });
  }

  /**
   * Runs a create or replace in one transaction after checking the bound gateways, and answers the
   * policy as written (undefined when a conditional replace found a newer version).
   */
  private async write(
    orgId: string,
    fields: AuthenticatorPolicyFields,
    work: (tx: Transaction) => Promise<string | undefined>,
  ): Promise<AuthenticatorPolicyRow | undefined> {
    try {
      return await this.db.transaction(async (tx) => {
        await this.checkGateways(orgId, fields.gatewayIds, tx);
        const id = await work(tx);
        return id === undefined ? undefined : this.policies.findById(orgId, id, tx);
      });
    } catch (error) {
      if (isPgError(error, PG_UNIQUE_VIOLATION)) {
        throw uniqueness(`Tenant "${orgId}" already has an authenticator policy named "${fields.name}" (names are unique per tenant, ignoring case).`);
      }
      throw error;
    }
  }

  private async checkGateways(orgId: string, ids: string[], tx: Transaction): Promise<void> {
    const seen = new Set<string>();
    for (const [index, id] of ids.entries()) {
      if (seen.has(id)) throw invalidValue(`deliveryGateways[${index}].value: gateway "${id}" is listed twice; list each gateway once, in priority order.`);
      seen.add(id);
    }
    const known = await this.gateways.lockForBinding(
      orgId,
      ids.filter((id) => parseResourceId(id) !== undefined),
      tx,
    );
    const index = ids.findIndex((id) => !known.has(id));
    if (index >= 0) {
      throw invalidValue(
        `deliveryGateways[${index}].value: "${ids[index].slice(0, 40)}" is not a push delivery gateway of tenant "${orgId}" (see GET /configuration/${orgId}/v2/DeliveryGateway/Push).`,
      );
    }
  }

  private async record(
    orgId: string,
    action: 'authenticatorPolicy.create' | 'authenticatorPolicy.replace',
    id: string,
    fields: AuthenticatorPolicyFields,
    actor: Actor,
    tx: Transaction,
  ): Promise<void> {
    await this.audit.record(
      {
        org: orgId,
        actor: actor.name,
        action,
        target: id,
        outcome: 'success',
        sourceAddress: actor.sourceAddress,
        correlationId: actor.correlationId,
        details: { name: fields.name, deliveryGateways: fields.gatewayIds },
      },
      tx,
    );
  }
}

function policyNotFound(orgId: string, rawId: string): DomainError {
  return notFound(`Tenant "${orgId}" has no authenticator policy "${rawId.slice(0, 40)}".`);
}
