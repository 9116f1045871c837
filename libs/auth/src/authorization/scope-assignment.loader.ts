import { readFileSync } from 'node:fs';
import { ALL_SCOPES, Scope } from './permissions';
import { RoleCatalog, isScope } from './role-catalog';

export class ScopeAssignmentError extends Error {
  constructor(file: string, line: number | undefined, problem: string) {
    super(`${file}${line === undefined ? '' : `:${line}`}: ${problem}`);
    this.name = 'ScopeAssignmentError';
  }
}

interface Entry<T> {
  value: T;
  line: number;
}

const KEY = /^roleWithScope\.(name|scopes|operatorDependent)\.([A-Za-z0-9_]+)$/;

/**
 * Reads scopeAssignment.properties (interface, Authentication 12; DECISIONS 5.1) once at boot.
 * Format: `roleWithScope.name.{id}=<role>`, `roleWithScope.scopes.{id}=<comma-separated scopes>`,
 * and the optional extension `roleWithScope.operatorDependent.{id}=true|false`; `#` and `!` start
 * comments. Every malformed case refuses the start with the file, the line and the problem.
 */
export function loadScopeAssignment(file: string): RoleCatalog {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ScopeAssignmentError(
      file,
      undefined,
      `cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); set SCOPE_ASSIGNMENT_FILE to the role-to-scope mapping.`,
    );
  }
  return parseScopeAssignment(text, file);
}

export function parseScopeAssignment(text: string, file: string): RoleCatalog {
  const names = new Map<string, Entry<string>>();
  const scopes = new Map<string, Entry<Scope[]>>();
  const dependent = new Map<string, Entry<boolean>>();
  const roleNames = new Map<string, number>();

  text.split(/\r?\n/).forEach((raw, index) => {
    const line = index + 1;
    const content = raw.trim();
    if (content === '' || content.startsWith('#') || content.startsWith('!')) return;
    const separator = content.search(/[=:]/);
    if (separator < 0) throw new ScopeAssignmentError(file, line, `malformed line "${content}": expected key=value.`);
    const key = content.slice(0, separator).trim();
    const value = content.slice(separator + 1).trim();
    const match = KEY.exec(key);
    if (!match) {
      throw new ScopeAssignmentError(
        file,
        line,
        `unknown key "${key}": expected roleWithScope.name.{id}, roleWithScope.scopes.{id} or roleWithScope.operatorDependent.{id}.`,
      );
    }
    const [, kind, id] = match;
    const seen = { name: names, scopes, operatorDependent: dependent }[kind] as Map<string, Entry<unknown>>;
    if (seen.has(id)) throw new ScopeAssignmentError(file, line, `duplicate key ${key} (first on line ${seen.get(id)!.line}).`);
    if (kind === 'name') {
      if (value === '') throw new ScopeAssignmentError(file, line, `${key} has an empty role name.`);
      if (roleNames.has(value)) throw new ScopeAssignmentError(file, line, `duplicate role name "${value}" (first on line ${roleNames.get(value)}).`);
      roleNames.set(value, line);
      names.set(id, { value, line });
    } else if (kind === 'scopes') {
      const tokens = value === '' ? [] : value.split(',').map((t) => t.trim());
      const unknown = tokens.find((t) => !isScope(t));
      if (unknown !== undefined) {
        throw new ScopeAssignmentError(file, line, `unknown scope "${unknown}"; the scopes are ${ALL_SCOPES.join(', ')}.`);
      }
      scopes.set(id, { value: [...new Set(tokens as Scope[])], line });
    } else {
      if (value !== 'true' && value !== 'false') throw new ScopeAssignmentError(file, line, `${key} must be true or false, not "${value}".`);
      dependent.set(id, { value: value === 'true', line });
    }
  });

  for (const [id, entry] of names) {
    if (!scopes.has(id))
      throw new ScopeAssignmentError(
        file,
        entry.line,
        `role "${entry.value}" (id ${id}) has no roleWithScope.scopes.${id} line; give it one (it may be empty).`,
      );
  }
  for (const [id, entry] of scopes) {
    if (!names.has(id)) throw new ScopeAssignmentError(file, entry.line, `roleWithScope.scopes.${id} has no roleWithScope.name.${id} line.`);
  }
  for (const [id, entry] of dependent) {
    if (!names.has(id)) throw new ScopeAssignmentError(file, entry.line, `roleWithScope.operatorDependent.${id} has no roleWithScope.name.${id} line.`);
  }
  return new RoleCatalog(
    [...names].map(([id, name]) => ({ name: name.value, scopes: scopes.get(id)!.value, operatorDependent: dependent.get(id)?.value ?? false })),
  );
}
