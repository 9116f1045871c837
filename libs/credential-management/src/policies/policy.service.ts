import { Injectable } from '@nestjs/common';
import { Actor, AuditLog } from '@app/audit';
import { Clock, IfMatch, parseBody, preconditionFailed } from '@app/common';
import { ChangeFeed, Database, FeedCache, Transaction } from '@app/persistence';
import { PolicyRepository, PolicyRow } from './policy.repository';
import { CredentialPolicy, POLICY_DEFAULTS, POLICY_RESOURCES, POLICY_SCHEMAS, PolicyKind, WalletPolicy } from './policy.schema';

export interface PolicyView<K extends PolicyKind = PolicyKind> {
  kind: K;
  orgId: string;
  policy: K extends 'credential' ? CredentialPolicy : WalletPolicy;
  /** Absent while the defaults apply (no administrator has written the policy). */
  row?: PolicyRow;
}

/**
 * CredentialPolicy and WalletPolicy (global), one of each per organization (CREDENTIAL-MANAGEMENT.md
 * "Resources"): the defaults until an administrator writes one, then the stored document over the
 * defaults. Reads come from a per-instance cache the change feed keeps current ('policy'), because
 * every issuance and self-service action reads them.
 */
@Injectable()
export class PolicyService {
  private readonly cache: FeedCache<PolicyRow | null>;

  constructor(
    private readonly db: Database,
    private readonly policies: PolicyRepository,
    private readonly audit: AuditLog,
    private readonly changes: ChangeFeed,
    private readonly clock: Clock,
  ) {
    this.cache = new FeedCache(changes, {
      evicts: (change) => (change.topic === 'policy' ? { key: change.id } : change.topic === 'organization' ? 'all' : undefined),
      maxEntries: 20_000,
    });
  }

  /** `tx`: read on the transaction's connection, past the cache (inside a transaction no read may wait for another pooled connection). */
  async read<K extends PolicyKind>(orgId: string, kind: K, tx?: Transaction): Promise<PolicyView<K>> {
    const row = tx
      ? await this.policies.find(orgId, kind, tx)
      : await this.cache.read(`${orgId}/${kind}`, async () => (await this.policies.find(orgId, kind)) ?? null);
    return viewOf(orgId, kind, row ?? undefined);
  }

  /**
   * PUT: the body is the whole policy; attributes left out take their defaults. `ifMatch` is checked
   * against the version being replaced, under its row lock (the defaults are version 0).
   */
  async replace<K extends PolicyKind>(orgId: string, kind: K, body: unknown, actor: Actor, ifMatch?: IfMatch): Promise<PolicyView<K>> {
    const { resourceType } = POLICY_RESOURCES[kind];
    const { schemas: _schemas, ...rest } = (body !== null && typeof body === 'object' && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
    const document = parseBody(POLICY_SCHEMAS[kind], body === null || typeof body !== 'object' || Array.isArray(body) ? body : rest, resourceType) as Record<
      string,
      unknown
    >;
    const row = await this.db.transaction(async (tx) => {
      const current = await this.policies.findForUpdate(orgId, kind, tx);
      const version = current?.version ?? 0;
      if (ifMatch && !ifMatch.matches(version)) throw preconditionFailed(`${resourceType} of organization "${orgId}"`, version);
      const written = await this.policies.put(orgId, kind, document, this.clock.now(), tx);
      await this.audit.record(
        {
          org: orgId,
          actor: actor.name,
          action: kind === 'credential' ? 'credential_policy.replace' : 'wallet_policy.replace',
          target: 'global',
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
          details: { policy: { ...POLICY_DEFAULTS[kind], ...document }, version: written.version },
        },
        tx,
      );
      this.changes.publishOnCommit(tx, 'policy', [`${orgId}/${kind}`]);
      return written;
    });
    return viewOf(orgId, kind, row);
  }
}

function viewOf<K extends PolicyKind>(orgId: string, kind: K, row: PolicyRow | undefined): PolicyView<K> {
  return { kind, orgId, policy: { ...POLICY_DEFAULTS[kind], ...(row?.document ?? {}) } as PolicyView<K>['policy'], row };
}
