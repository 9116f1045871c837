import { Command, Option } from 'commander';
import { writeFileSync } from 'node:fs';
import {
  AuditExporter,
  AuditRepository,
  AuditVerifier,
  ChainVerification,
  ExportFormatError,
  verifyExport,
  parseAuditFilter,
  parseFrom,
  presentAuditEvent,
} from '@app/audit';
import { DomainError, invalidValue, listResponse, notFound } from '@app/common';
import { AppConfig } from '@app/config';
import { HsmModule } from '@app/hsm';
import { LOGGER, Logger } from '@app/observability';
import { Database } from '@app/persistence';
import { hsmOptions } from '../../../api/src/app.module';
import { CliRuntime, PAGE_OPTIONS, pageOf, readTextFile } from '../cli-runtime';

/**
 * `audit query`: the audit log with the filters of GET .../audit-events (DECISIONS 11), newest first.
 * `audit verify`: the hash chain and its signed checkpoints, as GET /admin/v1/audit-verification (DECISIONS 11.2).
 */
export function registerAuditCommands(program: Command, cli: CliRuntime): void {
  const audit = program.command('audit').description('The append-only audit log.');
  const query = audit
    .command('query')
    .description("Query audit events, newest first: one organization's (--org), or every organization's and the platform's.")
    .option('--org <org>', 'organization id (default: all, including events of no organization)')
    .option('--from <iso>', 'from this time, inclusive (ISO 8601 with a time zone)')
    .option('--to <iso>', 'until this time, exclusive (ISO 8601 with a time zone)')
    .option('--actor <actor>', 'Client ID, userName, "system" or "cli"')
    .option('--action <action>', 'an action such as system_account.create, or a prefix ending in * such as user.*')
    .option('--code <code>', 'the numeric event code, e.g. 10000 (docs/audit-events.md)')
    .option('--target <target>', 'the target, e.g. a Client ID or a user id')
    .addOption(new Option('--outcome <outcome>', 'success or failure').choices(['success', 'failure']))
    .option('--q <text>', 'free text (2-100 characters) found in the actor, the target or the details, in any case');
  for (const [flags, text] of PAGE_OPTIONS) query.option(flags, text);
  query.action(
    async (options: {
      org?: string;
      startIndex?: string;
      count?: string;
      from?: string;
      to?: string;
      actor?: string;
      action?: string;
      code?: string;
      target?: string;
      outcome?: string;
      q?: string;
    }) => {
      const { org, startIndex, count, ...filters } = options;
      const page = pageOf({ startIndex, count });
      const filter = parseAuditFilter(filters);
      await cli.withServices(async (app) => {
        const { rows, total } = await app.get(AuditRepository).query(org, filter, page.startIndex - 1, page.count);
        cli.print(listResponse(rows.map(presentAuditEvent), total, page));
      });
    },
  );

  audit
    .command('verify')
    .description(
      "Re-walk a hash chain and its signed checkpoints (opens the HSM like the service): the organization's, or every chain (each organization's and the platform's own) when none is named. Prints one result per chain; exit code 1 when any names a problem.",
    )
    .argument('[org]', 'organization id (default: every chain)')
    .option('--from <seq>', 'start at this chain position, trusting the digest stored there (default 1)')
    .action(async (org: string | undefined, options: { from?: string }) => {
      const from = parseFrom(options.from);
      const results = await cli.withServices(
        async (app) => {
          const verifier = app.get(AuditVerifier);
          if (org !== undefined) {
            if (!(await app.get(AuditRepository).hasEventsOf(org))) throw notFound(`No audit events of organization ${org}: check the organization id.`);
            return [await verifier.verifyChain(org, from)];
          }
          // Every chain that has events, read from the events themselves (not the chainer's list of heads).
          const chains = await app.get(Database).query<{ org_id: string | null }>('SELECT DISTINCT org_id FROM audit_events ORDER BY org_id NULLS FIRST');
          const all: ChainVerification[] = [];
          for (const chain of chains) all.push(await verifier.verifyChain(chain.org_id, from));
          return all;
        },
        [HsmModule.forRootAsync({ inject: [AppConfig, LOGGER], useFactory: (config: AppConfig, logger: Logger) => hsmOptions(config, logger) })],
      );
      cli.print(results);
      const failed = results.filter((result) => !result.verified);
      if (failed.length > 0) {
        throw new DomainError('CONFLICT', failed.map((result) => `${result.org ?? '(platform)'}: ${result.problem!.detail}`).join('; '));
      }
    });

  audit
    .command('export')
    .description(
      'Write one chain as JSON lines that verify offline (DECISIONS 11.2; docs/audit-events.md, "Offline verification"): a header with the checkpoint public key, every event with its digests and the content they cover, every signed checkpoint. Opens the HSM like the service (for the public key only).',
    )
    .argument('[org]', "organization id (default: the platform's own chain, events of no organization)")
    .option('--from <seq>', 'start at this chain position (default 1)')
    .option('--out <file>', 'write to this file (default: standard output)')
    .action(async (org: string | undefined, options: { from?: string; out?: string }) => {
      const from = parseFrom(options.from);
      const lines = await cli.withServices(
        async (app) => {
          if (org !== undefined && !(await app.get(AuditRepository).hasEventsOf(org)))
            throw notFound(`No audit events of organization ${org}: check the organization id.`);
          const written: string[] = [];
          await app.get(AuditExporter).export(org ?? null, from, (line) => written.push(line));
          return written;
        },
        [HsmModule.forRootAsync({ inject: [AppConfig, LOGGER], useFactory: (config: AppConfig, logger: Logger) => hsmOptions(config, logger) })],
      );
      const text = lines.map((line) => `${line}\n`).join('');
      if (options.out === undefined) process.stdout.write(text);
      else {
        try {
          writeFileSync(options.out, text, { flag: 'wx' });
        } catch (error) {
          throw invalidValue(
            `Cannot write ${options.out}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message} (an existing file is never overwritten).`,
          );
        }
      }
    });

  audit
    .command('verify-export')
    .description(
      'Verify an export of `audit export` with no database and no HSM: every digest, every link, every checkpoint signature. Prints the result; exit code 1 when it names a problem. Without --key the key in the export is used: compare its kid with GET /audit/v1/checkpoint-key.',
    )
    .argument('<file>', 'the export (JSON lines)')
    .option('--key <file>', 'the checkpoint public key, as a JWK (GET /audit/v1/checkpoint-key) or a PEM file')
    .action((file: string, options: { key?: string }) => {
      const lines = readTextFile(file).split('\n');
      const keyText = options.key === undefined ? undefined : readTextFile(options.key);
      let result;
      try {
        result = verifyExport(lines, keyText);
      } catch (error) {
        if (error instanceof ExportFormatError) throw invalidValue(`${file}: ${error.message}.`);
        throw error;
      }
      cli.print(result);
      if (!result.verified) throw new DomainError('CONFLICT', `${result.org ?? '(platform)'}: ${result.problem!.detail}`);
    });
}
