import { Injectable } from '@nestjs/common';
import { Actor, AuditLog, byActor } from '@app/audit';
import { UserService } from '@app/accounts';
import { Clock, IfMatch, ScimSearch, notFound, parseBody, isUuid } from '@app/common';
import { ChangeFeed, Database } from '@app/persistence';
import { DevicePolicyRepository } from '../device-policies/device-policy.repository';
import { GroupRepository, GroupRow } from './group.repository';
import { createGroupSchema, patchGroupSchema } from './group.schema';

export interface GroupMember {
  id: string;
  userName: string;
}

export interface GroupView {
  row: GroupRow;
  members: GroupMember[];
}

/**
 * Groups (CREDENTIAL-MANAGEMENT.md "Resources", "Reference data"): read over SCIM, written through the
 * admin API with their members. Membership lives on the users (libs/accounts, asked through
 * UserService in the same transaction); every user whose groups change has its live tokens see it
 * on the next request ('subject' change), since groups decide Operator Dependent reach.
 */
@Injectable()
export class GroupService {
  constructor(
    private readonly db: Database,
    private readonly groups: GroupRepository,
    private readonly devicePolicies: DevicePolicyRepository,
    private readonly users: UserService,
    private readonly audit: AuditLog,
    private readonly changes: ChangeFeed,
    private readonly clock: Clock,
  ) {}

  async create(orgId: string, body: unknown, actor: Actor): Promise<GroupView> {
    const input = parseBody(createGroupSchema, body, 'group');
    const row = await this.db.transaction(async (tx) => {
      const now = this.clock.now();
      const created = await this.groups.create(orgId, input.displayName, now, tx);
      const changedUsers = input.members ? await this.users.setGroupMembers(orgId, created.display_name, input.members, now, tx) : [];
      await this.audit.record(
        {
          org: orgId,
          ...byActor(actor),
          action: 'group.create',
          target: created.id,
          outcome: 'success',
          details: { displayName: created.display_name, members: input.members?.length ?? 0 },
        },
        tx,
      );
      this.changes.publishOnCommit(tx, 'subject', changedUsers);
      return created;
    });
    return this.view(orgId, row);
  }

  /** `limitTo`: the groups of an Operator Dependent caller, which reaches only those (others 404). */
  async get(orgId: string, id: string, limitTo?: readonly string[]): Promise<GroupView> {
    const row = isUuid(id) ? await this.groups.find(orgId, id) : undefined;
    if (!row || (limitTo && !limitTo.includes(row.display_name))) throw groupNotFound(id);
    return this.view(orgId, row);
  }

  async search(orgId: string, search: ScimSearch, limitTo?: readonly string[]): Promise<{ views: GroupView[]; total: number }> {
    const { rows, total } = await this.groups.search(orgId, search, limitTo);
    const members = await this.users.groupMembers(
      orgId,
      rows.map((row) => row.display_name),
    );
    return { views: rows.map((row) => ({ row, members: members.get(row.display_name) ?? [] })), total };
  }

  /** `ifMatch`: the change applies only to that version (else 412), compared under the row lock. */
  async update(orgId: string, id: string, body: unknown, actor: Actor, ifMatch?: IfMatch): Promise<GroupView> {
    const input = parseBody(patchGroupSchema, body, 'group');
    if (!isUuid(id)) throw groupNotFound(id);
    const row = await this.db.transaction(async (tx) => {
      const current = await this.groups.find(orgId, id, tx, true);
      if (!current) throw groupNotFound(id);
      ifMatch?.assertMatches(`Group "${current.display_name}"`, current.version);
      const now = this.clock.now();
      const renamed = input.displayName !== undefined && input.displayName !== current.display_name;
      const updated = await this.groups.touch(orgId, id, renamed ? input.displayName : undefined, now, tx);
      const changedUsers = new Set<string>();
      if (renamed) for (const user of await this.users.renameGroup(orgId, current.display_name, updated.display_name, now, tx)) changedUsers.add(user);
      if (input.members) for (const user of await this.users.setGroupMembers(orgId, updated.display_name, input.members, now, tx)) changedUsers.add(user);
      await this.audit.record(
        {
          org: orgId,
          ...byActor(actor),
          action: 'group.update',
          target: id,
          outcome: 'success',
          details: {
            displayName: updated.display_name,
            ...(renamed ? { previousName: current.display_name } : {}),
            ...(input.members ? { members: input.members.length } : {}),
          },
        },
        tx,
      );
      this.changes.publishOnCommit(tx, 'subject', [...changedUsers]);
      return updated;
    });
    return this.view(orgId, row);
  }

  /** The group leaves its members and the device policies that named it. */
  async delete(orgId: string, id: string, actor: Actor, ifMatch?: IfMatch): Promise<void> {
    if (!isUuid(id)) throw groupNotFound(id);
    await this.db.transaction(async (tx) => {
      const current = await this.groups.find(orgId, id, tx, true);
      if (!current) throw groupNotFound(id);
      ifMatch?.assertMatches(`Group "${current.display_name}"`, current.version);
      const now = this.clock.now();
      const users = await this.users.removeGroup(orgId, current.display_name, now, tx);
      await this.devicePolicies.forgetGroup(orgId, id, now, tx);
      await this.groups.delete(orgId, id, tx);
      await this.audit.record(
        {
          org: orgId,
          ...byActor(actor),
          action: 'group.delete',
          target: id,
          outcome: 'success',
          details: { displayName: current.display_name, members: users.length },
        },
        tx,
      );
      this.changes.publishOnCommit(tx, 'subject', users);
    });
  }

  private async view(orgId: string, row: GroupRow): Promise<GroupView> {
    const members = await this.users.groupMembers(orgId, [row.display_name]);
    return { row, members: members.get(row.display_name) ?? [] };
  }
}

function groupNotFound(id: string) {
  return notFound(`Group ${id.slice(0, 64)} does not exist.`);
}
