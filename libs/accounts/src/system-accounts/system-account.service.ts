import { Injectable } from '@nestjs/common';
import { randomInt, randomUUID } from 'node:crypto';
import { Clock, DomainError, invalidValue, notFound, isUuid } from '@app/common';
import { AppConfig } from '@app/config';
import { ChangeFeed, Database, Transaction } from '@app/persistence';
import { Actor, AuditLog } from '@app/audit';
import { AccountDependents } from '../account-dependents';
import { GrantChange, GrantPolicy } from '../grant.policy';
import { parseCertificateUpload } from './certificate-parser';
import { SecretHasher } from './secret-hasher';
import { CertificateRow } from '../certificates/certificate-store';
import { ListedSystemAccountRow, SecretMetadataRow, SystemAccountChanges, SystemAccountRepository, SystemAccountRow } from './system-account.repository';
import { BackchannelSettings, notificationEndpointAddressProblem, notificationEndpointPolicy } from './backchannel-settings';

export interface IssuedSecret {
  id: string;
  /** The secret itself: returned once, at creation, and never stored. */
  value: string;
  expiresAt: Date;
}

const DAY_MS = 86_400_000;
const SUFFIX_PATTERN = /^[A-Za-z0-9]{1,64}$/;

@Injectable()
export class SystemAccountService {
  constructor(
    private readonly accounts: SystemAccountRepository,
    private readonly hasher: SecretHasher,
    private readonly audit: AuditLog,
    private readonly dependents: AccountDependents,
    private readonly db: Database,
    private readonly changes: ChangeFeed,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    private readonly grants: GrantPolicy,
  ) {}

  /** A ping endpoint the ping would refuse (DECISIONS 16) is a 400 at registration. */
  private refuseInsideEndpoint(settings: BackchannelSettings | null | undefined): void {
    const problem = notificationEndpointAddressProblem(settings, notificationEndpointPolicy(this.config));
    if (problem) throw invalidValue(`Invalid request body: ${problem}.`);
  }

  tokenUrl(orgId: string): string {
    return `${this.config.authBaseUrl}/authentication/customer/${orgId}/token`;
  }

  /**
   * Creates the account and its first secret in one transaction. A given suffix that is taken is a
   * 409 decided by the unique index; a generated one (OSRV + 9 digits) is drawn again on collision.
   */
  async create(
    orgId: string,
    input: {
      suffix?: string;
      role: string;
      organizationAdministrator?: boolean;
      platformAdministrator?: boolean;
      description?: string | null;
      backchannelAuthentication?: BackchannelSettings | null;
      secretValue?: string;
    },
    actor: Actor,
  ): Promise<{ account: SystemAccountRow; secret: IssuedSecret }> {
    if (input.suffix !== undefined && !SUFFIX_PATTERN.test(input.suffix)) {
      throw invalidValue('suffix must be 1-64 letters or digits (A-Z, a-z, 0-9); the Client ID is {organization}-{suffix}.');
    }
    this.refuseInsideEndpoint(input.backchannelAuthentication);
    await this.grants.audited(orgId, actor, input.suffix ? `${orgId}-${input.suffix}` : orgId, async () =>
      this.grants.check(actor, 'system_account', undefined, { role: input.role }),
    );
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
              backchannel: input.backchannelAuthentication,
              now,
            },
            tx,
          );
          const secret = await this.insertSecret(account.id, input.secretValue, undefined, tx);
          await this.audit.record(
            {
              org: orgId,
              actor: actor.name,
              action: 'system_account.create',
              target: account.client_id,
              outcome: 'success',
              sourceAddress: actor.sourceAddress,
              correlationId: actor.correlationId,
              details: {
                role: account.role,
                organizationAdministrator: account.organization_administrator,
                ...(account.backchannel_token_delivery_mode ? { backchannelTokenDeliveryMode: account.backchannel_token_delivery_mode } : {}),
              },
            },
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

  list(orgId: string, offset: number, limit: number): Promise<{ rows: ListedSystemAccountRow[]; total: number }> {
    return this.accounts.listInOrg(orgId, offset, limit, this.clock.now());
  }

  /**
   * Changes role, description, flags, the disabled flag or the CIBA registration (DECISIONS 16). All
   * of them apply to the account's live tokens and its next requests at once, on every instance (the
   * token state and client credential caches drop on the 'subject' change). Re-enabling revokes the
   * tokens the account had while disabled (see the repository).
   */
  async update(
    orgId: string,
    clientId: string,
    input: Omit<SystemAccountChanges, 'backchannel'> & { backchannelAuthentication?: BackchannelSettings | null },
    actor: Actor,
  ): Promise<SystemAccountRow> {
    const { backchannelAuthentication, ...rest } = input;
    this.refuseInsideEndpoint(backchannelAuthentication);
    const changes: SystemAccountChanges = { ...rest, ...(backchannelAuthentication !== undefined ? { backchannel: backchannelAuthentication } : {}) };
    const row = await this.writeGranted(
      orgId,
      clientId,
      actor,
      { role: changes.role, organizationAdministrator: changes.organizationAdministrator },
      async (tx) => {
        const updated = await this.accounts.update(orgId, clientId, changes, this.clock.now(), tx);
        if (!updated) throw notFound(`System account "${clientId}" does not exist in organization "${orgId}".`);
        const details: Record<string, unknown> = { changes: input };
        const { reenabled, ...account } = updated;
        const revokedTokens = reenabled ? await this.dependents.revokeTokens({ accountId: account.id }, this.clock.now(), tx) : 0;
        if (revokedTokens > 0) details.revokedTokens = revokedTokens;
        await this.audit.record(
          {
            org: orgId,
            actor: actor.name,
            action: 'system_account.update',
            target: clientId,
            outcome: 'success',
            sourceAddress: actor.sourceAddress,
            correlationId: actor.correlationId,
            details,
          },
          tx,
        );
        this.changes.publishOnCommit(tx, 'subject', [account.id]);
        return account;
      },
    );
    return row;
  }

  /**
   * Deletes the account with its secrets, certificates and tokens; its tokens stop working at once.
   * The platform administrator's own account is not deleted this way (it would leave the platform
   * without an administrator); rotate its secret instead.
   */
  async delete(orgId: string, clientId: string, actor: Actor): Promise<void> {
    const account = await this.get(orgId, clientId);
    if (account.platform_administrator) {
      throw new DomainError(
        'CONFLICT',
        `"${clientId}" is the platform administrator and cannot be deleted; create a new secret and revoke the old one instead.`,
      );
    }
    await this.writeGranted(orgId, clientId, actor, {}, async (tx) => {
      const deleted = await this.accounts.delete(orgId, clientId, tx);
      if (!deleted) throw notFound(`System account "${clientId}" does not exist in organization "${orgId}".`);
      await this.audit.record(
        {
          org: orgId,
          actor: actor.name,
          action: 'system_account.delete',
          target: clientId,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
          details: { role: deleted.role },
        },
        tx,
      );
      this.changes.publishOnCommit(tx, 'subject', [account.id]);
    });
  }

  async createSecret(orgId: string, clientId: string, expiresAt: Date | undefined, actor: Actor): Promise<IssuedSecret> {
    const account = await this.get(orgId, clientId);
    if (expiresAt && expiresAt.getTime() <= this.clock.now().getTime()) {
      throw invalidValue('expiresAt must be in the future.');
    }
    const created = await this.writeGranted(orgId, clientId, actor, {}, async (tx) => {
      const secret = await this.insertSecret(account.id, undefined, expiresAt, tx);
      await this.audit.record(
        {
          org: orgId,
          actor: actor.name,
          action: 'client_secret.create',
          target: clientId,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
          details: { secretId: secret.id, expiresAt: secret.expiresAt },
        },
        tx,
      );
      // Client authentication caches an account's credentials: every change of them is published.
      this.changes.publishOnCommit(tx, 'subject', [account.id]);
      return secret;
    });
    return created;
  }

  /**
   * Revokes (deletes) one secret: it stops working at once, the account's other secrets keep working
   * (the end of a rotation with overlap). Tokens already issued stay valid until they expire;
   * disable the account to stop those too.
   */
  async revokeSecret(orgId: string, clientId: string, secretId: string, actor: Actor): Promise<void> {
    const account = await this.get(orgId, clientId);
    await this.writeGranted(orgId, clientId, actor, {}, async (tx) => {
      if (!isUuid(secretId) || !(await this.accounts.deleteSecret(account.id, secretId, tx))) {
        throw notFound(`System account "${clientId}" has no secret "${secretId.slice(0, 64)}".`);
      }
      await this.audit.record(
        {
          org: orgId,
          actor: actor.name,
          action: 'client_secret.revoke',
          target: clientId,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
          details: { secretId },
        },
        tx,
      );
      this.changes.publishOnCommit(tx, 'subject', [account.id]);
    });
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
    const row = await this.writeGranted(orgId, clientId, actor, {}, async (tx) => {
      const added = await this.accounts.addCertificate(account.id, parsed, now, expiresAt, tx);
      await this.audit.record(
        {
          org: orgId,
          actor: actor.name,
          action: 'client_certificate.upload',
          target: clientId,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
          details: { thumbprint: added.thumbprint, subject: added.subject },
        },
        tx,
      );
      this.changes.publishOnCommit(tx, 'subject', [account.id]);
      return added;
    });
    return row;
  }

  /** Deletes one certificate (by its x5t#S256 thumbprint): assertions signed with its key stop working at once. */
  async deleteCertificate(orgId: string, clientId: string, thumbprint: string, actor: Actor): Promise<void> {
    const account = await this.get(orgId, clientId);
    await this.writeGranted(orgId, clientId, actor, {}, async (tx) => {
      const row = await this.accounts.deleteCertificate(account.id, thumbprint, tx);
      if (!row) throw notFound(`System account "${clientId}" has no certificate "${thumbprint.slice(0, 64)}".`);
      await this.audit.record(
        {
          org: orgId,
          actor: actor.name,
          action: 'client_certificate.delete',
          target: clientId,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
          details: { thumbprint: row.thumbprint, subject: row.subject },
        },
        tx,
      );
      this.changes.publishOnCommit(tx, 'subject', [account.id]);
    });
  }

  async listCertificates(orgId: string, clientId: string): Promise<CertificateRow[]> {
    const account = await this.get(orgId, clientId);
    return this.accounts.listCertificates(account.id);
  }

  /**
   * A change of an existing account in one transaction, after the grant rules (DECISIONS 5.3) for a
   * request's caller under the account's row lock, so that a concurrent change of its role cannot
   * slip between check and write; a refusal is audited once the transaction has rolled back.
   * Also the way every other write that belongs to a system account is made (its OpenID Connect
   * client settings, OidcClientService).
   */
  writeGranted<T>(orgId: string, clientId: string, actor: Actor, change: GrantChange, write: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.grants.audited(orgId, actor, clientId, () =>
      this.db.transaction(async (tx) => {
        if (actor.principal) {
          const locked = await this.accounts.lockInOrg(orgId, clientId, tx);
          if (!locked) throw notFound(`System account "${clientId}" does not exist in organization "${orgId}".`);
          this.grants.check(actor, 'system_account', locked, change);
        }
        return write(tx);
      }),
    );
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
