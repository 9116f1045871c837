import { Principal, forbidden, invalidValue } from '@app/common';

/**
 * Rules every route of the configuration family shares: the tenant in the path, numeric resource
 * ids, and the gateway's `api-version` query parameter. (If-Match and ETags are the shared rule of
 * every versioned resource, in @app/common.)
 */

/** DECISIONS 1: `{tenant}` is an organization id and must be the caller's own organization (else 403). */
export function requireTenant(principal: Principal, tenant: string): string {
  if (tenant !== principal.org) {
    throw forbidden(`Tenant "${tenant.slice(0, 64)}" in the path is not your organization; this token acts only in tenant "${principal.org}".`);
  }
  return tenant;
}

/** Ids are numeric strings assigned by the service; anything else names no resource (404, as an unknown id). */
export function parseResourceId(raw: string): string | undefined {
  return /^[1-9]\d{0,17}$/.test(raw) ? raw : undefined;
}

export type ApiVersion = 1 | 2 | 3;
export const LATEST_API_VERSION: ApiVersion = 3;

/** Interface, Versioning 1-2 and DECISIONS 10: `api-version=N`, 1 (default), 2 or 3; anything else 400. */
export function parseApiVersion(query: Record<string, unknown> | undefined): ApiVersion {
  const raw = query?.['api-version'];
  if (raw === undefined) return 1;
  if (raw === '1' || raw === '2' || raw === '3') return Number(raw) as ApiVersion;
  const shown = Array.isArray(raw) ? raw.join(', ') : String(raw);
  throw invalidValue(`Query parameter api-version must be 1, 2 or 3 (3 is the latest; without it, 1 applies); got "${shown.slice(0, 20)}".`);
}
