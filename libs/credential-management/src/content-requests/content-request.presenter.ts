import { CANONICAL_PREFIX, ScimSearch, isoTimestamp, listResponse, projectResource } from '@app/common';
import { ContentRequestRow } from './content-request.repository';
import { CONTENT_REQUEST_SCHEMA, CONTENT_REQUEST_SEARCH_DEFINITION } from './content-request.schema';

/** The ContentRequest resource (CREDENTIAL-MANAGEMENT.md "Resources"); references carry value, display, $ref and type. */
export class ContentRequestPresenter {
  constructor(private readonly baseUrl: string) {}

  location(id: string): string {
    return `${this.baseUrl}${CANONICAL_PREFIX}/ContentRequest/${id}`;
  }

  /** A `.search` answer (operators' and a cardholder's own): the page, projected as the SearchRequest asks. */
  page({ rows, total }: { rows: ContentRequestRow[]; total: number }, search: ScimSearch) {
    return listResponse(
      rows.map((row) => projectResource(this.request(row), CONTENT_REQUEST_SEARCH_DEFINITION, search)),
      total,
      search.page,
    );
  }

  request(row: ContentRequestRow) {
    return {
      schemas: [CONTENT_REQUEST_SCHEMA],
      id: row.id,
      type: row.type,
      status: row.status,
      target: {
        device: { value: row.device_id, $ref: `${this.baseUrl}${CANONICAL_PREFIX}/Device/${row.device_id}`, type: 'Device' },
        ...(row.device_policy_id
          ? {
              devicePolicy: {
                value: row.device_policy_id,
                display: row.device_policy_name,
                $ref: `${this.baseUrl}${CANONICAL_PREFIX}/DevicePolicy/${row.device_policy_id}`,
                type: 'DevicePolicy',
              },
            }
          : {}),
      },
      ...(row.wallet_id
        ? { wallet: { value: row.wallet_id, display: row.owner_user_name, $ref: `${this.baseUrl}${CANONICAL_PREFIX}/Wallet/${row.wallet_id}`, type: 'Wallet' } }
        : {}),
      reason: row.reason,
      parameters: row.parameters,
      requestedBy: row.requested_by,
      ...(row.approved_by ? { approvedBy: row.approved_by } : {}),
      expiresAt: isoTimestamp(row.expires_at),
      ...(row.failure_detail ? { failure: { detail: row.failure_detail } } : {}),
      meta: {
        resourceType: 'ContentRequest',
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        location: this.location(row.id),
        version: String(row.version),
      },
    };
  }
}
