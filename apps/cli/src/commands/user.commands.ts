import { Command, Option } from 'commander';
import { AdminPresenter, EnrolmentLinks, UserService, UserViews, createUserSchema, patchUserSchema, setPasswordSchema } from '@app/accounts';
import { listResponse, parseBody } from '@app/common';
import { CliRuntime, PAGE_OPTIONS, booleanArgument, collect, pageOf, readSecretFromStdin, readTextFile } from '../cli-runtime';

interface NameOptions {
  givenName?: string;
  familyName?: string;
}

/**
 * `user create|list|get|update|delete|enroll-certificate|set-password|platform-administrator|enrolment-link` (DECISIONS 3.5, 11 and 14.4).
 * Passwords come from standard input only, never from an argument.
 */
export function registerUserCommands(program: Command, cli: CliRuntime): void {
  const user = program.command('user').description('Users of the credential-management API: operators and cardholders.');

  user
    .command('create <org>')
    .description('Create a user; prints it (never the password).')
    .requiredOption('--user-name <userName>', '1-128 characters of A-Z, a-z, 0-9, ".", "_", "@" and "-"')
    .option('--role <role>', 'role name from scopeAssignment.properties (Administration, Help Desk, Issuance or Cardholder in the shipped one)', 'Cardholder')
    .addOption(new Option('--type <userType>', 'operator or cardholder').choices(['operator', 'cardholder']).default('cardholder'))
    .option('--group <group>', 'a group (repeat for several)', collect)
    .option('--given-name <name>', 'given name (with --family-name)')
    .option('--family-name <name>', 'family name (with --given-name)')
    .option('--display-name <name>', 'display name')
    .option('--email <address>', 'an e-mail address (repeat for several; the first is primary)', collect)
    .option('--password-stdin', 'read a cardholder password (12+ characters) from standard input', false)
    .option('--organization-administrator', "make the user the organization's administrator (the admin API takes their token)", false)
    .action(
      async (
        org: string,
        options: NameOptions & {
          userName: string;
          role: string;
          type: 'operator' | 'cardholder';
          group?: string[];
          displayName?: string;
          email?: string[];
          passwordStdin: boolean;
          organizationAdministrator: boolean;
        },
      ) => {
        const password = options.passwordStdin ? await readSecretFromStdin('password') : undefined;
        const input = parseBody(createUserSchema, {
          userName: options.userName,
          role: options.role,
          userType: options.type,
          groups: options.group,
          name: nameOf(options),
          displayName: options.displayName,
          emails: options.email?.map((value, index) => ({ value, primary: index === 0 })),
          password,
          organizationAdministrator: options.organizationAdministrator || undefined,
        });
        await cli.withServices(async (app) => cli.print(await app.get(UserViews).one(await app.get(UserService).create(org, input, cli.actor))));
      },
    );

  const list = user.command('list <org>').description('List the users of an organization, by userName.');
  for (const [flags, text] of PAGE_OPTIONS) list.option(flags, text);
  list.action(async (org: string, options: { startIndex?: string; count?: string }) => {
    const page = pageOf(options);
    await cli.withServices(async (app) => {
      const { rows, total } = await app.get(UserService).list(org, page.startIndex - 1, page.count);
      cli.print(listResponse(await app.get(UserViews).many(org, rows), total, page));
    });
  });

  user
    .command('get <org> <id>')
    .description('Show a user.')
    .action(async (org: string, id: string) => {
      await cli.withServices(async (app) => cli.print(await app.get(UserViews).one(await app.get(UserService).get(org, id))));
    });

  user
    .command('update <org> <id>')
    .description("Change role, groups, disabled or display name; role, groups and disabled apply to the user's live tokens at once.")
    .option('--role <role>', 'role name from scopeAssignment.properties')
    .option('--group <group>', 'the groups, replacing the current ones (repeat for several)', collect)
    .option('--no-groups', 'remove every group')
    .option('--disabled <bool>', 'true stops the user and its tokens; false re-enables it (its old tokens stay revoked)', booleanArgument)
    .option('--display-name <name>', 'display name ("" clears it)')
    .option(
      '--organization-administrator <bool>',
      "true makes the user the organization's administrator (their live tokens are revoked: they sign in again); false applies at once",
      booleanArgument,
    )
    .action(
      async (
        org: string,
        id: string,
        options: { role?: string; group?: string[]; groups: boolean; disabled?: boolean; displayName?: string; organizationAdministrator?: boolean },
      ) => {
        const changes = parseBody(patchUserSchema, {
          role: options.role,
          groups: options.groups === false ? null : options.group,
          disabled: options.disabled,
          displayName: options.displayName === '' ? null : options.displayName,
          organizationAdministrator: options.organizationAdministrator,
        });
        await cli.withServices(async (app) => cli.print(await app.get(UserViews).one(await app.get(UserService).update(org, id, changes, cli.actor))));
      },
    );

  user
    .command('platform-administrator <id>')
    .description(
      'Make a user of the platform organization the platform administrator person, taking the role from whoever held it (there is only one); their live tokens are revoked.',
    )
    .action(async (id: string) => {
      await cli.withServices(async (app) => cli.print(await app.get(UserViews).one(await app.get(UserService).designatePlatformAdministrator(id, cli.actor))));
    });

  user
    .command('delete <org> <id>')
    .description('Delete a user with its certificates, tokens and wallet; refused while it holds devices that are not TERMINATED, unless --force.')
    .option(
      '--force',
      'first terminate the devices the user holds (refused for a device with live credentials: only the service, with its HSM, revokes their certificates)',
      false,
    )
    .action(async (org: string, id: string, options: { force: boolean }) => {
      await cli.withServices(async (app) => {
        await app.get(UserService).delete(org, id, cli.actor, { force: options.force });
        cli.print({ deleted: id });
      });
    });

  user
    .command('enroll-certificate <org> <id> <pemFile>')
    .description("Enroll a certificate from a PEM file for the user's jwt-bearer sign-in.")
    .action(async (org: string, id: string, pemFile: string) => {
      const pem = readTextFile(pemFile);
      await cli.withServices(async (app) =>
        cli.print(app.get(AdminPresenter).certificate(await app.get(UserService).enrollCertificate(org, id, pem, cli.actor))),
      );
    });

  user
    .command('set-password <org> <id>')
    .description(
      'Set a cardholder\'s password, read from standard input (at least 12 characters), e.g. printf %s "$PW" | platform user set-password acme <id>.',
    )
    .action(async (org: string, id: string) => {
      const { password } = parseBody(setPasswordSchema, { password: await readSecretFromStdin('password') });
      await cli.withServices(async (app) => {
        const updated = await app.get(UserService).setPassword(org, id, password, cli.actor);
        cli.print(await app.get(UserViews).one(updated));
      });
    });

  user
    .command('enrolment-link <org> <userName>')
    .description(
      "Make the person a one-time enrolment link (choose a password, add an authenticator app, signed in): prints it once; the person's older links stop working (break-glass and recovery).",
    )
    .action(async (org: string, userName: string) => {
      await cli.withServices(async (app) => {
        const link = await app.get(EnrolmentLinks).issueByUserName(org, userName, cli.actor);
        cli.print({ userName: link.userName, id: link.userId, url: link.url, expiresAt: link.expiresAt.toISOString() });
      });
    });
}

function nameOf(options: NameOptions): { givenName?: string; familyName?: string } | undefined {
  if (options.givenName === undefined && options.familyName === undefined) return undefined;
  return { givenName: options.givenName, familyName: options.familyName };
}
