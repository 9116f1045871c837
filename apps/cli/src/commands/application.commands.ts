import { Command } from 'commander';
import { CertifiedApplicationService, addApplicationSchema } from '@app/accounts';
import { listResponse, parseBody } from '@app/common';
import { CliRuntime, PAGE_OPTIONS, pageOf } from '../cli-runtime';

/** `application add|list|remove`: certified Application-IDs of an organization (DECISIONS 6 and 11). */
export function registerApplicationCommands(program: Command, cli: CliRuntime): void {
  const application = program.command('application').description('Certified Application-IDs (for applicationIdPolicy "certified").');

  application
    .command('add <org> <applicationId>')
    .description('Certify an Application-ID for an organization.')
    .option('--name <name>', 'what the application is')
    .action(async (org: string, applicationId: string, options: { name?: string }) => {
      const input = parseBody(addApplicationSchema, { applicationId, name: options.name });
      await cli.withServices(async (app) => cli.print(await app.get(CertifiedApplicationService).add(org, input.applicationId, input.name, cli.actor)));
    });

  const list = application.command('list <org>').description('List the certified Application-IDs of an organization.');
  for (const [flags, text] of PAGE_OPTIONS) list.option(flags, text);
  list.action(async (org: string, options: { startIndex?: string; count?: string }) => {
    const page = pageOf(options);
    await cli.withServices(async (app) => {
      const { rows, total } = await app.get(CertifiedApplicationService).list(org, page.startIndex - 1, page.count);
      cli.print(listResponse(rows, total, page));
    });
  });

  application
    .command('remove <org> <applicationId>')
    .description('Remove a certified Application-ID.')
    .action(async (org: string, applicationId: string) => {
      await cli.withServices(async (app) => {
        await app.get(CertifiedApplicationService).remove(org, applicationId, cli.actor);
        cli.print({ removed: applicationId });
      });
    });
}
