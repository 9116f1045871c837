import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { DomainError } from '@app/common';
import { AppConfig } from '@app/config';
import { LOGGER, Logger } from '@app/observability';
import { CertificateAuthority } from './certificate-authority.service';

/** The organization the platform bootstraps (libs/accounts BootstrapService). */
const BOOTSTRAP_ORG = 'platform';

/**
 * On first start the bootstrap organization gets a self-signed CA (CREDENTIAL-MANAGEMENT.md, "PKI"),
 * so that the README's walk-through issues a card end to end. Several instances starting at once
 * create one: the CA row's primary key decides, and the others find it there.
 */
@Injectable()
export class CaBootstrap implements OnApplicationBootstrap {
  constructor(
    private readonly authority: CertificateAuthority,
    private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.bootstrapCa) return;
    try {
      await this.authority.get(BOOTSTRAP_ORG);
      return;
    } catch (error) {
      if (!(error instanceof DomainError) || error.code !== 'NOT_FOUND') throw error;
    }
    try {
      const ca = await this.authority.create(BOOTSTRAP_ORG, {}, { name: 'system' });
      this.logger.info({ org: BOOTSTRAP_ORG, subject: ca.subject }, 'self-signed CA created for the bootstrap organization');
    } catch (error) {
      if (!(error instanceof DomainError) || error.code !== 'CONFLICT') throw error;
    }
  }
}
