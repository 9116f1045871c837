import { Page, isoTimestamp, listResponse } from '@app/common';
import { AUTHENTICATOR_POLICY_RESOURCE_TYPE, AUTHENTICATOR_POLICY_SCHEMA } from './authenticator-policy.schema';
import { AuthenticatorPolicyRow } from './authenticator-policy.repository';

export const policyPath = (orgId: string, id?: string): string => `/configuration/${orgId}/v2/Policy/Authenticator${id ? `/${id}` : ''}`;

/** Authenticator policies as SCIM resources; lists are the standard ListResponse (DECISIONS 7). */
export class AuthenticatorPolicyPresenter {
  constructor(private readonly baseUrl: string) {}

  location(orgId: string, id: string): string {
    return `${this.baseUrl}${policyPath(orgId, id)}`;
  }

  policy(row: AuthenticatorPolicyRow) {
    return {
      schemas: [AUTHENTICATOR_POLICY_SCHEMA],
      id: row.id,
      name: row.name,
      ...(row.description !== null ? { description: row.description } : {}),
      deliveryGateways: row.delivery_gateways,
      meta: {
        resourceType: AUTHENTICATOR_POLICY_RESOURCE_TYPE,
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        location: this.location(row.org_id, row.id),
        version: String(row.version),
      },
    };
  }

  list(rows: AuthenticatorPolicyRow[], total: number, page: Page) {
    return listResponse(
      rows.map((row) => this.policy(row)),
      total,
      page,
    );
  }
}
