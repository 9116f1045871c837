import { Injectable } from '@nestjs/common';
import { Clock, notFound } from '@app/common';
import { ChangeFeed } from '@app/persistence';
import { OrganizationRepository, OrganizationRow } from './organization.repository';
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

@Injectable()
export class OrganizationService {
  constructor(
    private readonly organizations: OrganizationRepository,
    private readonly changes: ChangeFeed,
    private readonly clock: Clock,
  ) {}

  async get(id: string): Promise<Organization> {
    const row = await this.organizations.findById(id);
    if (!row) throw notFound(`Organization "${id}" does not exist.`);
    return toOrganization(row);
  }

  /** Settings as the token service and resources read them; undefined for an unknown org. */
  async findSettings(id: string): Promise<OrganizationSettings | undefined> {
    const row = await this.organizations.findById(id);
    return row ? withDefaults(row.settings) : undefined;
  }

  async create(input: { id: string; name: string; settings?: Partial<OrganizationSettings> }): Promise<Organization> {
    const row = await this.organizations.create({ id: input.id, name: input.name, settings: withDefaults(input.settings), now: this.clock.now() });
    return toOrganization(row);
  }

  async update(id: string, changes: { name?: string; settings?: Partial<OrganizationSettings> }): Promise<Organization> {
    const row = await this.organizations.update(id, changes, this.clock.now());
    if (!row) throw notFound(`Organization "${id}" does not exist.`);
    // The Application-ID policy is read with each token's state.
    await this.changes.publish('organization', id);
    return toOrganization(row);
  }
}
