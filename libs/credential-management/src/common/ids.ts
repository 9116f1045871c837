const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids of this library's resources are UUIDs; anything else names nothing (404 before any query). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
