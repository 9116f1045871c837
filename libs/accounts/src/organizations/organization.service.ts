import { Injectable } from '@nestjs/common';
import { Clock, DomainError, IfMatch, invalidValue, isOrgId, notFound, preconditionFailed } from '@app/common';
import { AppConfig } from '@app/config';
import { ChangeFeed, Database, FeedCache } from '@app/persistence';
import { Actor, AuditLog, AuditRetention } from '@app/audit';
import { AccountDependents } from '../account-dependents';
import { OrganizationRepository, OrganizationRow } from './organization.repository';

/** What an organization still holds, by kind (systemAccounts, users, and what other libraries register, e.g. devices). */
export type OrganizationHoldings = Record<string, number>;
import { OrganizationSettings, withDefaults } from './organization-settings';

export interface Organization {
  id: string;
  name: string;
  settings: OrganizationSettings;
  created: Date;
  lastModified: Date;
  version: number;
}

/** The organization name reserved for the platform administrator's own account. */
export const PLATFORM_ORG = 'platform';

export function toOrganization(row: OrganizationRow): Organization {
  return { id: row.id, name: row.name, settings: withDefaults(row.settings), created: row.created_at, lastModified: row.updated_at, version: row.version };
}

/** Bounds memory; an organization is its name and a few settings. */
const MAX_CACHED_ORGANIZATIONS = 10_000;

@Injectable()
export class OrganizationService {
  /**
   * Organizations as hot paths read them (settings on device creation and token issue, the name on
   * certificate issuance), kept per instance. Every change or deletion publishes 'organization' with
   * the organization's id, which evicts it on every instance.
   */
  private readonly cache: FeedCache<Organization | null>;

  constructor(
    private readonly organizations: OrganizationRepository,
    private readonly changes: ChangeFeed,
    private readonly clock: Clock,
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly dependents: AccountDependents,
    private readonly config: AppConfig,
    retention: AuditRetention,
  ) {
    retention.useSettings(() => this.organizations.auditRetentionDays());
    this.cache = new FeedCache(changes, {
      evicts: (change) => (change.topic === 'organization' ? { key: change.id } : undefined),
      maxEntries: MAX_CACHED_ORGANIZATIONS,
    });
  }

  async get(id: string): Promise<Organization> {
    const organization = isOrgId(id) ? await this.cached(id) : undefined;
    if (!organization) throw notFound(`Organization "${id}" does not exist.`);
    return organization;
  }

  async list(offset: number, limit: number): Promise<{ rows: Organization[]; total: number }> {
    const { rows, total } = await this.organizations.list(offset, limit);
    return { rows: rows.map(toOrganization), total };
  }

  /** Settings as the token service and resources read them; undefined for an unknown org. */
  async findSettings(id: string): Promise<OrganizationSettings | undefined> {
    return (await this.cached(id))?.settings;
  }

  private async cached(id: string): Promise<Organization | undefined> {
    const organization = await this.cache.read(id, async () => {
      const row = await this.organizations.findById(id);
      return row ? toOrganization(row) : null;
    });
    return organization ?? undefined;
  }

  async create(input: { id: string; name: string; settings?: Partial<OrganizationSettings> }, actor: Actor): Promise<Organization> {
    this.checkRetention(input.settings);
    return this.db.transaction(async (tx) => {
      const row = await this.organizations.create({ id: input.id, name: input.name, settings: withDefaults(input.settings), now: this.clock.now() }, tx);
      await this.audit.record(
        {
          org: row.id,
          actor: actor.name,
          action: 'organization.create',
          target: row.id,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
        },
        tx,
      );
      // An earlier read of this id cached "no such organization" on every instance: evict it.
      this.changes.publishOnCommit(tx, 'organization', [row.id]);
      return toOrganization(row);
    });
  }

  /** `action` names the change in the audit log: a PATCH of name and settings, or a PUT of the settings. */
  async update(
    id: string,
    changes: { name?: string; settings?: Partial<OrganizationSettings> },
    actor: Actor,
    action: 'organization.update' | 'organization.settings.update' = 'organization.update',
    ifMatch?: IfMatch,
  ): Promise<Organization> {
    this.checkRetention(changes.settings);
    const row = await this.db.transaction(async (tx) => {
      // If-Match (RFC 7644 3.14): the row is locked, so the version compared is the one changed.
      if (ifMatch) {
        const version = await this.organizations.lockVersion(id, tx);
        if (version === undefined) throw notFound(`Organization "${id}" does not exist.`);
        if (!ifMatch.matches(version)) throw preconditionFailed(`Organization "${id}"`, version);
      }
      const updated = await this.organizations.update(id, changes, this.clock.now(), tx);
      if (!updated) throw notFound(`Organization "${id}" does not exist.`);
      await this.audit.record(
        {
          org: id,
          actor: actor.name,
          action,
          target: id,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
          details: { changes },
        },
        tx,
      );
      if (changes.settings) await this.dependents.settingsChanged(id, withDefaults(updated.settings), actor, tx);
      // The Application-ID policy is read with each token's state.
      this.changes.publishOnCommit(tx, 'organization', [id]);
      return updated;
    });
    return toOrganization(row);
  }

  /**
   * Deletes an organization (DECISIONS 11). Without `force` it is refused (409) while the
   * organization has system accounts, users or devices; its bootstrap administrator `{org}-admin`
   * counts like any account, since it holds live credentials. With `force` everything of the
   * organization goes in one transaction, except its audit events, which record the deletion. The
   * reserved organization `platform` is never deleted. Tokens of its accounts and users stop
   * working at once: their rows are gone, and every instance drops its cached token states.
   */
  async delete(id: string, options: { force: boolean }, actor: Actor): Promise<OrganizationHoldings> {
    if (id === PLATFORM_ORG) {
      throw new DomainError('CONFLICT', `The organization "${PLATFORM_ORG}" holds the platform administrator and cannot be deleted.`);
    }
    const removed = await this.db.transaction(async (tx) => {
      if (!(await this.organizations.lockForDelete(id, tx))) throw notFound(`Organization "${id}" does not exist.`);
      const holdings: OrganizationHoldings = { ...(await this.organizations.countOwnHoldings(id, tx)) };
      for (const holding of this.dependents.registeredHoldings()) holdings[holding.key] = await holding.count(id, tx);
      if (!options.force && Object.values(holdings).some((n) => n > 0)) {
        throw new DomainError(
          'CONFLICT',
          `Organization "${id}" still has ${this.describe(holdings)}. Delete them first, or repeat with ?force=true to delete the organization with everything it holds (its audit events are kept).`,
        );
      }
      await this.dependents.removeOrganization(id, tx);
      await this.organizations.delete(id, tx);
      await this.audit.record(
        {
          org: id,
          actor: actor.name,
          action: 'organization.delete',
          target: id,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
          details: { force: options.force, removed: holdings },
        },
        tx,
      );
      this.changes.publishOnCommit(tx, 'organization', [id]);
      return holdings;
    });
    return removed;
  }

  /** An organization keeps its audit events at least as long as the platform requires (AUDIT_RETENTION_MIN_DAYS; DECISIONS 11.3). */
  private checkRetention(settings: Partial<OrganizationSettings> | undefined): void {
    const days = settings?.auditRetentionDays;
    const floor = this.config.auditRetention.minDays;
    if (typeof days === 'number' && days < floor) {
      throw invalidValue(
        `settings.auditRetentionDays must be at least ${floor} (the platform's AUDIT_RETENTION_MIN_DAYS), or null to keep audit events for ever; got ${days}.`,
      );
    }
  }

  private describe(holdings: OrganizationHoldings): string {
    const labels = [
      { key: 'systemAccounts', singular: 'system account', plural: 'system accounts' },
      { key: 'users', singular: 'user', plural: 'users' },
      ...this.dependents.registeredHoldings(),
    ];
    return labels.map(({ key, singular, plural }) => `${holdings[key]} ${holdings[key] === 1 ? singular : plural}`).join(', ');
  }
}
