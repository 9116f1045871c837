import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { appendFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { AppConfig } from '@app/config';
import { Database } from '@app/persistence';
import { LOGGER, Logger } from '@app/observability';
import { OrganizationService, PLATFORM_ORG } from './organizations/organization.service';
import { OrganizationRepository } from './organizations/organization.repository';
import { SystemAccountService } from './system-accounts/system-account.service';
import { EnrolmentLinks, IssuedEnrolmentLink } from './users/enrolment-links';
import { UserService } from './users/user.service';

/** Arbitrary constant: concurrent instances bootstrap one at a time. */
const BOOTSTRAP_LOCK_ID = 7_400_002;
const ADMINISTRATION_ROLE = 'Administration';

/**
 * First start (DECISIONS 11): the reserved organization `platform` with the platform administrator
 * `platform-admin`, the platform administrator person (PLATFORM_ADMIN_USER, default `admin`) with a
 * one-time enrolment link (DECISIONS 14.4), and, when BOOTSTRAP_ORG_ID is set, that organization with
 * its administrator `{org}-admin`. Generated secrets and the link go once to
 * DATA_DIR/bootstrap-credentials (owner-only) and to the terminal; the log says where, never the value.
 */
@Injectable()
export class BootstrapService implements OnApplicationBootstrap {
  constructor(
    private readonly config: AppConfig,
    private readonly db: Database,
    private readonly organizations: OrganizationService,
    private readonly organizationRows: OrganizationRepository,
    private readonly accounts: SystemAccountService,
    private readonly users: UserService,
    private readonly enrolmentLinks: EnrolmentLinks,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.db.withAdvisoryLock(BOOTSTRAP_LOCK_ID, () => this.bootstrap());
  }

  private async bootstrap(): Promise<void> {
    const created: { clientId: string; secret: string; generated: boolean; tokenUrl: string }[] = [];
    let link: IssuedEnrolmentLink | undefined;
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
      link = await this.platformAdministratorPerson();
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
    if (generated.length === 0 && !link) return;
    const file = join(this.config.dataDir, 'bootstrap-credentials');
    const linkLines = link
      ? `# The platform administrator person "${link.userName}": open this link once to choose a password and enrol a second factor\nenrolment_link=${link.url}\nenrolment_link_expires=${link.expiresAt.toISOString()}\n\n`
      : '';
    const text = generated.map((c) => `client_id=${c.clientId}\nclient_secret=${c.secret}\ntoken_url=${c.tokenUrl}\n\n`).join('') + linkLines;
    appendFileSync(file, text, { mode: 0o600 });
    chmodSync(file, 0o600);
    this.logger.warn(
      { file, clientIds: generated.map((c) => c.clientId), ...(link ? { enrolmentLinkFor: link.userName } : {}) },
      'bootstrap administrators created; their generated secrets and the first sign-in link are in this owner-only file',
    );
    // Shown once to the person at the terminal, outside the log stream (which must never hold secrets).
    if (process.stderr.isTTY) {
      process.stderr.write(
        `\nBootstrap administrator credentials (shown once; also in ${file}):\n` +
          generated.map((c) => `  client_id=${c.clientId}\n  client_secret=${c.secret}\n  token_url=${c.tokenUrl}\n`).join('\n') +
          (link
            ? `\nFirst sign-in: open this link once (it works until ${link.expiresAt.toISOString()}) to sign in as "${link.userName}":\n  ${link.url}\n`
            : '') +
          '\n',
      );
    }
  }

  /**
   * The platform administrator person (DECISIONS 11): a user of `platform` with the Administration role,
   * organization and platform administrator, who signs in with a password and a second factor chosen
   * through the enrolment link made here (DECISIONS 14.4). PLATFORM_ADMIN_USER empty: none.
   */
  private async platformAdministratorPerson(): Promise<IssuedEnrolmentLink | undefined> {
    const userName = this.config.platformAdminUser;
    if (!userName) return undefined;
    const system = { name: 'system' };
    const person = await this.users.create(
      PLATFORM_ORG,
      { userName, role: ADMINISTRATION_ROLE, displayName: 'Platform administrator', organizationAdministrator: true, platformAdministrator: true },
      system,
    );
    if (this.config.nodeEnv === 'production') {
      // Production writes nothing to DATA_DIR (a read-only root file system holds, DECISIONS 13), and a
      // container's terminal is its log: the link is asked for with the command line instead.
      this.logger.warn(
        { userName },
        `the platform administrator person has no way in yet: run \`npm run cli -- user enrolment-link ${PLATFORM_ORG} ${userName}\` for their one-time enrolment link`,
      );
      return undefined;
    }
    return this.enrolmentLinks.issue(PLATFORM_ORG, person.id, system);
  }
}
