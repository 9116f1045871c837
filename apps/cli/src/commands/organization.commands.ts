import { Command, Option } from 'commander';
import { AdminPresenter, OrganizationService, createOrganizationSchema, organizationSettingsSchema } from '@app/accounts';
import { invalidValue, listResponse, parseBody } from '@app/common';
import { CliRuntime, PAGE_OPTIONS, booleanArgument, pageOf } from '../cli-runtime';

/** `organization create|list|get|settings|delete` (DECISIONS 11 organizations rows). */
export function registerOrganizationCommands(program: Command, cli: CliRuntime): void {
  const organization = program.command('organization').description("Organizations (the platform administrator's part of the admin API).");

  organization
    .command('create <id>')
    .description('Create an organization (id: 1-64 characters of A-Z, a-z, 0-9 and _).')
    .requiredOption('--name <name>', 'display name')
    .action(async (id: string, options: { name: string }) => {
      const input = parseBody(createOrganizationSchema, { id, name: options.name });
      await cli.withServices(async (app) => cli.print(app.get(AdminPresenter).organization(await app.get(OrganizationService).create(input, cli.actor))));
    });

  const list = organization.command('list').description('List organizations (SCIM ListResponse).');
  for (const [flags, text] of PAGE_OPTIONS) list.option(flags, text);
  list.action(async (options: { startIndex?: string; count?: string }) => {
    const page = pageOf(options);
    await cli.withServices(async (app) => {
      const { rows, total } = await app.get(OrganizationService).list(page.startIndex - 1, page.count);
      const presenter = app.get(AdminPresenter);
      cli.print(
        listResponse(
          rows.map((org) => presenter.organization(org)),
          total,
          page,
        ),
      );
    });
  });

  organization
    .command('get <id>')
    .description('Show an organization and its settings.')
    .action(async (id: string) => {
      await cli.withServices(async (app) => cli.print(app.get(AdminPresenter).organization(await app.get(OrganizationService).get(id))));
    });

  organization
    .command('settings <id>')
    .description('Change some settings of an organization (the others stay); prints the settings. Without options, only prints them.')
    .option('--automatic-device-creation <bool>', 'true or false', booleanArgument)
    .addOption(new Option('--application-id-policy <policy>', 'which Application-IDs may call the API').choices(['any', 'certified']))
    .option('--password-grant <bool>', 'true or false: may cardholders use the password grant', booleanArgument)
    .option(
      '--password-only-sign-in <bool>',
      'true or false: may a cardholder without an OATH TOTP credential sign in at the hosted login page with the password alone (false ends such sessions)',
      booleanArgument,
    )
    .option(
      '--passwordless-sign-in <bool>',
      'true or false: may people sign in at the hosted login page with a passkey alone (discoverable, user verification required)',
      booleanArgument,
    )
    .option('--access-token-lifetime <seconds>', 'access token lifetime, 300-86400 seconds, or "default" for the service default')
    .action(
      async (
        id: string,
        options: {
          automaticDeviceCreation?: boolean;
          applicationIdPolicy?: 'any' | 'certified';
          passwordGrant?: boolean;
          passwordOnlySignIn?: boolean;
          passwordlessSignIn?: boolean;
          accessTokenLifetime?: string;
        },
      ) => {
        const changes: Record<string, unknown> = {};
        if (options.automaticDeviceCreation !== undefined) changes.automaticDeviceCreation = options.automaticDeviceCreation;
        if (options.applicationIdPolicy !== undefined) changes.applicationIdPolicy = options.applicationIdPolicy;
        if (options.passwordGrant !== undefined) changes.passwordGrant = options.passwordGrant;
        if (options.passwordOnlySignIn !== undefined) changes.passwordOnlySignIn = options.passwordOnlySignIn;
        if (options.passwordlessSignIn !== undefined) changes.passwordlessSignIn = options.passwordlessSignIn;
        if (options.accessTokenLifetime !== undefined) changes.accessTokenLifetime = lifetime(options.accessTokenLifetime);
        const settings = parseBody(organizationSettingsSchema.partial(), changes, 'settings');
        await cli.withServices(async (app) => {
          const organizations = app.get(OrganizationService);
          const org =
            Object.keys(settings).length === 0
              ? await organizations.get(id)
              : await organizations.update(id, { settings }, cli.actor, 'organization.settings.update');
          cli.print(org.settings);
        });
      },
    );

  organization
    .command('delete <id>')
    .description(
      'Delete an organization. Refused while it has system accounts, users or devices, unless --force, which deletes all of them (its audit events are kept).',
    )
    .option('--force', 'delete the organization with everything it holds', false)
    .action(async (id: string, options: { force: boolean }) => {
      await cli.withServices(async (app) => {
        const removed = await app.get(OrganizationService).delete(id, { force: options.force }, cli.actor);
        cli.print({ deleted: id, force: options.force, removed });
      });
    });
}

function lifetime(value: string): number | null {
  if (value === 'default') return null;
  if (!/^\d{1,9}$/.test(value))
    throw invalidValue(`--access-token-lifetime must be a number of seconds (300-86400) or "default", got "${value.slice(0, 40)}".`);
  return Number(value);
}
