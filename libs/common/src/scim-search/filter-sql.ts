import { DomainError } from '../domain-error';
import { CompareOperator, FilterNode, FilterValue } from './filter-ast';
import { invalidFilter } from './filter-parser';
import { ResolvedPath, ScimResourceDefinition, ScimScalarAttribute, filterablePaths, resolvePath } from './resource-definition';

/**
 * Bind parameters of one statement: `add(value)` keeps the value and answers its placeholder. A
 * repository starts it with its own leading parameters (the organization, ...), so placeholders of
 * the filter continue after them. Values never become SQL text.
 */
export class SqlParameters {
  readonly values: unknown[];

  constructor(initial: unknown[] = []) {
    this.values = [...initial];
  }

  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** ISO 8601 date-time as RFC 7643 2.3.5 (xsd:dateTime) writes it; a date alone is refused, a zone is required. */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|([+-])(\d{2}):(\d{2}))$/;

const DATE_TIME_FORM =
  'Compare it with an RFC 3339 date-time such as "2026-01-31T12:00:00.000Z": year 0001 to 9999, a day its month has, ' +
  'hours 00 to 23, minutes and seconds 00 to 59, Z or an offset up to 14:59.';

/**
 * Why a value of the date-time form names no instant, or undefined when it does. Date.parse rolls
 * "2026-02-30" over to March and takes year 0000; PostgreSQL's timestamptz refuses both, so the
 * calendar is checked here, the one place filter values become dates (DECISIONS 7).
 */
function calendarProblem(match: RegExpExecArray): string | undefined {
  const [, yearText, monthText, dayText, hourText, minuteText, secondText = '00', sign, offsetHours, offsetMinutes] = match;
  const [year, month, day] = [Number(yearText), Number(monthText), Number(dayText)];
  if (year === 0) return 'there is no year 0000';
  if (month < 1 || month > 12) return `there is no month ${monthText}`;
  const daysInMonth = month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1];
  if (day < 1 || day > daysInMonth) return `${yearText}-${monthText} has no day ${dayText}`;
  if (Number(hourText) > 23) return `there is no hour ${hourText}`;
  if (Number(minuteText) > 59) return `there is no minute ${minuteText}`;
  if (Number(secondText) > 59) return `there is no second ${secondText}`;
  if (sign && (Number(offsetHours) > 14 || Number(offsetMinutes) > 59)) return `the offset ${sign}${offsetHours}:${offsetMinutes} is beyond 14:59`;
  return undefined;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Gregorian, as PostgreSQL counts (proleptic before 1582). */
function isLeapYear(year: number): boolean {
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
}

/** `co`/`sw`/`ew` values are LIKE patterns: `%`, `_` and the escape character itself are matched literally (DECISIONS 7). */
export function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (c) => `\\${c}`);
}

const SQL_OPERATOR: Record<'eq' | 'gt' | 'ge' | 'lt' | 'le', string> = { eq: '=', gt: '>', ge: '>=', lt: '<', le: '<=' };

/**
 * Translates a parsed filter into a SQL boolean expression over the resource's declared columns,
 * with every value bound through `params`. Paths not declared filterable, values of the wrong type,
 * and operators the attribute type does not support are INVALID_FILTER (RFC 7644 3.4.2.2).
 */
export function compileFilter(node: FilterNode, definition: ScimResourceDefinition, params: SqlParameters): string {
  return new FilterCompiler(definition, params).compile(node);
}

class FilterCompiler {
  constructor(
    private readonly definition: ScimResourceDefinition,
    private readonly params: SqlParameters,
  ) {}

  compile(node: FilterNode, parent?: ResolvedPath & { kind: 'complex' }): string {
    switch (node.kind) {
      case 'and':
        return `(${this.compile(node.left, parent)} AND ${this.compile(node.right, parent)})`;
      case 'or':
        return `(${this.compile(node.left, parent)} OR ${this.compile(node.right, parent)})`;
      case 'not':
        // IS NOT TRUE, not NOT: an absent attribute (SQL NULL) is "not equal", so not (x eq "a") finds it.
        return `((${this.compile(node.filter, parent)}) IS NOT TRUE)`;
      case 'valuePath': {
        const resolved = this.resolve(node.path);
        if (resolved.kind !== 'complex' || !resolved.attribute.multiValued) {
          throw invalidFilter(`Invalid filter: "${node.path}[...]" needs a multi-valued complex attribute; "${resolved.name}" is not one.`);
        }
        // Every condition inside the brackets applies to the same value (RFC 7644 3.4.2.2 valuePath).
        return resolved.attribute.multiValued.exists(this.compile(node.filter, resolved));
      }
      case 'present':
        return this.present(this.resolve(node.path, parent), !!parent);
      case 'compare':
        return this.compare(this.resolve(node.path, parent), node.op, node.value, !!parent);
    }
  }

  private resolve(path: string, parent?: ResolvedPath & { kind: 'complex' }): ResolvedPath {
    const resolved = resolvePath(this.definition, path, parent);
    if (!resolved) {
      const known = parent
        ? Object.keys(parent.attribute.subAttributes).filter((sub) => parent.attribute.subAttributes[sub].column)
        : filterablePaths(this.definition);
      throw invalidFilter(
        `Invalid filter: "${path}" is not an attribute of this resource${parent ? ` inside ${parent.name}[...]` : ''} that can be filtered; use one of ${known.join(', ')}.`,
      );
    }
    return resolved;
  }

  private present(resolved: ResolvedPath, insideValuePath: boolean): string {
    if (resolved.kind === 'complex') {
      if (resolved.attribute.multiValued) return resolved.attribute.multiValued.exists('TRUE');
      const columns = Object.values(resolved.attribute.subAttributes).flatMap((a) => (a.column ? [`${a.column} IS NOT NULL`] : []));
      if (columns.length === 0) throw notFilterable(resolved.name);
      return `(${columns.join(' OR ')})`;
    }
    const column = this.column(resolved);
    const condition = resolved.attribute.type === 'string' ? `(${column} IS NOT NULL AND ${column} <> '')` : `(${column} IS NOT NULL)`;
    return this.scoped(resolved, condition, insideValuePath);
  }

  private compare(resolved: ResolvedPath, op: CompareOperator, value: FilterValue, insideValuePath: boolean): string {
    if (resolved.kind === 'complex') {
      throw invalidFilter(
        `Invalid filter: "${resolved.name}" is a complex attribute; compare one of its sub-attributes (${Object.keys(resolved.attribute.subAttributes)
          .map((s) => `${resolved.name}.${s}`)
          .join(', ')}).`,
      );
    }
    const column = this.column(resolved);
    const condition = this.scoped(resolved, this.condition(resolved.name, resolved.attribute, column, op, value), insideValuePath);
    const indexed = resolved.within?.indexed;
    // A trigram-indexed expression of all the values narrows the rows first (it can only say maybe).
    if (
      indexed &&
      !insideValuePath &&
      typeof value === 'string' &&
      !/["\\]/.test(value) &&
      !resolved.attribute.caseExact &&
      ['eq', 'co', 'sw', 'ew'].includes(op)
    ) {
      return `(${indexed} LIKE lower(${this.params.add(`%${escapeLike(value)}%`)}::text) ESCAPE '\\' AND ${condition})`;
    }
    return condition;
  }

  /** A sub-attribute of a multi-valued attribute, outside brackets, is true when some value satisfies it. */
  private scoped(resolved: ResolvedPath & { kind: 'scalar' }, condition: string, insideValuePath: boolean): string {
    return resolved.within && !insideValuePath ? resolved.within.exists(condition) : condition;
  }

  private column(resolved: ResolvedPath & { kind: 'scalar' }): string {
    if (!resolved.attribute.column) throw notFilterable(resolved.name);
    return resolved.attribute.column;
  }

  private condition(name: string, attribute: ScimScalarAttribute, column: string, op: CompareOperator, value: FilterValue): string {
    if (value === null) {
      // RFC 7644 3.4.2.2 lets null be a compValue; only equality with it means anything.
      if (op === 'eq') return `(${column} IS NULL)`;
      if (op === 'ne') return `(${column} IS NOT NULL)`;
      throw invalidFilter(`Invalid filter: "${name} ${op} null" compares with null; only eq and ne (or pr) can.`);
    }
    switch (attribute.type) {
      case 'string':
        return this.stringCondition(name, attribute, column, op, value);
      case 'dateTime': {
        const match = typeof value === 'string' ? DATE_TIME.exec(value) : null;
        if (!match) throw invalidFilter(`Invalid filter: "${name}" is a date-time; compare it with an ISO 8601 string such as "2026-01-31T12:00:00.000Z".`);
        const problem = calendarProblem(match);
        if (problem) throw invalidFilter(`Invalid filter: "${name}" is a date-time; "${match[0]}" is not a real one (${problem}). ${DATE_TIME_FORM}`);
        return this.ordered(name, 'date-time', `${column}`, op, `${this.params.add(value)}::timestamptz`);
      }
      case 'number':
        if (typeof value !== 'number') throw invalidFilter(`Invalid filter: "${name}" is a number; compare it with a number, not ${JSON.stringify(value)}.`);
        return this.ordered(name, 'number', column, op, `${this.params.add(value)}::numeric`);
      case 'boolean':
        if (typeof value !== 'boolean') throw invalidFilter(`Invalid filter: "${name}" is a boolean; compare it with true or false.`);
        if (op !== 'eq' && op !== 'ne') throw invalidFilter(`Invalid filter: "${name}" is a boolean; only eq and ne apply to it (RFC 7644 3.4.2.2).`);
        return op === 'eq' ? `(${column} = ${this.params.add(value)})` : `(${column} IS DISTINCT FROM ${this.params.add(value)})`;
    }
  }

  private stringCondition(name: string, attribute: ScimScalarAttribute, column: string, op: CompareOperator, value: string | number | boolean): string {
    if (typeof value !== 'string') {
      throw invalidFilter(`Invalid filter: "${name}" is a string; put the value in double quotes (found ${JSON.stringify(value)}).`);
    }
    const fold = (sql: string) => (attribute.caseExact ? sql : `lower(${sql})`);
    const left = fold(column);
    const bind = (text: string) => fold(`${this.params.add(text)}::text`);
    switch (op) {
      case 'co':
        return `(${left} LIKE ${bind(`%${escapeLike(value)}%`)} ESCAPE '\\')`;
      case 'sw':
        if (attribute.prefixIndexed && !attribute.caseExact && prefixHasSuccessor(value)) return this.prefixRange(column, value);
        return `(${left} LIKE ${bind(`${escapeLike(value)}%`)} ESCAPE '\\')`;
      case 'ew':
        return `(${left} LIKE ${bind(`%${escapeLike(value)}`)} ESCAPE '\\')`;
      case 'ne':
        return `(${left} IS DISTINCT FROM ${bind(value)})`;
      default:
        return `(${left} ${SQL_OPERATOR[op]} ${bind(value)})`;
    }
  }

  /**
   * `sw` on a prefix-indexed attribute (resource-definition.ts): the values that start with the
   * lower-cased prefix p are, in code-point order ("C"), exactly those from p up to p with its last
   * character's successor. Bound parameters, so a generic plan (after five executions of the
   * prepared statement) still scans the index range, which a LIKE with a parameter pattern cannot;
   * `%`, `_` and `\\` are plain characters of a range (DECISIONS 7).
   */
  private prefixRange(column: string, value: string): string {
    const indexed = `lower(${column}) COLLATE "C"`;
    const prefix = `lower(${this.params.add(value)}::text)`;
    return `(${indexed} >= ${prefix} AND ${indexed} < (left(${prefix}, -1) || chr(ascii(right(${prefix}, 1)) + 1)))`;
  }

  private ordered(name: string, type: string, left: string, op: CompareOperator, right: string): string {
    if (op === 'co' || op === 'sw' || op === 'ew') throw invalidFilter(`Invalid filter: "${name}" is a ${type}; ${op} applies only to strings.`);
    if (op === 'ne') return `(${left} IS DISTINCT FROM ${right})`;
    return `(${left} ${SQL_OPERATOR[op]} ${right})`;
  }
}

/**
 * Whether the prefix's last character, lower-cased, has a successor that chr() can make: below
 * U+D7FF (the next is a surrogate, and U+10FFFF has none; lower() keeps a character on its side of
 * that line). Otherwise, and for the empty prefix, `sw` stays a LIKE.
 */
function prefixHasSuccessor(value: string): boolean {
  const last = [...value].pop();
  return last !== undefined && last.codePointAt(0)! < 0xd7ff;
}

function notFilterable(name: string): DomainError {
  return invalidFilter(`Invalid filter: "${name}" is returned but cannot be filtered on.`);
}
