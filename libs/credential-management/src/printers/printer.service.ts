import { Injectable } from '@nestjs/common';
import { Actor, AuditLog, byActor } from '@app/audit';
import { Clock, IfMatch, ScimSearch, notFound, parseBody, isUuid } from '@app/common';
import { Database, Transaction } from '@app/persistence';
import { PrinterRepository, PrinterRow } from './printer.repository';
import { createPrinterSchema, patchPrinterSchema } from './printer.schema';

/** Card printers (CREDENTIAL-MANAGEMENT.md "Reference data"): written by administrators, read by Device Management. */
@Injectable()
export class PrinterService {
  constructor(
    private readonly db: Database,
    private readonly printers: PrinterRepository,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
  ) {}

  create(orgId: string, body: unknown, actor: Actor): Promise<PrinterRow> {
    const input = parseBody(createPrinterSchema, body, 'printer');
    return this.db.transaction(async (tx) => {
      const row = await this.printers.create(orgId, input, this.clock.now(), tx);
      await this.audit.record({ org: orgId, ...byActor(actor), action: 'printer.create', target: row.id, outcome: 'success', details: { name: row.name } }, tx);
      return row;
    });
  }

  async get(orgId: string, id: string): Promise<PrinterRow> {
    const row = isUuid(id) ? await this.printers.find(orgId, id) : undefined;
    if (!row) throw printerNotFound(id);
    return row;
  }

  search(orgId: string, search: ScimSearch): Promise<{ rows: PrinterRow[]; total: number }> {
    return this.printers.search(orgId, search);
  }

  /** `ifMatch`: the change applies only to that version (else 412), compared under the row lock. */
  update(orgId: string, id: string, body: unknown, actor: Actor, ifMatch?: IfMatch): Promise<PrinterRow> {
    const changes = parseBody(patchPrinterSchema, body, 'printer');
    return this.db.transaction(async (tx) => {
      if (ifMatch) await this.assertVersion(orgId, id, ifMatch, tx);
      const row = isUuid(id) ? await this.printers.update(orgId, id, changes, this.clock.now(), tx) : undefined;
      if (!row) throw printerNotFound(id);
      await this.audit.record(
        { org: orgId, ...byActor(actor), action: 'printer.update', target: id, outcome: 'success', details: { changed: Object.keys(changes) } },
        tx,
      );
      return row;
    });
  }

  async delete(orgId: string, id: string, actor: Actor, ifMatch?: IfMatch): Promise<void> {
    await this.db.transaction(async (tx) => {
      if (ifMatch) await this.assertVersion(orgId, id, ifMatch, tx);
      const row = isUuid(id) ? await this.printers.delete(orgId, id, tx) : undefined;
      if (!row) throw printerNotFound(id);
      await this.audit.record({ org: orgId, ...byActor(actor), action: 'printer.delete', target: id, outcome: 'success', details: { name: row.name } }, tx);
    });
  }

  private async assertVersion(orgId: string, id: string, ifMatch: IfMatch, tx: Transaction): Promise<void> {
    const current = isUuid(id) ? await this.printers.findForUpdate(orgId, id, tx) : undefined;
    if (!current) throw printerNotFound(id);
    ifMatch.assertMatches(`Printer "${current.name}"`, current.version);
  }
}

function printerNotFound(id: string) {
  return notFound(`Printer ${id.slice(0, 64)} does not exist.`);
}
