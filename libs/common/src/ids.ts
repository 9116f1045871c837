import { randomBytes } from 'node:crypto';

/** Organization ids: 1-64 characters of [A-Za-z0-9_] (no hyphen: it separates org and suffix in a Client ID). */
export const ORG_ID_PATTERN = /^[A-Za-z0-9_]{1,64}$/;

export function isOrgId(value: unknown): value is string {
  return typeof value === 'string' && ORG_ID_PATTERN.test(value);
}

/** A UUID in its text form (any version, either case): the ids the service mints with randomUUID. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `value` can be the id of a row keyed by a UUID: anything else names nothing (a 404 or refusal before any query). */
export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}

/** A base64url string of `bytes` random bytes. */
export function randomToken(bytes: number): string {
  return randomBytes(bytes).toString('base64url');
}

/** ISO 8601 with milliseconds in UTC, the one timestamp format of every response. */
export function isoTimestamp(date: Date): string {
  return date.toISOString();
}
