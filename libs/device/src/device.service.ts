import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { OrganizationService } from '@app/accounts';
import { AuditLog } from '@app/audit';
import { OperatorDependentPolicy } from '@app/auth';
import { Actor, Clock, DomainError, Principal, ScimSearch, forbidden, invalidValue, notFound, uniqueness } from '@app/common';
import { ChangeFeed, Database, FeedCache, GroupCommit } from '@app/persistence';
import { CreatedDevice, DeviceRepository, DeviceRow, isCuidTaken } from './device.repository';
import { ExternalId, isDeviceId, parseCreateDevice } from './device.schema';
import { DeviceMoveListeners } from './device-move-listeners';
import { deviceKey, publishDeviceChanges } from './device-changes';
import { DeviceContents, DeviceView, NO_CONTENT } from './device-contents';
import { DeviceAction, DeviceReason, resolveReason, transitionOf } from './lifecycle/device-lifecycle';

/** Bounds the per-instance device read cache. */
const MAX_CACHED_DEVICES = 50_000;

/**
 * The Device resource's rules (DECISIONS 8): creation behind the organization's
 * automaticDeviceCreation setting, reads and searches scoped to the caller's organization (and, for
 * Operator Dependent roles, to unowned devices and devices of owners in the caller's groups), and
 * every move decided by the lifecycle table under a row lock.
 */
@Injectable()
export class DeviceService {
  /** Concurrent creates share one statement and one commit (group commit). */
  private readonly creates = new GroupCommit<CreatedDevice>((devices) => this.devices.insertCreated(devices));
  /**
   * Device reads with what they carry, kept per instance: every move and deletion publishes 'device'
   * with its commit, as does a change of what a device carries (DeviceContents.changed), and an
   * owner's groups change or deletion arrives as 'subject' (as does any organization change).
   */
  private readonly cache: FeedCache<DeviceView>;

  constructor(
    private readonly db: Database,
    private readonly devices: DeviceRepository,
    private readonly organizations: OrganizationService,
    private readonly audit: AuditLog,
    private readonly operatorDependent: OperatorDependentPolicy,
    private readonly changes: ChangeFeed,
    private readonly clock: Clock,
    private readonly moves: DeviceMoveListeners,
    private readonly contents: DeviceContents,
  ) {
    this.cache = new FeedCache(changes, {
      evicts: (change) => {
        if (change.topic === 'device') return { key: change.id };
        return change.topic === 'subject' || change.topic === 'organization' ? 'all' : undefined;
      },
      maxEntries: MAX_CACHED_DEVICES,
    });
  }

  async create(principal: Principal, body: unknown, actor: Actor): Promise<DeviceView> {
    // The precondition comes first: with creation off, no body can succeed (interface, "Create a device").
    const settings = await this.organizations.findSettings(principal.org);
    if (!settings?.automaticDeviceCreation) {
      throw forbidden(
        `Automatic device creation is disabled for organization ${principal.org}: devices come in through the bulk import ` +
          `(POST /admin/v1/organizations/${principal.org}/devices/import, or the command line "device import"), ` +
          'or an administrator turns automaticDeviceCreation on in the organization settings.',
      );
    }
    const externalIds = parseCreateDevice(body);
    const id = randomUUID();
    const now = this.clock.now();
    try {
      await this.creates.write({
        id,
        orgId: principal.org,
        externalIds,
        now,
        actor: principal.name,
        sourceAddress: actor.sourceAddress ?? 'unknown',
        correlationId: actor.correlationId,
      });
    } catch (error) {
      if (isCuidTaken(error)) throw await this.cuidConflict(principal.org, externalIds);
      throw error;
    }
    const row: DeviceRow = {
      id,
      org_id: principal.org,
      status: 'AVAILABLE',
      reason: 'NONE',
      owner_user_id: null,
      owner_user_name: null,
      owner_groups: null,
      issued_at: null,
      created_at: now,
      updated_at: now,
      version: 1,
      external_ids: externalIds,
    };
    return { row, content: NO_CONTENT };
  }

  async get(principal: Principal, id: string): Promise<DeviceView> {
    const view = isDeviceId(id) ? await this.read(principal.org, id) : undefined;
    if (!view || !this.reachable(principal, view.row)) throw deviceNotFound(id);
    return view;
  }

  /** The row and its contents are looked up side by side: a miss costs one round trip's time, not two. */
  private read(org: string, id: string): Promise<DeviceView | undefined> {
    return this.cache.read(deviceKey(org, id), async () => {
      const [row, contents] = await Promise.all([this.devices.findById(org, id), this.contents.of(org, [id])]);
      return row && { row, content: contents.get(row.id) ?? NO_CONTENT };
    });
  }

  /** A page of devices; what they carry is looked up for the whole page at once. */
  async search(principal: Principal, search: ScimSearch): Promise<{ views: DeviceView[]; total: number }> {
    const { rows, total } = await this.devices.search(principal.org, search, this.operatorDependent.groupsOf(principal));
    return { views: await this.withContents(principal.org, rows), total };
  }

  /** A user's own devices (/Self/Device). */
  async ownedBy(orgId: string, ownerId: string): Promise<DeviceView[]> {
    return this.withContents(orgId, await this.devices.findOwnedBy(orgId, ownerId));
  }

  private async withContents(orgId: string, rows: DeviceRow[]): Promise<DeviceView[]> {
    const contents = await this.contents.of(
      orgId,
      rows.map((row) => row.id),
    );
    return rows.map((row) => ({ row, content: contents.get(row.id) ?? NO_CONTENT }));
  }

  /**
   * One entry point of the lifecycle (DECISIONS 8): the device row is locked for the transaction, so
   * concurrent moves of one device run one after the other and each sees the result of the one
   * before (no lost update). Answers the moved device, or undefined once it is deleted.
   * `options.ownedBy`: the device must be that user's (a cardholder acting on its own devices, /Self);
   * any other answers 404 as if it did not exist, decided under the row lock. What the moved device
   * carries is read after the commit, so the answer shows its credentials as they followed the move.
   */
  async act(
    principal: Principal,
    id: string,
    action: DeviceAction,
    reason: DeviceReason | undefined,
    actor: Actor,
    options: { ownedBy?: string } = {},
  ): Promise<DeviceView | undefined> {
    const checked = resolveReason(action, reason);
    if (!checked.ok) throw invalidValue(`Invalid reason: ${checked.problem}.`);
    if (!isDeviceId(id)) throw deviceNotFound(id);
    const transition = transitionOf(action);
    const result = await this.db.transaction(async (tx) => {
      const row = await this.devices.findForUpdate(principal.org, id, tx);
      if (!row || !this.reachable(principal, row) || (options.ownedBy !== undefined && row.owner_user_id !== options.ownedBy)) throw deviceNotFound(id);
      if (!transition.from.includes(row.status)) {
        throw new DomainError(
          'CONFLICT',
          `Device ${id} is ${row.status}; ${action} applies only to a device that is ${transition.from.join(' or ')} (DECISIONS 8).`,
        );
      }
      // Moved or deleted, every instance drops what it kept of the device once this commits.
      publishDeviceChanges(this.changes, tx, principal.org, [id]);
      const event = {
        org: principal.org,
        actor: principal.name,
        action: `device.${action}` as const,
        target: id,
        outcome: 'success' as const,
        sourceAddress: actor.sourceAddress,
        correlationId: actor.correlationId,
      };
      if (transition.to === null) {
        await this.devices.delete(principal.org, id, tx);
        await this.audit.record({ ...event, details: { from: row.status, externalIds: row.external_ids } }, tx);
        return undefined;
      }
      const now = this.clock.now();
      const moved = await this.devices.move(
        principal.org,
        id,
        { status: transition.to, reason: checked.reason, clearOwner: transition.clearsOwner, setIssuedAt: transition.setsIssuanceDate, now },
        tx,
      );
      await this.audit.record(
        {
          ...event,
          details: {
            from: row.status,
            to: moved.status,
            reason: moved.reason,
            ...(transition.clearsOwner && row.owner_user_id ? { previousOwner: row.owner_user_id } : {}),
          },
        },
        tx,
      );
      if (action !== 'delete')
        await this.moves.moved({ orgId: principal.org, deviceId: id, action, reason: moved.reason, actor: { ...actor, name: principal.name } }, tx);
      const owner = moved.owner_user_id ? {} : { owner_user_name: null, owner_groups: null };
      return { ...row, ...moved, ...owner };
    });
    return result && (await this.withContents(principal.org, [result]))[0];
  }

  /**
   * Operator Dependent roles reach the devices of their groups: a device's groups are its owner's
   * (DECISIONS 5.2). A device without owner (stock: AVAILABLE, or unassigned by terminate) belongs to
   * no group and is reached by every operator of the organization, as the common pool that
   * issuances draw from.
   */
  private reachable(principal: Principal, row: DeviceRow): boolean {
    return row.owner_user_id === null || this.operatorDependent.canReach(principal, { groups: row.owner_groups ?? [] });
  }

  private async cuidConflict(orgId: string, externalIds: ExternalId[]): Promise<DomainError> {
    const taken = await this.devices.findExternalIds(
      orgId,
      externalIds.map((e) => e.CUID),
    );
    if (taken.length === 0) return uniqueness('A CUID of this device is already registered in this organization.');
    return uniqueness(`CUID ${taken[0].cuid} is already registered in this organization (device ${taken[0].device_id}); a CUID identifies one device.`);
  }
}

function deviceNotFound(id: string): DomainError {
  return notFound(`Device ${id.slice(0, 100)} does not exist.`);
}
