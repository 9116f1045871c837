import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { ScimSearch, SqlParameters, searchSql } from '@app/common';
import { Database, Transaction } from '@app/persistence';
import { refusedWrite } from '../common/store-errors';
import { NewPrinter, PRINTER_SEARCH_DEFINITION, PrinterChanges } from './printer.schema';

export interface PrinterRow {
  id: string;
  org_id: string;
  name: string;
  model: string | null;
  location: string | null;
  status: 'READY' | 'OFFLINE';
  created_at: Date;
  updated_at: Date;
  version: number;
}

const COLUMNS = 'p.id, p.org_id, p.name, p.model, p.location, p.status, p.created_at, p.updated_at, p.version';

/** Card printers of an organization; the name is unique per organization, whatever its case. */
@Injectable()
export class PrinterRepository {
  constructor(private readonly db: Database) {}

  async create(orgId: string, printer: NewPrinter, now: Date, tx: Transaction): Promise<PrinterRow> {
    return refusedWrite(orgId, `A printer named "${printer.name}" already exists in this organization.`, async () => {
      const [row] = await this.db.query<PrinterRow>(
        `INSERT INTO printers AS p (id, org_id, name, model, location, status, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING ${COLUMNS}`,
        [randomUUID(), orgId, printer.name, printer.model ?? null, printer.location ?? null, printer.status ?? 'READY', now],
        tx,
      );
      return row;
    });
  }

  async find(orgId: string, id: string): Promise<PrinterRow | undefined> {
    const [row] = await this.db.query<PrinterRow>(`SELECT ${COLUMNS} FROM printers p WHERE p.org_id = $1 AND p.id = $2`, [orgId, id]);
    return row;
  }

  /** The printer about to change, update-locked: an If-Match is compared with the version no one else can move meanwhile. */
  async findForUpdate(orgId: string, id: string, tx: Transaction): Promise<PrinterRow | undefined> {
    const [row] = await this.db.query<PrinterRow>(`SELECT ${COLUMNS} FROM printers p WHERE p.org_id = $1 AND p.id = $2 FOR UPDATE`, [orgId, id], tx);
    return row;
  }

  async search(orgId: string, search: ScimSearch): Promise<{ rows: PrinterRow[]; total: number }> {
    const params = new SqlParameters([orgId]);
    const sql = searchSql(search, PRINTER_SEARCH_DEFINITION, params);
    const from = `FROM printers p WHERE p.org_id = $1 AND ${sql.where}`;
    return this.db.searchPage<PrinterRow>(COLUMNS, from, { ...sql, ...search.page }, params.values);
  }

  async update(orgId: string, id: string, changes: PrinterChanges, now: Date, tx: Transaction): Promise<PrinterRow | undefined> {
    return refusedWrite(orgId, `A printer named "${changes.name ?? ''}" already exists in this organization.`, async () => {
      const [row] = await this.db.query<PrinterRow>(
        `UPDATE printers AS p
            SET name = COALESCE($3, name), status = COALESCE($4, status),
                model = CASE WHEN $5::boolean THEN $6 ELSE model END,
                location = CASE WHEN $7::boolean THEN $8 ELSE location END,
                updated_at = $9, version = version + 1
          WHERE p.org_id = $1 AND p.id = $2 RETURNING ${COLUMNS}`,
        [
          orgId,
          id,
          changes.name ?? null,
          changes.status ?? null,
          changes.model !== undefined,
          changes.model ?? null,
          changes.location !== undefined,
          changes.location ?? null,
          now,
        ],
        tx,
      );
      return row;
    });
  }

  async delete(orgId: string, id: string, tx: Transaction): Promise<PrinterRow | undefined> {
    const [row] = await this.db.query<PrinterRow>(`DELETE FROM printers p WHERE p.org_id = $1 AND p.id = $2 RETURNING ${COLUMNS}`, [orgId, id], tx);
    return row;
  }
}
