import { Command, InvalidArgumentError, Option } from 'commander';
import { INestApplicationContext } from '@nestjs/common';
import {
  DevicePolicyPresenter,
  DevicePolicyService,
  GroupPresenter,
  GroupService,
  KEY_ALGORITHMS,
  PolicyPresenter,
  PolicyService,
  PRINTER_STATUSES,
  PrinterPresenter,
  PrinterService,
  CREDENTIAL_TYPES,
  DEVICE_POLICY_SEARCH_DEFINITION,
  GROUP_SEARCH_DEFINITION,
  PRINTER_SEARCH_DEFINITION,
} from '@app/credential-management';
import { listResponse, searchFromQuery } from '@app/common';
import { CliRuntime, PAGE_OPTIONS, booleanArgument, collect } from '../cli-runtime';

type PageOptions = { startIndex?: string; count?: string; filter?: string };

/** `--start-index`, `--count` and `--filter` (the SCIM filter the API's lists take). */
function listCommand(parent: Command, description: string): Command {
  const list = parent.command('list <org>').description(description).option('--filter <filter>', 'a SCIM filter, e.g. displayName eq "Berlin"');
  for (const [flags, text] of PAGE_OPTIONS) list.option(flags, text);
  return list;
}

const integer = (value: string): number => {
  if (!/^-?[0-9]+$/.test(value)) throw new InvalidArgumentError('must be a whole number.');
  return Number(value);
};

/** A repeatable option whose every value must be one of `choices` (a usage error otherwise, exit 2). */
const collectOneOf =
  (choices: readonly string[]) =>
  (value: string, previous: string[] | undefined): string[] => {
    if (!choices.includes(value)) throw new InvalidArgumentError(`Allowed choices are ${choices.join(', ')}.`);
    return collect(value, previous);
  };

/** Only the options given, so that the service's rules decide what is missing or wrong (as for the API). */
function given(values: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined));
}

/**
 * The reference data of credential management, as the admin API offers it (CREDENTIAL-MANAGEMENT.md
 * "Reference data"): `group`, `device-policy`, `printer`, `credential-policy` and `wallet-policy`.
 * The services are the API's, so the rules, the audit events and the printed shapes are the same.
 */
export function registerReferenceDataCommands(program: Command, cli: CliRuntime): void {
  const run = <T>(work: (app: INestApplicationContext) => Promise<T>) => cli.withServices(work);

  const group = program.command('group').description('Groups of users (members by user id).');
  group
    .command('create <org>')
    .description('Create a group; prints it with its members.')
    .requiredOption('--display-name <name>', 'the group name (unique in the organization)')
    .option('--member <userId>', 'a member (repeat for several)', collect)
    .action((org: string, options: { displayName: string; member?: string[] }) =>
      run(async (app) =>
        cli.print(
          app
            .get(GroupPresenter)
            .group(await app.get(GroupService).create(org, given({ displayName: options.displayName, members: options.member }), cli.actor)),
        ),
      ),
    );
  listCommand(group, 'List the groups with their members.').action((org: string, options: PageOptions) =>
    run(async (app) => {
      const search = searchFromQuery(given({ ...options }), GROUP_SEARCH_DEFINITION);
      const { views, total } = await app.get(GroupService).search(org, search);
      cli.print(
        listResponse(
          views.map((view) => app.get(GroupPresenter).group(view)),
          total,
          search.page,
        ),
      );
    }),
  );
  group
    .command('get <org> <id>')
    .description('Show a group.')
    .action((org: string, id: string) => run(async (app) => cli.print(app.get(GroupPresenter).group(await app.get(GroupService).get(org, id)))));
  group
    .command('update <org> <id>')
    .description('Rename a group and/or replace its members (users left out leave it).')
    .option('--display-name <name>', 'a new name (its members keep the group)')
    .option('--member <userId>', 'the members, replacing the current ones (repeat for several)', collect)
    .option('--no-members', 'remove every member')
    .action((org: string, id: string, options: { displayName?: string; member?: string[]; members: boolean }) =>
      run(async (app) =>
        cli.print(
          app
            .get(GroupPresenter)
            .group(
              await app
                .get(GroupService)
                .update(org, id, given({ displayName: options.displayName, members: options.members === false ? [] : options.member }), cli.actor),
            ),
        ),
      ),
    );
  group
    .command('delete <org> <id>')
    .description('Delete a group: its members leave it, device policies stop naming it.')
    .action((org: string, id: string) =>
      run(async (app) => {
        await app.get(GroupService).delete(org, id, cli.actor);
        cli.print({ deleted: id });
      }),
    );

  const policy = program.command('device-policy').description('Device policies: what goes on a device for which groups.');
  const policyOptions = (command: Command) =>
    command
      .option('--description <text>', 'a description')
      .option('--device-type <name>', 'a device type the policy applies to (repeat; none: any device)', collect)
      .option('--credential-type <type>', `a credential type (repeat): ${CREDENTIAL_TYPES.join(', ')}`, collectOneOf(CREDENTIAL_TYPES))
      .option('--group <groupId>', 'a group whose users the policy serves (repeat; none: every user)', collect)
      .option('--requires-approval <bool>', 'issuance needs a second operator (default true)', booleanArgument)
      .option('--activation-required <bool>', 'produced devices need activation (default false)', booleanArgument);
  type PolicyOptions = {
    name?: string;
    description?: string;
    deviceType?: string[];
    credentialType?: string[];
    group?: string[];
    requiresApproval?: boolean;
    activationRequired?: boolean;
  };
  const policyBody = (options: PolicyOptions) =>
    given({
      name: options.name,
      description: options.description,
      deviceTypes: options.deviceType,
      credentialTypes: options.credentialType,
      groups: options.group,
      requiresApproval: options.requiresApproval,
      activationRequired: options.activationRequired,
    });
  policyOptions(policy.command('create <org>').description('Create a device policy.').requiredOption('--name <name>', 'unique in the organization')).action(
    (org: string, options: PolicyOptions) =>
      run(async (app) => cli.print(app.get(DevicePolicyPresenter).policy(await app.get(DevicePolicyService).create(org, policyBody(options), cli.actor)))),
  );
  listCommand(policy, 'List the device policies.').action((org: string, options: PageOptions) =>
    run(async (app) => {
      const search = searchFromQuery(given({ ...options }), DEVICE_POLICY_SEARCH_DEFINITION);
      const { rows, total } = await app.get(DevicePolicyService).search(org, search);
      cli.print(
        listResponse(
          rows.map((row) => app.get(DevicePolicyPresenter).policy(row)),
          total,
          search.page,
        ),
      );
    }),
  );
  policy
    .command('get <org> <id>')
    .description('Show a device policy.')
    .action((org: string, id: string) => run(async (app) => cli.print(app.get(DevicePolicyPresenter).policy(await app.get(DevicePolicyService).get(org, id)))));
  policyOptions(
    policy.command('update <org> <id>').description('Change a device policy (options given replace their attribute).').option('--name <name>', 'a new name'),
  ).action((org: string, id: string, options: PolicyOptions) =>
    run(async (app) => cli.print(app.get(DevicePolicyPresenter).policy(await app.get(DevicePolicyService).update(org, id, policyBody(options), cli.actor)))),
  );
  policy
    .command('delete <org> <id>')
    .description('Delete a device policy.')
    .action((org: string, id: string) =>
      run(async (app) => {
        await app.get(DevicePolicyService).delete(org, id, cli.actor);
        cli.print({ deleted: id });
      }),
    );

  const printer = program.command('printer').description('Card printers.');
  const printerOptions = (command: Command) =>
    command
      .option('--model <model>', 'the printer model')
      .option('--location <text>', 'where it stands')
      .addOption(new Option('--status <status>', 'READY or OFFLINE').choices(PRINTER_STATUSES));
  type PrinterOptions = { name?: string; model?: string; location?: string; status?: string };
  const printerBody = (options: PrinterOptions) => given({ name: options.name, model: options.model, location: options.location, status: options.status });
  printerOptions(printer.command('create <org>').description('Add a card printer.').requiredOption('--name <name>', 'unique in the organization')).action(
    (org: string, options: PrinterOptions) =>
      run(async (app) => cli.print(app.get(PrinterPresenter).printer(await app.get(PrinterService).create(org, printerBody(options), cli.actor)))),
  );
  listCommand(printer, 'List the card printers.').action((org: string, options: PageOptions) =>
    run(async (app) => {
      const search = searchFromQuery(given({ ...options }), PRINTER_SEARCH_DEFINITION);
      const { rows, total } = await app.get(PrinterService).search(org, search);
      cli.print(
        listResponse(
          rows.map((row) => app.get(PrinterPresenter).printer(row)),
          total,
          search.page,
        ),
      );
    }),
  );
  printer
    .command('get <org> <id>')
    .description('Show a card printer.')
    .action((org: string, id: string) => run(async (app) => cli.print(app.get(PrinterPresenter).printer(await app.get(PrinterService).get(org, id)))));
  printerOptions(printer.command('update <org> <id>').description('Change a card printer.').option('--name <name>', 'a new name')).action(
    (org: string, id: string, options: PrinterOptions) =>
      run(async (app) => cli.print(app.get(PrinterPresenter).printer(await app.get(PrinterService).update(org, id, printerBody(options), cli.actor)))),
  );
  printer
    .command('delete <org> <id>')
    .description('Remove a card printer.')
    .action((org: string, id: string) =>
      run(async (app) => {
        await app.get(PrinterService).delete(org, id, cli.actor);
        cli.print({ deleted: id });
      }),
    );

  const credentialPolicy = program.command('credential-policy').description("The organization's credential policy (global).");
  credentialPolicy
    .command('get <org>')
    .description('Show it (the defaults until one is written).')
    .action((org: string) => run(async (app) => cli.print(app.get(PolicyPresenter).policy(await app.get(PolicyService).read(org, 'credential')))));
  credentialPolicy
    .command('set <org>')
    .description('Replace it: options left out take their defaults.')
    .option('--certificate-lifetime-days <days>', '1-1825 (default 365)', integer)
    .option('--key-algorithm <algorithm>', `an allowed CSR key algorithm (repeat): ${KEY_ALGORITHMS.join(', ')}`, collectOneOf(KEY_ALGORITHMS))
    .option('--oath-digits <digits>', '6 or 8 (default 6)', integer)
    .option('--oath-period <seconds>', '30 or 60 (default 30)', integer)
    .option('--revoke-on-terminate <bool>', 'default true', booleanArgument)
    .action(
      (
        org: string,
        options: { certificateLifetimeDays?: number; keyAlgorithm?: string[]; oathDigits?: number; oathPeriod?: number; revokeOnTerminate?: boolean },
      ) =>
        run(async (app) => {
          const body = given({
            certificateLifetimeDays: options.certificateLifetimeDays,
            keyAlgorithms: options.keyAlgorithm,
            oathDigits: options.oathDigits,
            oathPeriod: options.oathPeriod,
            revokeOnTerminate: options.revokeOnTerminate,
          });
          cli.print(app.get(PolicyPresenter).policy(await app.get(PolicyService).replace(org, 'credential', body, cli.actor)));
        }),
    );

  const walletPolicy = program.command('wallet-policy').description("The organization's wallet policy (global).");
  walletPolicy
    .command('get <org>')
    .description('Show it (the defaults until one is written).')
    .action((org: string) => run(async (app) => cli.print(app.get(PolicyPresenter).policy(await app.get(PolicyService).read(org, 'wallet')))));
  walletPolicy
    .command('set <org>')
    .description('Replace it: options left out take their defaults.')
    .option('--max-devices-per-wallet <n>', '1-20 (default 3)', integer)
    .option('--allow-self-service <bool>', 'cardholders may resume their own devices (default true)', booleanArgument)
    .action((org: string, options: { maxDevicesPerWallet?: number; allowSelfService?: boolean }) =>
      run(async (app) => {
        const body = given({ maxDevicesPerWallet: options.maxDevicesPerWallet, allowSelfService: options.allowSelfService });
        cli.print(app.get(PolicyPresenter).policy(await app.get(PolicyService).replace(org, 'wallet', body, cli.actor)));
      }),
    );
}
