import { ScimResourceDefinition, z, metaAttribute } from '@app/common';

export const PRINTER_SCHEMA = 'urn:vendor:scim:api:cms:1.0:Printer';
export const PRINTER_STATUSES = ['READY', 'OFFLINE'] as const;

const text = (max: number) => z.string({ message: 'must be a string' }).trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);
const status = z.enum(PRINTER_STATUSES, { message: `must be ${PRINTER_STATUSES.join(' or ')}` });

/** POST .../printers: `null` leaves model and location unset; status defaults to READY. */
export const createPrinterSchema = z
  .object({ name: text(128), model: text(128).nullable().optional(), location: text(256).nullable().optional(), status: status.optional() })
  .strict();

/** PATCH .../printers/{id}: what is sent changes, `null` clears model or location (DECISIONS 7). */
export const patchPrinterSchema = z
  .object({ name: text(128).optional(), model: text(128).nullable().optional(), location: text(256).nullable().optional(), status: status.optional() })
  .strict();

export type NewPrinter = z.infer<typeof createPrinterSchema>;
export type PrinterChanges = z.infer<typeof patchPrinterSchema>;

/** What GET /Printer may filter and sort on; `p` is the printers row. */
export const PRINTER_SEARCH_DEFINITION: ScimResourceDefinition = {
  schema: PRINTER_SCHEMA,
  uniqueOrder: 'p.id',
  defaultOrder: 'lower(p.name)',
  attributes: {
    id: { type: 'string', column: 'p.id::text', returned: 'always' },
    name: { type: 'string', column: 'p.name' },
    model: { type: 'string', column: 'p.model' },
    location: { type: 'string', column: 'p.location' },
    status: { type: 'string', column: 'p.status' },
    meta: metaAttribute('p'),
  },
};
