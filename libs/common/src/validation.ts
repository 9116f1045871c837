import { z } from 'zod';
import { DomainError, invalidValue } from './domain-error';

/**
 * Validates a request body against a zod schema and turns the first problems into one SCIM 400
 * whose detail names each field and what is wrong (DECISIONS 7). Schemas are `.strict()`, so an
 * attribute no schema declares is refused by name; the read-only `meta`, and `id` where the schema
 * does not make it writable, are ignored (DECISIONS 7), so a GET answer can be sent back as it is.
 */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown, what = 'request body'): z.infer<T> {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new DomainError('INVALID_SYNTAX', `The ${what} must be a JSON object.`);
  }
  const writableId = schema instanceof z.ZodObject && 'id' in schema.shape;
  const { meta: _meta, ...rest } = body as Record<string, unknown>;
  if (!writableId) delete rest.id;
  const result = schema.safeParse(rest);
  if (result.success) return result.data;
  const problems = result.error.issues.slice(0, 5).map(describeIssue);
  throw new DomainError('INVALID_VALUE', `Invalid ${what}: ${problems.join('; ')}.`);
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') {
    return `attribute${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')} ${issue.keys.length > 1 ? 'are' : 'is'} not part of this resource`;
  }
  const field = issue.path.length > 0 ? issue.path.join('.') : 'body';
  return `${field}: ${issue.message}`;
}

/** `?force=true|false` (deletes that cascade); anything else is a 400 naming the parameter. */
export function readForce(value: unknown): boolean {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  throw invalidValue(`Query parameter force must be true or false, got "${String(value).slice(0, 40)}".`);
}

export { z };
