import { Argument, Command } from 'commander';
import { presentSigningKey, presentWithdrawal, SigningKeys, SigningKeysModule, type SigningKeyAlgorithm } from '@app/auth';
import { invalidValue, listResponse } from '@app/common';
import { AppConfig } from '@app/config';
import { HsmModule } from '@app/hsm';
import { LOGGER, Logger } from '@app/observability';
import { hsmOptions } from '../../../api/src/app.module';
import { CliRuntime } from '../cli-runtime';

/**
 * `signing-key list|generate|activate|retire|withdraw|destroy`: the token-signing key rollover of the admin
 * API (/admin/v1/signing-keys, DECISIONS 12.1). Opens the HSM like the service does; every
 * instance hears of each change through the change feed.
 */
export function registerSigningKeyCommands(program: Command, cli: CliRuntime): void {
  const keys = program.command('signing-key').description('Token-signing keys and their rollover (opens the HSM like the service).');
  const withKeys = (work: (keys: SigningKeys) => Promise<void>) =>
    cli.withServices(
      (app) => work(app.get(SigningKeys)),
      [
        HsmModule.forRootAsync({ inject: [AppConfig, LOGGER], useFactory: (config: AppConfig, logger: Logger) => hsmOptions(config, logger) }),
        SigningKeysModule,
      ],
    );

  keys
    .command('list')
    .description('List the keys: next, active and retired, oldest first.')
    .action(() =>
      withKeys(async (signingKeys) => {
        const rows = await signingKeys.list();
        cli.print(
          listResponse(
            rows.map((row) => presentSigningKey(row, signingKeys.activatableAt(row))),
            rows.length,
            { startIndex: 1, count: rows.length },
          ),
        );
      }),
    );

  keys
    .command('generate')
    .description('Generate a next key in the HSM: published in JWKS at once, activatable after JWKS_PUBLICATION_DELAY_S.')
    .addArgument(new Argument('<algorithm>', 'EC-P256 (ES256) or RSA-3072 (RS256)').choices(['EC-P256', 'RSA-3072']))
    .action((algorithm: SigningKeyAlgorithm) =>
      withKeys(async (signingKeys) => {
        const row = await signingKeys.generate(algorithm, cli.actor);
        cli.print(presentSigningKey(row, signingKeys.activatableAt(row)));
      }),
    );

  keys
    .command('activate')
    .description('Make a next key the active one now, or at --at; the active key retires.')
    .argument('<kid>', 'the key id')
    .option('--at <iso>', 'activate at this time (ISO 8601 with a time zone)')
    .action((kid: string, options: { at?: string }) =>
      withKeys(async (signingKeys) => {
        const row = await signingKeys.activate(kid, options.at === undefined ? undefined : dateOf(options.at), cli.actor);
        cli.print(presentSigningKey(row, signingKeys.activatableAt(row)));
      }),
    );

  keys
    .command('retire')
    .description('Withdraw a next key (it leaves JWKS at once).')
    .argument('<kid>', 'the key id')
    .action((kid: string) =>
      withKeys(async (signingKeys) => {
        const row = await signingKeys.retire(kid, cli.actor);
        cli.print(presentSigningKey(row, signingKeys.activatableAt(row)));
      }),
    );

  keys
    .command('withdraw')
    .description(
      'Emergency withdrawal of a key believed compromised: out of JWKS and its tokens refused at once; the active key is replaced by a new key, active without a publication delay.',
    )
    .argument('<kid>', 'the key id')
    .requiredOption('--reason <text>', 'why the key is withdrawn (recorded in the audit log)')
    .action((kid: string, options: { reason: string }) =>
      withKeys(async (signingKeys) => {
        const reason = options.reason.trim();
        if (reason.length === 0 || reason.length > 500) throw invalidValue('--reason must say why the key is withdrawn, 1-500 characters.');
        cli.print(presentWithdrawal(await signingKeys.withdraw(kid, reason, cli.actor), (row) => signingKeys.activatableAt(row)));
      }),
    );

  keys
    .command('destroy')
    .description("Destroy a retired key's HSM object once it has left JWKS.")
    .argument('<kid>', 'the key id')
    .action((kid: string) =>
      withKeys(async (signingKeys) => {
        await signingKeys.destroy(kid, cli.actor);
        cli.print({ destroyed: kid });
      }),
    );
}

function dateOf(value: string): Date {
  const date = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value) || Number.isNaN(date.getTime())) {
    throw invalidValue(`--at must be an ISO 8601 date-time with a time zone such as 2030-01-01T00:00:00Z, got "${value.slice(0, 40)}".`);
  }
  return date;
}
