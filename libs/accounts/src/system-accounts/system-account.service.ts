import { Injectable } from '@nestjs/common';
import { randomInt, randomUUID } from 'node:crypto';
import { Clock, DomainError, invalidValue, notFound } from '@app/common';
import { AppConfig } from '@app/config';
import { ChangeFeed, Database, Transaction } from '@app/persistence';
import { AuditService } from '../audit/audit.service';
import { parseCertificateUpload } from './certificate-parser';
import { SecretHasher } from './secret-hasher';
import { CertificateRow, SecretMetadataRow, SystemAccountRepository, SystemAccountRow } from './system-account.repository';

export interface IssuedSecret {
  id: string;
  /** The secret itself: returned once, at creation, and never stored. */
  value: string;
  expiresAt: Date;
}

export interface Actor {
  name: string;
  sourceAddress?: string;
}

const DAY_MS = 86_400_000;
const SUFFIX_PATTERN = /^[A-Za-z0-9]{1,64}$/;

@Injectable()
export class SystemAccountService {
  constructor(
    private readonly accounts: SystemAccountRepository,
    private readonly hasher: SecretHasher,
    private readonly audit: AuditService,
    private readonly db: Database,
    private readonly changes: ChangeFeed,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  tokenUrl(orgId: string): string {
    return `${this.config.authBaseUrl}/authentication/customer/${orgId}/token`;
  }

  /**
   * Creates the account and its first secret in one transaction. A given suffix that is taken is a
   * 409 decided by the unique index; a generated one (OSRV + 9 digits) is drawn again on collision.
   */
  async create(
    orgId: string,
    input: { suffix?: string; role: string; organizationAdministrator?: boolean; platformAdministrator?: boolean; description?: string | null; secretValue?: string },
    actor: Actor,
  ): Promise<{ account: SystemAccountRow; secret: IssuedSecret }> {
    if (input.suffix !== undefined && !SUFFIX_PATTERN.test(input.suffix)) {
      throw invalidValue('suffix must be 1-64 letters or digits (A-Z, a-z, 0-9); the Client ID is {organization}-{suffix}.');
    }
    for (let attempt = 0; ; attempt++) {
      const suffix = input.suffix ?? `OSRV${String(randomInt(0, 1_000_000_000)).padStart(9, '0')}`;
      try {
        return await this.db.transaction(async (tx) => {
          const now = this.clock.now();
          const account = await this.accounts.create(
            {
              id: randomUUID(),
              orgId,
              clientId: `${orgId}-${suffix}`,
              role: input.role,
              description: input.description ?? null,
              organizationAdministrator: input.organizationAdministrator ?? false,
              platformAdministrator: input.platformAdministrator ?? false,
              now,
            },
            tx,
          );
          const secret = await this.insertSecret(account.id, input.secretValue, undefined, tx);
          await this.audit.record(
            { org: orgId, actor: actor.name, action: 'system_account.create', target: account.client_id, outcome: 'success', sourceAddress: actor.sourceAddress, details: { role: account.role, organizationAdministrator: account.organization_administrator } },
            tx,
          );
          return { account, secret };
        });
      } catch (error) {
        const retry = input.suffix === undefined && error instanceof DomainError && error.code === 'UNIQUENESS' && attempt < 3;
        if (!retry) throw error;
      }
    }
  }

  async get(orgId: string, clientId: string): Promise<SystemAccountRow> {
    const account = await this.accounts.findInOrg(orgId, clientId);
    if (!account) throw notFound(`System account "${clientId}" does not exist in organization "${orgId}".`);
    return account;
  }

  list(orgId: string, offset: number, limit: number): Promise<{ rows: SystemAccountRow[]; total: number }> {
    return this.accounts.listInOrg(orgId, offset, limit);
  }

  async update(
    orgId: string,
    clientId: string,
    changes: { role?: string; description?: string | null; disabled?: boolean; organizationAdministrator?: boolean },
    actor: Actor,
  ): Promise<SystemAccountRow> {
    const row = await this.accounts.update(orgId, clientId, changes, this.clock.now());
    if (!row) throw notFound(`System account "${clientId}" does not exist in organization "${orgId}".`);
    // Role, flags and the disabled flag apply to the account's live tokens at once, on every instance.
    await this.changes.publish('subject', row.id);
    await this.audit.record({ org: orgId, actor: actor.name, action: 'system_account.update', target: clientId, outcome: 'success', sourceAddress: actor.sourceAddress, details: { changes } });
    return row;
  }

  async createSecret(orgId: string, clientId: string, expiresAt: Date | undefined, actor: Actor): Promise<IssuedSecret> {
    const account = await this.get(orgId, clientId);
    if (expiresAt && expiresAt.getTime() <= this.clock.now().getTime()) {
      throw invalidValue('expiresAt must be in the future.');
    }
    const secret = await this.insertSecret(account.id, undefined, expiresAt);
    await this.audit.record({ org: orgId, actor: actor.name, action: 'client_secret.create', target: clientId, outcome: 'success', sourceAddress: actor.sourceAddress, details: { secretId: secret.id, expiresAt: secret.expiresAt } });
    return secret;
  }

  async listSecrets(orgId: string, clientId: string): Promise<SecretMetadataRow[]> {
    const account = await this.get(orgId, clientId);
    return this.accounts.listSecrets(account.id);
  }

  async uploadCertificate(orgId: string, clientId: string, pem: string, actor: Actor): Promise<CertificateRow> {
    const account = await this.get(orgId, clientId);
    const now = this.clock.now();
    const parsed = parseCertificateUpload(pem, now);
    const expiresAt = new Date(now.getTime() + this.config.certificateLifetimeDays * DAY_MS);
    const row = await this.accounts.addCertificate(account.id, parsed, now, expiresAt);
    await this.audit.record({ org: orgId, actor: actor.name, action: 'client_certificate.upload', target: clientId, outcome: 'success', sourceAddress: actor.sourceAddress, details: { thumbprint: row.thumbprint, subject: row.subject } });
    return row;
  }

  async listCertificates(orgId: string, clientId: string): Promise<CertificateRow[]> {
    const account = await this.get(orgId, clientId);
    return this.accounts.listCertificates(account.id);
  }

  private async insertSecret(accountId: string, value: string | undefined, expiresAt: Date | undefined, tx?: Transaction): Promise<IssuedSecret> {
    const now = this.clock.now();
    const secret: IssuedSecret = {
      id: randomUUID(),
      value: value ?? this.hasher.generate(),
      expiresAt: expiresAt ?? new Date(now.getTime() + this.config.secretLifetimeDays * DAY_MS),
    };
    await this.accounts.addSecret({ id: secret.id, accountId, hash: this.hasher.hash(secret.value), now, expiresAt: secret.expiresAt }, tx);
    return secret;
  }
}
