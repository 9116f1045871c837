import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { OrganizationService } from '@app/accounts';
import { Actor, AuditLog } from '@app/audit';
import { Clock } from '@app/common';
import { Database } from '@app/persistence';
import { DeviceRepository, isCuidTaken } from '../device.repository';
import { ImportEntry } from './device-import.parser';

export interface ImportLineReport {
  line: number;
  ATR?: string;
  CUID?: string;
  /** created: a new AVAILABLE device; present: this {ATR, CUID} was already there (idempotent re-run); failed: see detail. */
  outcome: 'created' | 'present' | 'failed';
  id?: string;
  detail?: string;
}

export interface ImportReport {
  total: number;
  created: number;
  present: number;
  failed: number;
  lines: ImportLineReport[];
}

/** A CUID created by someone else between our read and our insert: start again, a few times. */
const ATTEMPTS = 3;

/**
 * Bulk device import (DECISIONS 11; interface: "imported by an exchange manager tool or a batch
 * management system") for organizations that keep automatic creation off. One transaction inserts
 * every new device; a line whose {ATR, CUID} is already stored is reported `present` (so a re-run of
 * the same file changes nothing), a CUID stored with another ATR and a malformed line are `failed`,
 * and neither stops the other lines.
 */
@Injectable()
export class DeviceImportService {
  constructor(
    private readonly db: Database,
    private readonly devices: DeviceRepository,
    private readonly organizations: OrganizationService,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
  ) {}

  async import(orgId: string, entries: ImportEntry[], actor: Actor): Promise<ImportReport> {
    await this.organizations.get(orgId);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.attempt(orgId, entries, actor);
      } catch (error) {
        if (!isCuidTaken(error) || attempt === ATTEMPTS) throw error;
      }
    }
  }

  private attempt(orgId: string, entries: ImportEntry[], actor: Actor): Promise<ImportReport> {
    return this.db.transaction(async (tx) => {
      const valid = entries.filter((e): e is ImportEntry & { ATR: string; CUID: string } => e.problem === undefined);
      const stored = new Map(
        (
          await this.devices.findExternalIds(
            orgId,
            valid.map((e) => e.CUID),
            tx,
          )
        ).map((s) => [s.cuid, s]),
      );
      const now = this.clock.now();
      const lines: ImportLineReport[] = [];
      const fresh: { id: string; ATR: string; CUID: string }[] = [];
      for (const entry of entries) {
        const { line, ATR, CUID } = entry;
        if (entry.problem !== undefined) {
          lines.push({ line, ATR, CUID, outcome: 'failed', detail: entry.problem });
          continue;
        }
        const existing = stored.get(entry.CUID);
        if (existing && existing.atr === entry.ATR) {
          lines.push({ line, ATR, CUID, outcome: 'present', id: existing.device_id });
        } else if (existing) {
          lines.push({
            line,
            ATR,
            CUID,
            outcome: 'failed',
            id: existing.device_id,
            detail: `CUID ${CUID} is already registered with ATR ${existing.atr} (device ${existing.device_id})`,
          });
        } else {
          const id = randomUUID();
          fresh.push({ id, ATR: entry.ATR, CUID: entry.CUID });
          lines.push({ line, ATR, CUID, outcome: 'created', id });
        }
      }
      await this.devices.insertMany(orgId, fresh, now, tx);
      const event = {
        org: orgId,
        actor: actor.name,
        outcome: 'success' as const,
        sourceAddress: actor.sourceAddress,
        correlationId: actor.correlationId ?? null,
      };
      for (const device of fresh) {
        await this.audit.record(
          { ...event, action: 'device.create', target: device.id, details: { via: 'import', externalIds: [{ ATR: device.ATR, CUID: device.CUID }] } },
          tx,
        );
      }
      const report = {
        total: entries.length,
        created: fresh.length,
        present: lines.filter((l) => l.outcome === 'present').length,
        failed: lines.filter((l) => l.outcome === 'failed').length,
      };
      await this.audit.record({ ...event, action: 'device.import', target: orgId, details: report }, tx);
      return { ...report, lines };
    });
  }
}
