import { readFileSync } from 'node:fs';
import { DynamicModule, INestApplicationContext, Type } from '@nestjs/common';
import { InvalidArgumentError } from 'commander';
import { Actor } from '@app/audit';
import { Page, invalidValue, parsePage } from '@app/common';

/** What every command needs: the services on the configured database, JSON output, and who acts. */
export interface CliRuntime {
  /** `imports` adds the feature modules a command needs beyond the accounts. */
  withServices<T>(work: (app: INestApplicationContext) => Promise<T>, imports?: (Type | DynamicModule)[]): Promise<T>;
  print(value: unknown): void;
  /** The audit log's actor of every command line change. */
  actor: Actor;
}

/** `true` or `false` for an option; anything else is a usage error (exit 2). */
export function booleanArgument(value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new InvalidArgumentError('must be true or false.');
}

/** Repeatable options (`--group a --group b`) collect into a list. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** `--start-index` and `--count` with the API's rules (a count above 1000 is clamped). */
export function pageOf(options: { startIndex?: string; count?: string }): Page {
  return parsePage({ startIndex: options.startIndex, count: options.count });
}

export const PAGE_OPTIONS: [string, string][] = [
  ['--start-index <n>', 'first result, from 1 (default 1)'],
  ['--count <n>', 'results per page (default 100, at most 1000)'],
];

/** A file the operator names (a PEM); one that cannot be read is refused like bad input (exit 1). */
export function readTextFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw invalidValue(`Cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`);
  }
}

/**
 * A secret read from standard input, never from the command line (where it would sit in the shell
 * history and the process list). One trailing line break is dropped, so `echo` and here-strings work.
 */
export async function readSecretFromStdin(what: string): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write(`Type the ${what}, then press Enter and Ctrl-D:\n`);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  const text = Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
  if (text === '') throw invalidValue(`No ${what} on standard input.`);
  return text;
}
