import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '@app/persistence';

/** A policy with its bindings in priority order; `display` is the bound gateway's current name. */
export interface AuthenticatorPolicyRow {
  id: string;
  org_id: string;
  name: string;
  description: string | null;
  delivery_gateways: { value: string; display: string }[];
  created_at: Date;
  updated_at: Date;
  version: number;
}

export interface AuthenticatorPolicyFields {
  name: string;
  description: string | null;
  /** Gateway ids in priority order. */
  gatewayIds: string[];
}

const SELECT = `
  SELECT p.id::text AS id, p.org_id, p.name, p.description, p.created_at, p.updated_at, p.version,
         COALESCE((SELECT json_agg(json_build_object('value', g.id::text, 'display', g.name) ORDER BY b.position)
                     FROM authenticator_policy_gateways b
                     JOIN push_delivery_gateways g ON g.org_id = b.org_id AND g.id = b.gateway_id
                    WHERE b.policy_id = p.id), '[]'::json) AS delivery_gateways
    FROM authenticator_policies p`;

/** SQL of authenticator policies and their gateway bindings, scoped to one organization (DECISIONS 2). */
@Injectable()
export class AuthenticatorPolicyRepository {
  constructor(private readonly db: Database) {}

  async list(orgId: string, offset: number, limit: number): Promise<{ rows: AuthenticatorPolicyRow[]; total: number }> {
    const rows = await this.db.query<AuthenticatorPolicyRow & { total: string }>(
      `SELECT q.*, count(*) OVER () AS total FROM (${SELECT} WHERE p.org_id = $1) AS q ORDER BY q.id::bigint OFFSET $2 LIMIT $3`,
      [orgId, offset, limit],
    );
    const total = rows.length > 0 ? Number(rows[0].total) : await this.count(orgId);
    return { rows: rows.map(({ total: _total, ...row }) => row), total };
  }

  async findById(orgId: string, id: string, tx?: Transaction): Promise<AuthenticatorPolicyRow | undefined> {
    const [row] = await this.db.query<AuthenticatorPolicyRow>(`${SELECT} WHERE p.org_id = $1 AND p.id = $2`, [orgId, id], tx);
    return row;
  }

  async insert(orgId: string, fields: AuthenticatorPolicyFields, now: Date, tx: Transaction): Promise<string> {
    const [row] = await this.db.query<{ id: string }>(
      `INSERT INTO authenticator_policies (org_id, name, description, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) RETURNING id::text AS id`,
      [orgId, fields.name, fields.description, now],
      tx,
    );
    await this.bind(orgId, row.id, fields.gatewayIds, tx);
    return row.id;
  }

  /** Writes a replace only if the policy is still at `expectedVersion`; false when it was not. */
  async updateIfVersion(orgId: string, id: string, expectedVersion: number, fields: AuthenticatorPolicyFields, now: Date, tx: Transaction): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE authenticator_policies SET name = $4, description = $5, updated_at = $6, version = version + 1
        WHERE org_id = $1 AND id = $2 AND version = $3 RETURNING id`,
      [orgId, id, expectedVersion, fields.name, fields.description, now],
      tx,
    );
    if (rows.length === 0) return false;
    await this.db.query('DELETE FROM authenticator_policy_gateways WHERE org_id = $1 AND policy_id = $2', [orgId, id], tx);
    await this.bind(orgId, id, fields.gatewayIds, tx);
    return true;
  }

  async delete(orgId: string, id: string, tx: Transaction): Promise<{ name: string; version: number } | undefined> {
    const [row] = await this.db.query<{ name: string; version: number }>(
      'DELETE FROM authenticator_policies WHERE org_id = $1 AND id = $2 RETURNING name, version',
      [orgId, id],
      tx,
    );
    return row;
  }

  /** The policies that list a gateway (a gateway they list cannot be deleted). */
  async boundTo(orgId: string, gatewayId: string, tx?: Transaction): Promise<{ id: string; name: string }[]> {
    return this.db.query<{ id: string; name: string }>(
      `SELECT p.id::text AS id, p.name FROM authenticator_policy_gateways b JOIN authenticator_policies p ON p.id = b.policy_id
        WHERE b.org_id = $1 AND b.gateway_id = $2 ORDER BY p.id`,
      [orgId, gatewayId],
      tx,
    );
  }

  private async count(orgId: string): Promise<number> {
    const [row] = await this.db.query<{ n: string }>('SELECT count(*) AS n FROM authenticator_policies WHERE org_id = $1', [orgId]);
    return Number(row.n);
  }

  private async bind(orgId: string, policyId: string, gatewayIds: string[], tx: Transaction): Promise<void> {
    if (gatewayIds.length === 0) return;
    await this.db.query(
      `INSERT INTO authenticator_policy_gateways (org_id, policy_id, position, gateway_id)
       SELECT $1, $2, ordinality, gateway_id FROM unnest($3::bigint[]) WITH ORDINALITY AS t(gateway_id, ordinality)`,
      [orgId, policyId, gatewayIds],
      tx,
    );
  }
}
