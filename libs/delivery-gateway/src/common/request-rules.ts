import { DomainError, Principal, forbidden, invalidValue } from '@app/common';

/**
 * Rules every route of the configuration family shares: the tenant in the path, numeric resource
 * ids, `If-Match`, and the gateway's `api-version` query parameter.
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

/**
 * A parsed `If-Match` header (RFC 9110 13.1.1), compared weakly as RFC 7644 3.14 does: `W/"3"` and
 * `"3"` both match version 3, `*` matches any current version. Absent: no precondition.
 */
export class IfMatch {
  private constructor(
    readonly any: boolean,
    private readonly tags: string[],
  ) {}

  static parse(header: string | string[] | undefined): IfMatch | undefined {
    if (header === undefined) return undefined;
    const text = (Array.isArray(header) ? header.join(',') : header).trim();
    if (text === '*') return new IfMatch(true, []);
    const tags: string[] = [];
    for (const part of text.split(',')) {
      const match = /^\s*(?:W\/)?"([\x21\x23-\x7e]*)"\s*$/.exec(part);
      if (!match) {
        throw invalidValue('The header If-Match must be "*" or a list of entity tags such as W/"3" (the ETag of the version you read).');
      }
      tags.push(match[1]);
    }
    return new IfMatch(false, tags);
  }

  matches(version: number): boolean {
    return this.any || this.tags.includes(String(version));
  }

  /** A specific version was asked for: a concurrent change must fail rather than be retried over. */
  get pinsVersion(): boolean {
    return !this.any;
  }
}

export function preconditionFailed(what: string, version: number): DomainError {
  return new DomainError(
    'PRECONDITION_FAILED',
    `${what} has changed: its current version is ${version} (ETag W/"${version}"), not the one in If-Match. Read it again and retry.`,
  );
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
