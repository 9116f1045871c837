import { DomainError, invalidValue, z } from '@app/common';

/**
 * Filters of `GET /admin/v1/organizations/{org}/audit-events` (DECISIONS 11) and of the command
 * line's `audit query`. `from` is inclusive, `to` exclusive; `action` is an exact action, or a
 * prefix when it ends in `*` (`user.*`); `code` is the action's numeric code; actor and target match exactly;
 * `q` is free text found anywhere in the actor, the target or the details, in any case.
 */
export interface AuditFilter {
  from?: Date;
  to?: Date;
  actor?: string;
  action?: string;
  /** The action's numeric code (docs/audit-events.md). */
  code?: number;
  /** True when `action` is a prefix (the filter ended in `*`). */
  actionPrefix?: boolean;
  target?: string;
  outcome?: 'success' | 'failure';
  /** Free text: a substring of the actor, the target or the details, in any case. */
  q?: string;
}

export const AUDIT_FILTER_NAMES = ['from', 'to', 'actor', 'action', 'code', 'target', 'outcome', 'q'] as const;
const PAGING_NAMES = ['startIndex', 'count'];

const instant = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time with a time zone, e.g. 2030-01-31T00:00:00Z' });
const text = z.string().min(1, 'must not be empty').max(256, 'must be at most 256 characters');
const schema = z
  .object({
    from: instant.optional(),
    to: instant.optional(),
    actor: text.optional(),
    action: z
      .string()
      .regex(/^[a-z0-9_.]{1,64}\*?$/, 'must be an action such as "system_account.create", or a prefix ending in * such as "user.*"')
      .optional(),
    code: z
      .string()
      .regex(/^[0-9]{1,9}$/, 'must be an event code, a whole number such as 10000 (GET /admin/v1/audit-actions lists them)')
      .optional(),
    target: text.optional(),
    outcome: z.enum(['success', 'failure'], { message: 'must be "success" or "failure"' }).optional(),
    q: z
      .string()
      .trim()
      .min(2, 'must be at least 2 characters (a word of the actor, the target or the details)')
      .max(100, 'must be at most 100 characters')
      .optional(),
  })
  .strict();

/**
 * Reads the filters from query parameters (strings); a bad value is a 400 naming the parameter. An
 * unknown parameter is refused too, so that a misspelt filter (`actr=`) does not silently answer
 * the whole log.
 */
export function parseAuditFilter(query: Record<string, unknown>): AuditFilter {
  const filters: Record<string, unknown> = {};
  const unknown: string[] = [];
  for (const [name, value] of Object.entries(query)) {
    if (PAGING_NAMES.includes(name)) continue;
    if (!(AUDIT_FILTER_NAMES as readonly string[]).includes(name)) unknown.push(name);
    else if (Array.isArray(value)) throw invalidValue(`Query parameter ${name} may be given once.`);
    else if (value !== undefined) filters[name] = value;
  }
  if (unknown.length > 0) {
    throw invalidValue(
      `Unknown query parameter${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `"${n.slice(0, 40)}"`).join(', ')}; the filters are ${AUDIT_FILTER_NAMES.join(', ')}, with startIndex and count.`,
    );
  }
  const result = schema.safeParse(filters);
  if (!result.success) {
    const problems = result.error.issues.slice(0, 5).map((issue) => `${issue.path.join('.') || 'query'}: ${issue.message}`);
    throw new DomainError('INVALID_VALUE', `Invalid audit filter: ${problems.join('; ')}.`);
  }
  const parsed = result.data;
  const filter: AuditFilter = {
    from: parsed.from ? new Date(parsed.from) : undefined,
    to: parsed.to ? new Date(parsed.to) : undefined,
    actor: parsed.actor,
    code: parsed.code === undefined ? undefined : Number(parsed.code),
    target: parsed.target,
    outcome: parsed.outcome,
    q: parsed.q,
  };
  if (parsed.action !== undefined) {
    filter.actionPrefix = parsed.action.endsWith('*');
    filter.action = filter.actionPrefix ? parsed.action.slice(0, -1) : parsed.action;
  }
  if (filter.from && filter.to && filter.from.getTime() >= filter.to.getTime()) {
    throw invalidValue('Invalid audit filter: from must be earlier than to (from is inclusive, to exclusive).');
  }
  return filter;
}
