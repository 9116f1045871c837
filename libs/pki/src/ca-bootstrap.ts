import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { PLATFORM_ORG } from '@app/accounts';
import { DomainError } from '@app/common';
import { AppConfig } from '@app/config';
import { LOGGER, Logger } from '@app/observability';
import { CertificateAuthority } from './certificate-authority.service';

/**
 * On first start the bootstrap organizations, `platform` and the one BOOTSTRAP_ORG_ID names (libs/accounts
 * BootstrapService), each get a self-signed CA (CREDENTIAL-MANAGEMENT.md, "PKI"), so that the README's
 * walk-through issues a card end to end in either. A later start finds them and creates none. Several
 * instances starting at once create one each: the CA row's primary key decides, and the others find it there.
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
    const orgs = this.config.bootstrapOrgId ? [PLATFORM_ORG, this.config.bootstrapOrgId] : [PLATFORM_ORG];
    for (const org of orgs) await this.ensureCa(org);
  }

  private async ensureCa(org: string): Promise<void> {
    try {
      await this.authority.get(org);
      return;
    } catch (error) {
      if (!(error instanceof DomainError) || error.code !== 'NOT_FOUND') throw error;
    }
    try {
      const ca = await this.authority.create(org, {}, { name: 'system' });
      this.logger.info({ org, subject: ca.subject }, 'self-signed CA created for the bootstrap organization');
    } catch (error) {
      if (!(error instanceof DomainError) || error.code !== 'CONFLICT') throw error;
    }
  }
}
