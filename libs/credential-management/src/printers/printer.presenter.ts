import { CANONICAL_PREFIX, isoTimestamp } from '@app/common';
import { PrinterRow } from './printer.repository';
import { PRINTER_SCHEMA } from './printer.schema';

/** The Printer resource, on the SCIM routes and the admin API alike (its location is its SCIM path). */
export class PrinterPresenter {
  constructor(private readonly baseUrl: string) {}

  printer(row: PrinterRow) {
    return {
      schemas: [PRINTER_SCHEMA],
      id: row.id,
      name: row.name,
      ...(row.model ? { model: row.model } : {}),
      ...(row.location ? { location: row.location } : {}),
      status: row.status,
      meta: {
        resourceType: 'Printer',
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        location: `${this.baseUrl}${CANONICAL_PREFIX}/Printer/${row.id}`,
        version: String(row.version),
      },
    };
  }
}
