import { DomainError } from '../domain-error';
import { PATCH_OP_SCHEMA, applyPatch } from './patch-op';

const TARGET = { coreSchema: 'urn:core:User', extensions: ['urn:ext:Enterprise'], attributes: ['userName', 'name', 'emails', 'active', 'title'] };
const patch = (view: Record<string, unknown>, ...operations: unknown[]) => applyPatch(view, { schemas: [PATCH_OP_SCHEMA], Operations: operations }, TARGET);
const codeOf = (work: () => unknown): string | undefined => {
  try {
    work();
  } catch (error) {
    return error instanceof DomainError ? error.code : 'not a DomainError';
  }
  return undefined;
};

describe('applyPatch (RFC 7644 3.5.2)', () => {
  const view = { userName: 'a', name: { givenName: 'A' }, emails: [{ value: 'w@x.io', type: 'work' }], active: true };

  it('replaces, adds and removes by path, case-insensitively and with the core URN prefix', () => {
    expect(patch(view, { op: 'replace', path: 'ACTIVE', value: false })).toMatchObject({ active: false });
    expect(patch(view, { op: 'add', path: 'urn:core:User:name.familyName', value: 'B' })).toMatchObject({ name: { givenName: 'A', familyName: 'B' } });
    expect(patch(view, { op: 'remove', path: 'name.givenName' }).name).toEqual({});
    expect(patch(view, { op: 'remove', path: 'active' })).not.toHaveProperty('active');
  });

  it('selects values of a multi-valued attribute with a filter, and seeds one the filter pins down', () => {
    expect(patch(view, { op: 'replace', path: 'emails[type eq "WORK"].value', value: 'n@x.io' }).emails).toEqual([{ value: 'n@x.io', type: 'work' }]);
    expect(patch(view, { op: 'add', path: 'emails[type eq "home"].value', value: 'h@x.io' }).emails).toEqual([
      { value: 'w@x.io', type: 'work' },
      { value: 'h@x.io', type: 'home' },
    ]);
    expect(patch(view, { op: 'remove', path: 'emails[value ew "x.io"]' }).emails).toEqual([]);
    expect(patch(view, { op: 'add', path: 'emails', value: [{ value: 'o@x.io' }] }).emails).toHaveLength(2);
  });

  it('applies a value without path attribute by attribute, dotted keys and extension objects included', () => {
    const result = patch(view, { op: 'replace', value: { title: 'T', 'name.givenName': 'Z', 'urn:ext:Enterprise': { department: 'D' } } });
    expect(result).toMatchObject({ title: 'T', name: { givenName: 'Z' }, 'urn:ext:Enterprise': { department: 'D' } });
    expect(patch(view, { op: 'add', path: 'urn:ext:Enterprise:manager.value', value: 'm' })).toMatchObject({
      'urn:ext:Enterprise': { manager: { value: 'm' } },
    });
  });

  it('leaves the input untouched', () => {
    const before = structuredClone(view);
    patch(view, { op: 'replace', path: 'name.givenName', value: 'X' }, { op: 'remove', path: 'emails[type eq "work"]' });
    expect(view).toEqual(before);
  });

  it.each([
    [{ Operations: [{ op: 'add', path: 'title', value: 'x' }] }, 'INVALID_SYNTAX'],
    [{ schemas: [PATCH_OP_SCHEMA], Operations: [] }, 'INVALID_SYNTAX'],
    [{ schemas: [PATCH_OP_SCHEMA], Operations: [{ op: 'move', path: 'title' }] }, 'INVALID_SYNTAX'],
    [{ schemas: [PATCH_OP_SCHEMA], Operations: [{ op: 'remove' }] }, 'NO_TARGET'],
    [{ schemas: [PATCH_OP_SCHEMA], Operations: [{ op: 'add', path: 'title' }] }, 'INVALID_SYNTAX'],
    [{ schemas: [PATCH_OP_SCHEMA], Operations: [{ op: 'add', path: 'shoe', value: 1 }] }, 'INVALID_PATH'],
    [{ schemas: [PATCH_OP_SCHEMA], Operations: [{ op: 'add', path: 'emails[type eq', value: 1 }] }, 'INVALID_PATH'],
    [{ schemas: [PATCH_OP_SCHEMA], Operations: [{ op: 'remove', path: 'emails[type eq "fax"]' }] }, 'NO_TARGET'],
    [{ schemas: [PATCH_OP_SCHEMA], Operations: [{ op: 'replace', path: 'emails.value', value: 'x' }] }, 'INVALID_PATH'],
    [{ schemas: [PATCH_OP_SCHEMA], Operations: [{ op: 'add', value: 'not an object' }] }, 'INVALID_SYNTAX'],
    [{ schemas: [PATCH_OP_SCHEMA], Operations: [{ op: 'add', path: 'title', value: 'x', extra: 1 }] }, 'INVALID_SYNTAX'],
  ])('refuses %j with %s', (body, code) => {
    expect(codeOf(() => applyPatch(view, body, TARGET))).toBe(code);
  });
});
