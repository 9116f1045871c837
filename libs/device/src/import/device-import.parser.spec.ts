import { DomainError } from '@app/common';
import { MAX_IMPORT_ENTRIES, importFormat, parseImport } from './device-import.parser';

describe('device import parser', () => {
  it('reads CSV with a byte-order mark, a reversed header, CRLF, quotes, semicolons and blank lines', () => {
    expect(parseImport('\uFEFFcuid ; atr\r\n\r\n"12" ; "3b00"\r\n 13,3B01 \r\n', 'csv')).toEqual([
      { line: 3, ATR: '3B00', CUID: '12' },
      { line: 4, ATR: '3B01', CUID: '13' },
    ]);
  });

  it('reads CSV without a header as ATR,CUID and reports each bad line on its own', () => {
    expect(parseImport('3B00,1\n3B,2\n3B02\n3B03,x\n3B04,1\n,5\n', 'csv')).toEqual([
      { line: 1, ATR: '3B00', CUID: '1' },
      { line: 2, CUID: '2', problem: 'ATR must be hexadecimal text of even length, 2 to 33 bytes (4 to 66 hex digits)' },
      { line: 3, problem: 'has 1 field; a line is ATR,CUID' },
      { line: 4, ATR: '3B03', problem: 'CUID must be 1 to 64 decimal digits' },
      { line: 5, ATR: '3B04', CUID: '1', problem: 'CUID 1 repeats line 1' },
      { line: 6, CUID: '5', problem: 'ATR is missing' },
    ]);
  });

  it('reads a JSON array by position, keys case-insensitively', () => {
    expect(parseImport([{ atr: 'aabb', Cuid: '0007' }, null, { ATR: 'AABB' }], 'json')).toEqual([
      { line: 1, ATR: 'AABB', CUID: '0007' },
      { line: 2, problem: 'is not an {ATR, CUID} object' },
      { line: 3, ATR: 'AABB', problem: 'CUID is missing' },
    ]);
  });

  it.each([
    [() => parseImport({}, 'json'), 'INVALID_SYNTAX', /array of \{ATR, CUID\}/],
    [() => parseImport(['x'], 'csv'), 'INVALID_SYNTAX', /CSV import is text/],
    [() => parseImport('ATR,CUID\n', 'csv'), 'INVALID_VALUE', /holds no devices/],
    [
      () =>
        parseImport(
          Array.from({ length: MAX_IMPORT_ENTRIES + 1 }, (_, i) => ({ ATR: '3B00', CUID: String(i) })),
          'json',
        ),
      'INVALID_VALUE',
      /at most 10000 per request/,
    ],
    [() => importFormat('application/xml'), 'UNSUPPORTED_MEDIA_TYPE', /JSON array .* or as CSV/],
    [() => importFormat(undefined), 'UNSUPPORTED_MEDIA_TYPE', /JSON array/],
  ])('refuses what is not an import (%#)', (run, code, detail) => {
    let error: unknown;
    try {
      run();
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe(code);
    expect((error as DomainError).detail).toMatch(detail);
  });

  it('takes JSON media types and CSV or plain text', () => {
    expect(['application/json; charset=utf-8', 'application/scim+json', 'text/csv', 'TEXT/PLAIN'].map(importFormat)).toEqual(['json', 'json', 'csv', 'csv']);
  });
});
