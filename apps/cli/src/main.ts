import 'reflect-metadata';
import { Command, CommanderError } from 'commander';
import { NestFactory } from '@nestjs/core';
import { DynamicModule, INestApplicationContext, Module, Type } from '@nestjs/common';
import pino from 'pino';
import { DataSource } from 'typeorm';
import { AccountsModule } from '@app/accounts';
import { AuditModule } from '@app/audit';
import { AuthStoreModule } from '@app/auth';
import { CredentialManagementStoreModule, OfflineCredentialGuardModule } from '@app/credential-management';
import { DeliveryGatewayStoreModule } from '@app/delivery-gateway';
import { DeviceStoreModule } from '@app/device';
import { ClockModule, DomainError } from '@app/common';
import { AppConfig, ConfigModule, ConfigurationError, loadConfig } from '@app/config';
import { Metrics, ObservabilityModule, createLogger } from '@app/observability';
import { PersistenceModule, dataSourceOptions, runMigrations, startEmbeddedPostgres } from '@app/persistence';
import { CliRuntime } from './cli-runtime';
import { registerApplicationCommands } from './commands/application.commands';
import { registerAuditCommands } from './commands/audit.commands';
import { registerDeviceCommands } from './commands/device.commands';
import { registerOrganizationCommands } from './commands/organization.commands';
import { registerSystemAccountCommands } from './commands/system-account.commands';
import { registerUserCommands } from './commands/user.commands';
import { registerReferenceDataCommands } from './commands/reference-data.commands';
import { registerSigningKeyCommands } from './commands/signing-key.commands';
import { registerCaCommands } from './commands/ca.commands';

/**
 * The operator command line: the same services as the API, straight on the database, for first
 * set-up and break-glass use. Output is JSON on stdout (the admin API's shapes); messages go to
 * stderr. Every change is audited with actor `cli`.
 */
const EXIT_REFUSED = 1;
const EXIT_USAGE = 2;
const EXIT_FAILURE = 3;
const CLI_ACTOR = { name: 'cli' };
const EXIT_CODES_HELP = `
Exit codes:
  0  done
  1  refused: not found, conflict, or bad input (the message says which)
  2  usage error: unknown command or option, missing argument
  3  configuration or infrastructure failure (environment, database)

Configure it like the service (DATABASE_URL, SECRET_PEPPER, ...); see the README.`;
/** Base64url ids (certificate thumbprints) begin with '-' one time in 64, and then read as an option. */
const DASH_ARGUMENT_HINT =
  "An argument that begins with '-' (a certificate thumbprint can) goes after --, which ends the options: certificate delete <org> <clientId> -- <thumbprint>\n";

/** Runs `work` with the services on the configured database; `imports` adds feature modules a command needs. */
async function withServices<T>(work: (app: INestApplicationContext) => Promise<T>, imports: (Type | DynamicModule)[] = []): Promise<T> {
  const config = loadConfig();
  // Messages go to stderr, written before the process exits: stdout carries only the command's JSON.
  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, pino.destination({ fd: 2, sync: true }));
  @Module({
    imports: [
      ConfigModule.forRoot(config),
      ObservabilityModule.forRoot(logger, new Metrics()),
      ClockModule,
      PersistenceModule,
      AuditModule,
      AccountsModule,
      // The libraries whose data accounts asks about (AccountDependents): tokens, lockout counters,
      // devices, each user's wallet and groups, and a disabled user's authenticators.
      AuthStoreModule,
      DeviceStoreModule,
      CredentialManagementStoreModule,
      DeliveryGatewayStoreModule,
      OfflineCredentialGuardModule,
      ...imports,
    ],
  })
  class CliModule {}
  // abortOnError false: a failure at start (no database) must reach main() and its exit code 3.
  const app = await NestFactory.createApplicationContext(CliModule, { logger: false, abortOnError: false });
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
    .exitOverride()
    .addHelpText('after', EXIT_CODES_HELP);
  const cli: CliRuntime = { withServices, print, actor: CLI_ACTOR };

  const db = program.command('db').description('Database schema.');
  db.command('migrate')
    .description('Apply pending migrations (the service also does this at start).')
    .action(async () => {
      const config: AppConfig = loadConfig();
      const embedded = config.embeddedDatabase
        ? await startEmbeddedPostgres({
            dataDir: config.dataDir,
            placementDir: config.embeddedPostgresDir,
            port: config.embeddedPostgresPort,
            password: config.embeddedPostgresPassword!,
            onWarning: (message) => process.stderr.write(`${message}\n`),
          })
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

  registerOrganizationCommands(program, cli);
  registerSystemAccountCommands(program, cli);
  registerUserCommands(program, cli);
  registerReferenceDataCommands(program, cli);
  registerApplicationCommands(program, cli);
  registerAuditCommands(program, cli);
  registerDeviceCommands(program, cli);
  registerSigningKeyCommands(program, cli);
  registerCaCommands(program, cli);
  return program;
}

async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end with exit code 0; help shown because a command is missing is a usage error.
      if (error.exitCode === 0) return 0;
      if (error.code === 'usage') process.stderr.write(`${error.message}\n`);
      if (error.code === 'commander.unknownOption') process.stderr.write(DASH_ARGUMENT_HINT);
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
