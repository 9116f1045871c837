import { DomainError, invalidValue } from '@app/common';
import { ATR_PATTERN, ATR_RULE, CUID_PATTERN, CUID_RULE, canonicalExternalId } from '../device.schema';

/** One line of an import: a valid {ATR, CUID} or the reason it cannot be imported. */
export type ImportEntry = { line: number; ATR: string; CUID: string; problem?: undefined } | { line: number; ATR?: string; CUID?: string; problem: string };

/** At most this many devices per import; a larger list is split by the caller. */
export const MAX_IMPORT_ENTRIES = 10_000;

/**
 * Reads a bulk import (DECISIONS 11 `POST /organizations/{org}/devices/import`): a JSON array of
 * `{ATR, CUID}` (line = position in the array, from 1), or CSV text with one `ATR,CUID` per line
 * (line = line number in the file, from 1; an optional header line `ATR,CUID` in either order sets
 * the columns; `;` separates too; blank lines are skipped). Each line is checked on its own, so one
 * bad line never hides the others; a CUID that repeats an earlier line is refused on the later one.
 */
export function parseImport(body: unknown, format: 'json' | 'csv'): ImportEntry[] {
  const entries = format === 'json' ? fromJson(body) : fromCsv(body);
  if (entries.length === 0) throw invalidValue('The import holds no devices.');
  if (entries.length > MAX_IMPORT_ENTRIES)
    throw invalidValue(`The import holds ${entries.length} devices; at most ${MAX_IMPORT_ENTRIES} per request, so split it.`);
  const firstLineOf = new Map<string, number>();
  return entries.map((entry) => {
    if (entry.problem !== undefined) return entry;
    const earlier = firstLineOf.get(entry.CUID);
    if (earlier !== undefined) return { ...entry, problem: `CUID ${entry.CUID} repeats line ${earlier}` };
    firstLineOf.set(entry.CUID, entry.line);
    return entry;
  });
}

/** The format a Content-Type announces: JSON types, or CSV/plain text; anything else 415. */
export function importFormat(contentType: string | undefined): 'json' | 'csv' {
  const type = contentType?.split(';')[0].trim().toLowerCase() ?? '';
  if (type === 'application/json' || /^application\/[\w.-]+\+json$/.test(type)) return 'json';
  if (type === 'text/csv' || type === 'text/plain') return 'csv';
  throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'Send the devices as a JSON array of {ATR, CUID} (application/json) or as CSV lines ATR,CUID (text/csv).');
}

function check(line: number, atr: unknown, cuid: unknown): ImportEntry {
  if (typeof atr !== 'string' || !ATR_PATTERN.test(atr)) {
    return { line, ...(typeof cuid === 'string' ? { CUID: cuid } : {}), problem: atr === undefined || atr === '' ? 'ATR is missing' : `ATR ${ATR_RULE}` };
  }
  if (typeof cuid !== 'string' || !CUID_PATTERN.test(cuid)) {
    return { line, ATR: atr.toUpperCase(), problem: cuid === undefined || cuid === '' ? 'CUID is missing' : `CUID ${CUID_RULE}` };
  }
  return { line, ATR: atr.toUpperCase(), CUID: cuid };
}

function fromJson(body: unknown): ImportEntry[] {
  if (!Array.isArray(body)) throw new DomainError('INVALID_SYNTAX', 'A JSON import is an array of {ATR, CUID} objects.');
  return body.map((item, index) => {
    const line = index + 1;
    if (item === null || typeof item !== 'object' || Array.isArray(item)) return { line, problem: 'is not an {ATR, CUID} object' };
    const { ATR, CUID, ...rest } = canonicalExternalId(item) as Record<string, unknown>;
    const extra = Object.keys(rest);
    if (extra.length > 0)
      return { line, problem: `${extra.map((k) => `"${k.slice(0, 40)}"`).join(', ')} ${extra.length > 1 ? 'are' : 'is'} not part of {ATR, CUID}` };
    return check(line, ATR, CUID);
  });
}

function fromCsv(body: unknown): ImportEntry[] {
  if (typeof body !== 'string') throw new DomainError('INVALID_SYNTAX', 'A CSV import is text with one ATR,CUID per line.');
  const lines = body.replace(/^\uFEFF/, '').split(/\r?\n/);
  let columns = { atr: 0, cuid: 1 };
  const entries: ImportEntry[] = [];
  let first = true;
  for (const [index, text] of lines.entries()) {
    if (text.trim() === '') continue;
    const cells = text.split(/[,;]/).map((cell) =>
      cell
        .trim()
        .replace(/^"(.*)"$/, '$1')
        .trim(),
    );
    if (first) {
      first = false;
      const names = cells.map((cell) => cell.toUpperCase());
      if (names.length === 2 && names.includes('ATR') && names.includes('CUID')) {
        columns = { atr: names.indexOf('ATR'), cuid: names.indexOf('CUID') };
        continue;
      }
    }
    if (cells.length !== 2) {
      entries.push({ line: index + 1, problem: `has ${cells.length} field${cells.length === 1 ? '' : 's'}; a line is ATR,CUID` });
      continue;
    }
    entries.push(check(index + 1, cells[columns.atr], cells[columns.cuid]));
  }
  return entries;
}
