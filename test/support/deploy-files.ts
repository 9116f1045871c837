import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

/** Shared by the deployment checks (test/deploy-*.spec.ts): the repository's deployment files, parsed. */
export const ROOT = resolve(__dirname, '../..');

export const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

/**
 * Every document of a YAML file, parsed as its consumer does: Kubernetes (go-yaml v2) reads YAML 1.1,
 * where `0440` is octal; Compose (go-yaml v3) reads YAML 1.2 with `<<` merge keys. A syntax error
 * fails the test that reads the file.
 */
export function yamlDocuments(path: string, consumer: 'kubernetes' | 'compose'): Record<string, unknown>[] {
  const options = consumer === 'kubernetes' ? { version: '1.1' as const } : { version: '1.2' as const, merge: true };
  return parseAllDocuments(read(path), options).map((document) => {
    if (document.errors.length > 0) throw new Error(`${path}: ${document.errors.map((e) => e.message).join('; ')}`);
    return document.toJS() as Record<string, unknown>;
  });
}

/**
 * A variable that carries a secret: it may come only from a secret store, never as a literal value.
 * `*_FILE` variables name a file that holds the secret, and are not secrets themselves.
 */
export const isSecretName = (name: string): boolean =>
  /SECRET|PASSWORD|PASSWD|PEPPER|_PIN$|TOKEN$|PRIVATE|CREDENTIAL|ENCRYPTION_KEYS|DATABASE_URL/i.test(name) && !/_FILE$/i.test(name);

/** The variables the service reads (README, Configuration), from that table's first column. */
export function documentedVariables(): Set<string> {
  const names = new Set<string>();
  for (const line of read('README.md').split('\n')) {
    const first = /^\| ([^|]+) \|/.exec(line)?.[1] ?? '';
    for (const match of first.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) names.add(match[1]);
  }
  return names;
}

/** A Go duration as Compose writes them (`1m30s`, `25s`), in seconds. */
export function durationSeconds(text: string): number {
  const units: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 0.001, us: 1e-6, ns: 1e-9 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|ns)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) throw new Error(`not a duration: ${text}`);
  return parts.reduce((sum, p) => sum + Number(p[1]) * units[p[2]], 0);
}
