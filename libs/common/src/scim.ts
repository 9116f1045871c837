import { invalidValue } from './domain-error';

/** SCIM 2.0 message envelopes (RFC 7644 section 3.4.2 and 3.12). */
export const SCIM_ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const SCIM_LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const SCIM_MEDIA_TYPE = 'application/scim+json';

export interface ScimErrorBody {
  schemas: string[];
  status: string;
  scimType?: string;
  detail: string;
}

export function scimError(status: number, detail: string, scimType?: string): ScimErrorBody {
  return { schemas: [SCIM_ERROR_SCHEMA], status: String(status), ...(scimType ? { scimType } : {}), detail };
}

export interface ListResponse<T> {
  schemas: string[];
  totalResults: number;
  itemsPerPage: number;
  startIndex: number;
  Resources: T[];
}

export function listResponse<T>(resources: T[], totalResults: number, page: Page): ListResponse<T> {
  return { schemas: [SCIM_LIST_SCHEMA], totalResults, itemsPerPage: resources.length, startIndex: page.startIndex, Resources: resources };
}

/**
 * The push gateway list of the interface ("List response (get all gateways)"): `totalResults` and a
 * lower-case `resources`, every item at once. DECISIONS 7 keeps this one exception to the
 * ListResponse; every other list uses listResponse.
 */
export interface InterfaceListResponse<T> {
  schemas: string[];
  totalResults: number;
  resources: T[];
}

export function interfaceListResponse<T>(resources: T[]): InterfaceListResponse<T> {
  return { schemas: [SCIM_LIST_SCHEMA], totalResults: resources.length, resources };
}

export interface Page {
  /** 1-based, as SCIM says. */
  startIndex: number;
  count: number;
}

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

/**
 * Reads `startIndex` and `count` query values. startIndex below 1 reads as 1 and a count above the
 * maximum is clamped (RFC 7644 3.4.2.4; DECISIONS 7); a value that is not a whole number is a 400.
 */
export function parsePage(query: { startIndex?: unknown; count?: unknown }): Page {
  const startIndex = readInteger('startIndex', query.startIndex, 1);
  const count = readInteger('count', query.count, DEFAULT_PAGE_SIZE);
  return { startIndex: Math.max(1, startIndex), count: Math.min(Math.max(0, count), MAX_PAGE_SIZE) };
}

function readInteger(name: string, raw: unknown, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  const text = String(raw);
  if (!/^-?\d{1,9}$/.test(text)) {
    throw invalidValue(`Query parameter ${name} must be a whole number, got "${text.slice(0, 40)}".`);
  }
  return Number(text);
}

export interface ResourceMeta {
  resourceType: string;
  created: string;
  lastModified: string;
  location: string;
  version?: string;
}
