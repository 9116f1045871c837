import { Injectable } from '@nestjs/common';
import { Actor, AuditLog, byActor } from '@app/audit';
import { OperatorDependentPolicy } from '@app/auth';
import { Clock, DomainError, IfMatch, Principal, ScimSearch, applyPatch, invalidValue, notFound, parseBody, preconditionFailed, z, isUuid } from '@app/common';
import { DEVICE_REASONS, OwnedDevice, OwnedDevices } from '@app/device';
import { Database, Transaction } from '@app/persistence';
import { CredentialRepository } from '../credentials/credential.repository';
import { WalletRepository, WalletRow } from './wallet.repository';
import { MAX_WALLET_NOTES, WALLET_SCHEMA } from './wallet.schema';

export interface WalletView {
  row: WalletRow;
  devices: OwnedDevice[];
  credentials: { id: string; status: string; type: string }[];
}

/** The reasons a wallet suspension takes: those of a device suspension (DECISIONS 8). */
const SUSPEND_REASONS = ['LOST', 'STOLEN', 'DAMAGED', 'FORGOTTEN'] as const satisfies readonly (typeof DEVICE_REASONS)[number][];

const suspendSchema = z
  .object({ schemas: z.array(z.string()).optional(), reason: z.enum(SUSPEND_REASONS, { message: `is required: one of ${SUSPEND_REASONS.join(', ')}` }) })
  .strict();
const resumeSchema = z.object({ schemas: z.array(z.string()).optional() }).strict();

/**
 * Wallets (CREDENTIAL-MANAGEMENT.md "Resources"): one per user, holding the user's devices (and,
 * the credentials issued to it). Reads follow the owner's reach for Operator Dependent callers; PATCH
 * changes `notes` only; `suspend` suspends every ISSUED device of the wallet and `resume` resumes the
 * devices that suspension put on hold (not one suspended on its own, such as a lost card), in one
 * transaction under the wallet's row lock, each device move audited.
 */
@Injectable()
export class WalletService {
  constructor(
    private readonly db: Database,
    private readonly wallets: WalletRepository,
    private readonly devices: OwnedDevices,
    private readonly credentials: CredentialRepository,
    private readonly operatorDependent: OperatorDependentPolicy,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
  ) {}

  async get(principal: Principal, id: string): Promise<WalletView> {
    const row = isUuid(id) ? await this.wallets.find(principal.org, id) : undefined;
    if (!row || !this.operatorDependent.canReach(principal, { groups: row.owner_groups })) throw walletNotFound(id);
    return this.view(row);
  }

  /** The caller's own wallet (/Self/Wallet). */
  async ofOwner(orgId: string, ownerId: string): Promise<WalletView> {
    const row = await this.wallets.findByOwner(orgId, ownerId);
    if (!row) throw notFound('Your user has no wallet.');
    return this.view(row);
  }

  async search(principal: Principal, search: ScimSearch): Promise<{ views: WalletView[]; total: number }> {
    const { rows, total } = await this.wallets.search(principal.org, search, this.operatorDependent.groupsOf(principal));
    const [owned, held] = await Promise.all([
      this.devices.ownedBy(
        principal.org,
        rows.map((row) => row.owner_user_id),
      ),
      this.credentials.inWallets(
        principal.org,
        rows.map((row) => row.id),
      ),
    ]);
    return { views: rows.map((row) => ({ row, devices: owned.get(row.owner_user_id) ?? [], credentials: held.get(row.id) ?? [] })), total };
  }

  /** PATCH (RFC 7644 PatchOp) of `notes`; any other attribute is read-only here (400 mutability). */
  async patch(principal: Principal, id: string, body: unknown, actor: Actor, ifMatch?: IfMatch): Promise<WalletView> {
    const current = await this.get(principal, id);
    const view = { notes: current.row.notes ?? undefined, status: current.row.status, owner: current.row.owner_user_id, devices: [], credentials: [] };
    const patched = applyPatch(view, body, { coreSchema: WALLET_SCHEMA, extensions: [], attributes: ['notes', 'status', 'owner', 'devices', 'credentials'] });
    const touched = Object.keys(view).filter((key) => key !== 'notes' && JSON.stringify(patched[key]) !== JSON.stringify(view[key as keyof typeof view]));
    if (touched.length > 0) {
      throw new DomainError(
        'MUTABILITY',
        `Only notes can be changed with PATCH; ${touched.join(', ')} ${touched.length === 1 ? 'is' : 'are'} read-only here (status changes with POST /Wallet/{id}/suspend or /resume).`,
      );
    }
    const notes = patched.notes ?? null;
    if (notes !== null && (typeof notes !== 'string' || notes.length > MAX_WALLET_NOTES))
      throw invalidValue(`Invalid Wallet: notes must be a string of at most ${MAX_WALLET_NOTES} characters.`);
    return this.change(principal, id, actor, ifMatch, 'wallet.update', async (row, tx) => {
      await this.wallets.update(principal.org, id, { notes }, this.clock.now(), tx);
      return { details: { changed: ['notes'] }, row };
    });
  }

  async suspend(principal: Principal, id: string, body: unknown, actor: Actor): Promise<WalletView> {
    const { reason } = parseBody(suspendSchema, body ?? {}, 'suspend request');
    return this.change(principal, id, actor, undefined, 'wallet.suspend', async (row, tx) => {
      if (row.status !== 'ACTIVE') throw new DomainError('CONFLICT', `Wallet ${id} is ${row.status}; suspend applies only to an ACTIVE wallet.`);
      const moved = await this.devices.suspendAllOf(principal.org, row.owner_user_id, reason, actor, tx);
      await this.wallets.update(principal.org, id, { status: 'SUSPENDED', suspendedDeviceIds: moved }, this.clock.now(), tx);
      return { details: { reason, devices: moved }, row };
    });
  }

  async resume(principal: Principal, id: string, body: unknown, actor: Actor): Promise<WalletView> {
    parseBody(resumeSchema, body ?? {}, 'resume request');
    return this.change(principal, id, actor, undefined, 'wallet.resume', async (row, tx) => {
      if (row.status !== 'SUSPENDED') throw new DomainError('CONFLICT', `Wallet ${id} is ${row.status}; resume applies only to a SUSPENDED wallet.`);
      const moved = await this.devices.resumeAllOf(principal.org, row.owner_user_id, row.suspended_device_ids, actor, tx);
      await this.wallets.update(principal.org, id, { status: 'ACTIVE', suspendedDeviceIds: [] }, this.clock.now(), tx);
      return { details: { devices: moved }, row };
    });
  }

  /** One change under the wallet's row lock, audited in its transaction (the devices it moves publish their own changes). */
  private async change(
    principal: Principal,
    id: string,
    actor: Actor,
    ifMatch: IfMatch | undefined,
    action: 'wallet.update' | 'wallet.suspend' | 'wallet.resume',
    work: (row: WalletRow, tx: Transaction) => Promise<{ details: Record<string, unknown>; row: WalletRow }>,
  ): Promise<WalletView> {
    if (!isUuid(id)) throw walletNotFound(id);
    await this.db.transaction(async (tx) => {
      const row = await this.wallets.find(principal.org, id, tx, true);
      if (!row || !this.operatorDependent.canReach(principal, { groups: row.owner_groups })) throw walletNotFound(id);
      if (ifMatch && !ifMatch.matches(row.version)) throw preconditionFailed(`Wallet ${id}`, row.version);
      const result = await work(row, tx);
      await this.audit.record(
        { org: principal.org, ...byActor(actor), action, target: id, outcome: 'success', details: { owner: row.owner_user_id, ...result.details } },
        tx,
      );
    });
    return this.get(principal, id);
  }

  private async view(row: WalletRow): Promise<WalletView> {
    const [owned, held] = await Promise.all([this.devices.ownedBy(row.org_id, [row.owner_user_id]), this.credentials.inWallets(row.org_id, [row.id])]);
    return { row, devices: owned.get(row.owner_user_id) ?? [], credentials: held.get(row.id) ?? [] };
  }
}

function walletNotFound(id: string) {
  return notFound(`Wallet ${id.slice(0, 64)} does not exist.`);
}
