import { Command } from 'commander';
import { AdminPresenter, SystemAccountService, createAccountSchema, createSecretSchema, patchAccountSchema } from '@app/accounts';
import { Page, listResponse, parseBody } from '@app/common';
import { CliRuntime, PAGE_OPTIONS, booleanArgument, pageOf, readTextFile } from '../cli-runtime';

/**
 * `system-account create|list|get|update|delete`, `secret create|list|revoke` and
 * `certificate upload|list|delete` (DECISIONS 4 and 11). Output has the admin API's shapes.
 */
export function registerSystemAccountCommands(program: Command, cli: CliRuntime): void {
  const account = program.command('system-account').description('System accounts of an organization.');

  account
    .command('create <org>')
    .description('Create a system account; prints its Client ID, Token URL and first secret (shown once).')
    .requiredOption('--role <role>', 'role name from scopeAssignment.properties')
    .option('--suffix <suffix>', 'Client ID suffix: {org}-{suffix} (default: generated OSRV + 9 digits)')
    .option('--org-admin', 'make it an organization administrator', false)
    .option('--description <text>', 'free text')
    .action(async (org: string, options: { role: string; suffix?: string; orgAdmin: boolean; description?: string }) => {
      const input = parseBody(createAccountSchema, {
        role: options.role,
        suffix: options.suffix,
        organizationAdministrator: options.orgAdmin,
        description: options.description,
      });
      await cli.withServices(async (app) => {
        const { account: row, secret } = await app.get(SystemAccountService).create(org, input, cli.actor);
        const presenter = app.get(AdminPresenter);
        cli.print({ ...presenter.systemAccount(row), secret: presenter.issuedSecret(secret) });
      });
    });

  const list = account.command('list <org>').description('List the system accounts of an organization (no secret values).');
  for (const [flags, text] of PAGE_OPTIONS) list.option(flags, text);
  list.action(async (org: string, options: { startIndex?: string; count?: string }) => {
    const page = pageOf(options);
    await cli.withServices(async (app) => {
      const { rows, total } = await app.get(SystemAccountService).list(org, page.startIndex - 1, page.count);
      const presenter = app.get(AdminPresenter);
      cli.print(
        listResponse(
          rows.map((row) => presenter.systemAccount(row)),
          total,
          page,
        ),
      );
    });
  });

  account
    .command('get <org> <clientId>')
    .description('Show a system account (no secret values).')
    .action(async (org: string, clientId: string) => {
      await cli.withServices(async (app) => cli.print(app.get(AdminPresenter).systemAccount(await app.get(SystemAccountService).get(org, clientId))));
    });

  account
    .command('update <org> <clientId>')
    .description("Change role, description, disabled or organization administrator; applies to the account's live tokens at once.")
    .option('--role <role>', 'role name from scopeAssignment.properties')
    .option('--description <text>', 'free text ("" clears it)')
    .option('--disabled <bool>', 'true stops the account and its tokens; false re-enables it (its old tokens stay revoked)', booleanArgument)
    .option('--org-admin <bool>', 'true or false: organization administrator', booleanArgument)
    .action(async (org: string, clientId: string, options: { role?: string; description?: string; disabled?: boolean; orgAdmin?: boolean }) => {
      const changes = parseBody(patchAccountSchema, {
        role: options.role,
        description: options.description === '' ? null : options.description,
        disabled: options.disabled,
        organizationAdministrator: options.orgAdmin,
      });
      await cli.withServices(async (app) =>
        cli.print(app.get(AdminPresenter).systemAccount(await app.get(SystemAccountService).update(org, clientId, changes, cli.actor))),
      );
    });

  account
    .command('delete <org> <clientId>')
    .description('Delete a system account with its secrets, certificates and tokens.')
    .action(async (org: string, clientId: string) => {
      await cli.withServices(async (app) => {
        await app.get(SystemAccountService).delete(org, clientId, cli.actor);
        cli.print({ deleted: clientId });
      });
    });

  const secret = program.command('secret').description('Client secrets of a system account (rotation with overlap).');
  secret
    .command('create <org> <clientId>')
    .description('Add a secret (shown once); the other secrets keep working until revoked.')
    .option('--expires-at <iso>', 'expiry, ISO 8601 (default: 5 years)')
    .action(async (org: string, clientId: string, options: { expiresAt?: string }) => {
      const input = parseBody(createSecretSchema, { expiresAt: options.expiresAt });
      await cli.withServices(async (app) => {
        const created = await app.get(SystemAccountService).createSecret(org, clientId, input.expiresAt ? new Date(input.expiresAt) : undefined, cli.actor);
        cli.print(app.get(AdminPresenter).issuedSecret(created));
      });
    });
  const secrets = secret.command('list <org> <clientId>').description('List the secrets of a system account: metadata only.');
  for (const [flags, text] of PAGE_OPTIONS) secrets.option(flags, text);
  secrets.action(async (org: string, clientId: string, options: { startIndex?: string; count?: string }) => {
    const page = pageOf(options);
    await cli.withServices(async (app) => {
      const presenter = app.get(AdminPresenter);
      cli.print(
        inMemoryPage(
          (await app.get(SystemAccountService).listSecrets(org, clientId)).map((row) => presenter.secretMetadata(row)),
          page,
        ),
      );
    });
  });
  secret
    .command('revoke <org> <clientId> <secretId>')
    .description('Revoke a secret: it stops working at once.')
    .action(async (org: string, clientId: string, secretId: string) => {
      await cli.withServices(async (app) => {
        await app.get(SystemAccountService).revokeSecret(org, clientId, secretId, cli.actor);
        cli.print({ revoked: secretId });
      });
    });

  const certificate = program.command('certificate').description('Certificates of a system account, for signed-JWT client authentication (RFC 7523).');
  certificate
    .command('upload <org> <clientId> <pemFile>')
    .description('Upload one X.509 certificate from a PEM file (RSA 2048+ or EC P-256/P-384; at most 5 per account).')
    .action(async (org: string, clientId: string, pemFile: string) => {
      const pem = readTextFile(pemFile);
      await cli.withServices(async (app) =>
        cli.print(app.get(AdminPresenter).certificate(await app.get(SystemAccountService).uploadCertificate(org, clientId, pem, cli.actor))),
      );
    });
  const certificates = certificate.command('list <org> <clientId>').description('List the certificates of a system account.');
  for (const [flags, text] of PAGE_OPTIONS) certificates.option(flags, text);
  certificates.action(async (org: string, clientId: string, options: { startIndex?: string; count?: string }) => {
    const page = pageOf(options);
    await cli.withServices(async (app) => {
      const presenter = app.get(AdminPresenter);
      cli.print(
        inMemoryPage(
          (await app.get(SystemAccountService).listCertificates(org, clientId)).map((row) => presenter.certificate(row)),
          page,
        ),
      );
    });
  });
  certificate
    .command('delete <org> <clientId> <thumbprint>')
    .description(
      "Delete a certificate, named by its x5t#S256 thumbprint (its id in the list). A thumbprint that begins with '-' goes after --: delete <org> <clientId> -- <thumbprint>.",
    )
    .action(async (org: string, clientId: string, thumbprint: string) => {
      await cli.withServices(async (app) => {
        await app.get(SystemAccountService).deleteCertificate(org, clientId, thumbprint, cli.actor);
        cli.print({ deleted: thumbprint });
      });
    });
}

function inMemoryPage<T>(all: T[], page: Page) {
  const start = page.startIndex - 1;
  return listResponse(all.slice(start, start + page.count), all.length, page);
}
