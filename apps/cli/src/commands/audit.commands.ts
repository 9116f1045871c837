import { Command, Option } from 'commander';
import { AuditRepository, parseAuditFilter, presentAuditEvent } from '@app/audit';
import { listResponse } from '@app/common';
import { CliRuntime, PAGE_OPTIONS, pageOf } from '../cli-runtime';

/** `audit query`: the audit log with the filters of GET .../audit-events (DECISIONS 11), newest first. */
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
    .addOption(new Option('--outcome <outcome>', 'success or failure').choices(['success', 'failure']));
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
}
