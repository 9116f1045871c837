import { interfaceListResponse, isoTimestamp } from '@app/common';
import { ApiVersion } from '../common/request-rules';
import { ATTRIBUTE_SINCE, PUSH_GATEWAY_RESOURCE_TYPE, PUSH_GATEWAY_SCHEMA } from './push-gateway.schema';
import { PushGatewayRow } from './push-gateway.repository';

export const gatewayPath = (orgId: string, id?: string): string => `/configuration/${orgId}/v2/DeliveryGateway/Push${id ? `/${id}` : ''}`;

/**
 * The gateway as the interface shows it, with the attributes of the request's api-version only
 * (DECISIONS 10). Unset optional attributes are left out (RFC 7643 2.5). `connectionString` is
 * given only by create and replace, whose answers echo it (interface).
 */
export class PushGatewayPresenter {
  constructor(private readonly baseUrl: string) {}

  location(orgId: string, id: string): string {
    return `${this.baseUrl}${gatewayPath(orgId, id)}`;
  }

  gateway(row: PushGatewayRow, version: ApiVersion, connectionString?: string | null): Record<string, unknown> {
    const attributes: Record<string, unknown> = {
      type: row.type,
      name: row.name,
      hub: row.hub ?? undefined,
      connectionString: connectionString ?? undefined,
      notificationTimeToLive: String(row.notification_ttl_s),
      supportedOperatingSystems: row.supported_operating_systems,
      appId: row.app_id ?? undefined,
      messageTemplates: Object.keys(row.message_templates).length > 0 ? row.message_templates : undefined,
      notes: row.notes ?? undefined,
    };
    const visible = Object.entries(attributes).filter(([key, value]) => value !== undefined && ATTRIBUTE_SINCE[key] <= version);
    return {
      schemas: [PUSH_GATEWAY_SCHEMA],
      id: row.id,
      ...Object.fromEntries(visible),
      meta: {
        resourceType: PUSH_GATEWAY_RESOURCE_TYPE,
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        location: this.location(row.org_id, row.id),
        version: String(row.version),
      },
    };
  }

  /** The interface's list: `totalResults` and lower-case `resources` (DECISIONS 7 and 10). */
  list(rows: PushGatewayRow[], version: ApiVersion) {
    return interfaceListResponse(rows.map((row) => this.gateway(row, version)));
  }
}
