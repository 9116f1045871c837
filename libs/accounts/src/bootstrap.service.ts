import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { appendFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { AppConfig } from '@app/config';
import { Database } from '@app/persistence';
import { LOGGER, Logger } from '@app/observability';
import { OrganizationService, PLATFORM_ORG } from './organizations/organization.service';
import { OrganizationRepository } from './organizations/organization.repository';
import { SystemAccountService } from './system-accounts/system-account.service';

/** Arbitrary constant: concurrent instances bootstrap one at a time. */
const BOOTSTRAP_LOCK_ID = 7_400_002;
const ADMINISTRATION_ROLE = 'Administration';

/**
 * First start (DECISIONS 11): the reserved organization `platform` with the platform administrator
 * `platform-admin`, and, when BOOTSTRAP_ORG_ID is set, that organization with its administrator
 * `{org}-admin`. Generated secrets go once to DATA_DIR/bootstrap-credentials (owner-only); the log
 * says where, never the value.
 */
@Injectable()
export class BootstrapService implements OnApplicationBootstrap {
  constructor(
    private readonly config: AppConfig,
    private readonly db: Database,
    private readonly organizations: OrganizationService,
    private readonly organizationRows: OrganizationRepository,
    private readonly accounts: SystemAccountService,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.db.withAdvisoryLock(BOOTSTRAP_LOCK_ID, () => this.bootstrap());
  }

  private async bootstrap(): Promise<void> {
    const created: { clientId: string; secret: string; generated: boolean; tokenUrl: string }[] = [];
    if ((await this.organizationRows.count()) === 0) {
      await this.organizations.create({ id: PLATFORM_ORG, name: 'Platform administration' }, { name: 'system' });
      const { account, secret } = await this.accounts.create(
        PLATFORM_ORG,
        {
          suffix: 'admin',
          role: ADMINISTRATION_ROLE,
          platformAdministrator: true,
          organizationAdministrator: true,
          description: 'Platform administrator (bootstrap)',
          secretValue: this.config.platformAdminSecret,
        },
        { name: 'system' },
      );
      created.push({
        clientId: account.client_id,
        secret: secret.value,
        generated: !this.config.platformAdminSecret,
        tokenUrl: this.accounts.tokenUrl(PLATFORM_ORG),
      });
    }
    const orgId = this.config.bootstrapOrgId;
    if (orgId && !(await this.organizationRows.findById(orgId))) {
      await this.organizations.create({ id: orgId, name: orgId }, { name: 'system' });
      const { account, secret } = await this.accounts.create(
        orgId,
        {
          suffix: 'admin',
          role: ADMINISTRATION_ROLE,
          organizationAdministrator: true,
          description: 'Organization administrator (bootstrap)',
          secretValue: this.config.bootstrapClientSecret,
        },
        { name: 'system' },
      );
      created.push({
        clientId: account.client_id,
        secret: secret.value,
        generated: !this.config.bootstrapClientSecret,
        tokenUrl: this.accounts.tokenUrl(orgId),
      });
    }
    const generated = created.filter((c) => c.generated);
    if (generated.length === 0) return;
    const file = join(this.config.dataDir, 'bootstrap-credentials');
    appendFileSync(file, generated.map((c) => `client_id=${c.clientId}\nclient_secret=${c.secret}\ntoken_url=${c.tokenUrl}\n\n`).join(''), { mode: 0o600 });
    chmodSync(file, 0o600);
    this.logger.warn(
      { file, clientIds: generated.map((c) => c.clientId) },
      'bootstrap administrators created; their generated secrets are in this owner-only file',
    );
    // Shown once to the person at the terminal, outside the log stream (which must never hold secrets).
    if (process.stderr.isTTY) {
      process.stderr.write(
        `\nBootstrap administrator credentials (shown once; also in ${file}):\n` +
          generated.map((c) => `  client_id=${c.clientId}\n  client_secret=${c.secret}\n  token_url=${c.tokenUrl}\n`).join('\n') +
          '\n',
      );
    }
  }
}
