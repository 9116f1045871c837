import 'reflect-metadata';
import { Command, CommanderError } from 'commander';
import { NestFactory } from '@nestjs/core';
import { INestApplicationContext, Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AccountsModule, OrganizationService, SystemAccountService } from '@app/accounts';
import { ClockModule, DomainError } from '@app/common';
import { AppConfig, ConfigModule, ConfigurationError, loadConfig } from '@app/config';
import { Metrics, ObservabilityModule, createLogger } from '@app/observability';
import { PersistenceModule, dataSourceOptions, runMigrations, startEmbeddedPostgres } from '@app/persistence';

/**
 * The operator command line: the same services as the API, straight on the database, for first
 * set-up and break-glass use. Exit codes: 0 done, 1 refused (bad input, conflict, not found),
 * 2 usage error, 3 configuration or infrastructure failure.
 */
const EXIT_REFUSED = 1;
const EXIT_USAGE = 2;
const EXIT_FAILURE = 3;
const CLI_ACTOR = { name: 'cli' };

async function withServices<T>(work: (app: INestApplicationContext) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel);
  @Module({ imports: [ConfigModule.forRoot(config), ObservabilityModule.forRoot(logger, new Metrics()), ClockModule, PersistenceModule, AccountsModule] })
  class CliModule {}
  const app = await NestFactory.createApplicationContext(CliModule, { logger: false });
  try {
    return await work(app);
  } finally {
    await app.close();
  }
}

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function buildProgram(): Command {
  const program = new Command('platform')
    .description('Credential platform command line (works on the database directly; configure it like the service).')
    .exitOverride();

  const db = program.command('db').description('Database schema.');
  db.command('migrate')
    .description('Apply pending migrations (the service also does this at start).')
    .action(async () => {
      const config: AppConfig = loadConfig();
      const embedded = config.embeddedDatabase
        ? await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.embeddedPostgresPort, password: config.embeddedPostgresPassword! })
        : undefined;
      const dataSource = new DataSource(dataSourceOptions(embedded?.connection ?? config.databaseUrl!, 2));
      await dataSource.initialize();
      try {
        const applied = await runMigrations(dataSource);
        print({ applied });
      } finally {
        await dataSource.destroy();
        await embedded?.stop();
      }
    });

  const organization = program.command('organization').description('Organizations.');
  organization
    .command('create <id>')
    .description('Create an organization.')
    .requiredOption('--name <name>', 'display name')
    .action(async (id: string, options: { name: string }) => {
      await withServices(async (app) => print(await app.get(OrganizationService).create({ id, name: options.name })));
    });
  organization
    .command('get <id>')
    .description('Show an organization and its settings.')
    .action(async (id: string) => {
      await withServices(async (app) => print(await app.get(OrganizationService).get(id)));
    });

  const account = program.command('system-account').description('System accounts of an organization.');
  account
    .command('create <org>')
    .description('Create a system account; prints its Client ID and its first secret (shown once).')
    .requiredOption('--role <role>', 'role name from scopeAssignment.properties')
    .option('--suffix <suffix>', 'Client ID suffix (default: generated)')
    .option('--org-admin', 'make it an organization administrator', false)
    .option('--description <text>', 'free text')
    .action(async (org: string, options: { role: string; suffix?: string; orgAdmin: boolean; description?: string }) => {
      await withServices(async (app) => {
        const accounts = app.get(SystemAccountService);
        const { account: row, secret } = await accounts.create(
          org,
          { role: options.role, suffix: options.suffix, organizationAdministrator: options.orgAdmin, description: options.description },
          CLI_ACTOR,
        );
        print({ clientId: row.client_id, tokenUrl: accounts.tokenUrl(org), role: row.role, organizationAdministrator: row.organization_administrator, secret });
      });
    });
  account
    .command('set-disabled <org> <clientId> <disabled>')
    .description('Disable (true) or enable (false) a system account; disabling stops its tokens at once.')
    .action(async (org: string, clientId: string, disabled: string) => {
      if (disabled !== 'true' && disabled !== 'false') throw new CommanderError(EXIT_USAGE, 'usage', '<disabled> must be true or false');
      await withServices(async (app) => {
        const row = await app.get(SystemAccountService).update(org, clientId, { disabled: disabled === 'true' }, CLI_ACTOR);
        print({ clientId: row.client_id, disabled: row.disabled });
      });
    });
  account
    .command('create-secret <org> <clientId>')
    .description('Add a secret to a system account (shown once); the old ones keep working until revoked.')
    .option('--expires-at <iso>', 'expiry (default: 5 years)')
    .action(async (org: string, clientId: string, options: { expiresAt?: string }) => {
      const expiresAt = options.expiresAt ? new Date(options.expiresAt) : undefined;
      if (expiresAt && Number.isNaN(expiresAt.getTime())) throw new CommanderError(EXIT_USAGE, 'usage', '--expires-at must be an ISO 8601 date-time');
      await withServices(async (app) => print(await app.get(SystemAccountService).createSecret(org, clientId, expiresAt, CLI_ACTOR)));
    });
  return program;
}

async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') return 0;
      if (error.exitCode === EXIT_USAGE && error.code === 'usage') process.stderr.write(`${error.message}\n`);
      return EXIT_USAGE;
    }
    if (error instanceof DomainError) {
      process.stderr.write(`Refused: ${error.detail}\n`);
      return EXIT_REFUSED;
    }
    if (error instanceof ConfigurationError) {
      process.stderr.write(`${error.message}\n`);
      return EXIT_FAILURE;
    }
    process.stderr.write(`Failed: ${(error as Error).message}\n`);
    return EXIT_FAILURE;
  }
}

if (require.main === module) {
  void main(process.argv).then((code) => process.exit(code));
}
