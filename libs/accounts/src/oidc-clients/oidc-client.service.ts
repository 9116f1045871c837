import { Injectable } from '@nestjs/common';
import { Clock, notFound } from '@app/common';
import { Actor, AuditLog } from '@app/audit';
import { ChangeFeed } from '@app/persistence';
import { SystemAccountRepository } from '../system-accounts/system-account.repository';
import { SystemAccountService } from '../system-accounts/system-account.service';
import { OidcClient, OidcClientRepository, OidcClientRow, OidcClientSettings } from './oidc-client.repository';

/**
 * A system account's settings as a client of the authorization code flow (DECISIONS 15.1), written
 * through the admin API under the same grant rules as every other write to the account (DECISIONS
 * 5.3), and read by the authorization and token endpoints of libs/auth.
 */
@Injectable()
export class OidcClientService {
  constructor(
    private readonly clients: OidcClientRepository,
    private readonly accounts: SystemAccountService,
    private readonly accountRows: SystemAccountRepository,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    private readonly changes: ChangeFeed,
  ) {}

  async get(orgId: string, clientId: string): Promise<OidcClientRow> {
    const account = await this.accounts.get(orgId, clientId);
    const row = await this.clients.find(account.id);
    if (!row) throw notFound(`System account "${clientId}" is not set up for the authorization code flow; PUT its oidc-client settings first.`);
    return row;
  }

  /** The client for the authorization and token endpoints: undefined for an unknown account or one not set up for the flow. */
  find(orgId: string, clientId: string): Promise<OidcClient | undefined> {
    return this.clients.findByClientId(orgId, clientId);
  }

  async put(orgId: string, clientId: string, settings: OidcClientSettings, actor: Actor): Promise<OidcClientRow> {
    return this.accounts.writeGranted(orgId, clientId, actor, {}, async (tx) => {
      const account = await this.accountRows.lockInOrg(orgId, clientId, tx);
      if (!account) throw notFound(`System account "${clientId}" does not exist in organization "${orgId}".`);
      const row = await this.clients.upsert(account.id, settings, this.clock.now(), tx);
      await this.audit.record(
        {
          org: orgId,
          actor: actor.name,
          action: 'oidc_client.configure',
          target: clientId,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
          details: { ...settings },
        },
        tx,
      );
      // The authorization and token endpoints cache clients (libs/auth OidcClientCache): every change is published.
      this.changes.publishOnCommit(tx, 'subject', [account.id]);
      return row;
    });
  }

  /** Takes the account out of the flow: new authorization requests for it fail; tokens already issued keep their lifetime. */
  async remove(orgId: string, clientId: string, actor: Actor): Promise<void> {
    await this.accounts.writeGranted(orgId, clientId, actor, {}, async (tx) => {
      const account = await this.accountRows.lockInOrg(orgId, clientId, tx);
      if (!account || !(await this.clients.delete(account.id, tx))) {
        throw notFound(`System account "${clientId}" is not set up for the authorization code flow.`);
      }
      await this.audit.record(
        {
          org: orgId,
          actor: actor.name,
          action: 'oidc_client.remove',
          target: clientId,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
        },
        tx,
      );
      this.changes.publishOnCommit(tx, 'subject', [account.id]);
    });
  }
}
