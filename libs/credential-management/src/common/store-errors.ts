import { notFound, uniqueness } from '@app/common';
import { PG_FOREIGN_KEY_VIOLATION, PG_UNIQUE_VIOLATION, isPgError } from '@app/persistence';

/**
 * A write that the database may refuse for a reason the caller can act on: a name already taken in
 * the organization (unique index, 409 uniqueness, also under concurrent writes) or an organization
 * that does not exist (foreign key; reached from the command line, where no access rule checked it).
 */
export async function refusedWrite<T>(orgId: string, taken: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (isPgError(error, PG_UNIQUE_VIOLATION)) throw uniqueness(taken);
    if (isPgError(error, PG_FOREIGN_KEY_VIOLATION)) throw notFound(`Organization "${orgId}" does not exist.`);
    throw error;
  }
}
