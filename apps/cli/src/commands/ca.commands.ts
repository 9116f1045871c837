import { Argument, Command, Option } from 'commander';
import { CredentialFollowerModule } from '@app/credential-management';
import { AppConfig } from '@app/config';
import { HsmModule } from '@app/hsm';
import { LOGGER, Logger } from '@app/observability';
import { CaPresenter, CertificateAuthority, PkiModule, generationOf } from '@app/pki';
import { hsmOptions } from '../../../api/src/app.module';
import { CliRuntime } from '../cli-runtime';

/**
 * `ca revoke-generation`: the admin API's POST /admin/v1/organizations/{org}/ca/generations/{n}/revocation
 * (libs/pki README, "Revoking a compromised CA generation"). Opens the HSM like the service does (the
 * CRLs are re-signed at once) and carries the credentials and smart-card sessions of the revoked
 * certificates as the service does; every instance hears of it through the change feed.
 */
export function registerCaCommands(program: Command, cli: CliRuntime): void {
  const ca = program.command('ca').description("Organizations' issuing CAs (opens the HSM like the service).");

  ca.command('revoke-generation')
    .description(
      'Revoke a CA generation believed compromised: every certificate it issued is revoked (cACompromise) on its CRL and over OCSP, ' +
        'their credentials revoked and smart-card sessions ended; the current generation then issues nothing until a renewal.',
    )
    .argument('<org>', 'the organization id')
    .addArgument(new Argument('<generation>', 'the generation number (GET /admin/v1/organizations/{org}/ca lists them)'))
    .addOption(new Option('--reason <reason>', 'why (RFC 5280)').choices(['cACompromise']).makeOptionMandatory())
    .action((org: string, generation: string, options: { reason: 'cACompromise' }) =>
      cli.withServices(
        async (app) => {
          const authority = app.get(CertificateAuthority);
          const presenter = app.get(CaPresenter);
          const revocation = await authority.revokeGeneration(org, generationOf(generation), options.reason, cli.actor);
          cli.print({ ...presenter.revocation(revocation), certificateAuthority: presenter.ca(await authority.get(org), await authority.generations(org)) });
        },
        [
          HsmModule.forRootAsync({ inject: [AppConfig, LOGGER], useFactory: (config: AppConfig, logger: Logger) => hsmOptions(config, logger) }),
          PkiModule,
          CredentialFollowerModule,
        ],
      ),
    );
}
