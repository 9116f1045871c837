import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Permission, Scope } from './permissions';
import { ScopeAssignmentError, loadScopeAssignment, parseScopeAssignment } from './scope-assignment.loader';

const FILE = '/etc/platform/scopeAssignment.properties';

function refusal(text: string): string {
  try {
    parseScopeAssignment(text, FILE);
  } catch (error) {
    expect(error).toBeInstanceOf(ScopeAssignmentError);
    return (error as Error).message;
  }
  throw new Error('expected the file to be refused');
}

describe('scopeAssignment.properties loader (DECISIONS 5.1)', () => {
  it('loads the shipped file with the four default roles of the interface', () => {
    const catalog = loadScopeAssignment(join(__dirname, '../../../../ops/scopeAssignment.properties'));
    expect(catalog.roles().map((r) => [r.name, r.scopes])).toEqual([
      ['Administration', [Scope.DeviceManagement, Scope.HelpDesk, Scope.ConfigurationOperator]],
      ['Help Desk', [Scope.HelpDesk]],
      ['Issuance', [Scope.DeviceManagement]],
      ['Cardholder', [Scope.Device]],
    ]);
    expect(catalog.allows('Issuance', Permission.DeviceCreate)).toBe(true);
    expect(catalog.allows('Issuance', Permission.DeviceTerminate)).toBe(false);
    expect(catalog.allows('Help Desk', Permission.DeviceTerminate)).toBe(true);
    expect(catalog.allows('Help Desk', Permission.DeviceCreate)).toBe(false);
    expect(catalog.allows('Cardholder', Permission.SelfDeviceRead)).toBe(true);
    expect(catalog.allows('Cardholder', Permission.DeviceRead)).toBe(false);
  });

  it('accepts comments, blank lines, "key: value", spaces around separators, an empty scope list and the operatorDependent extension', () => {
    const catalog = parseScopeAssignment(
      [
        '# comment',
        '! also a comment',
        '',
        'roleWithScope.name.7 = Auditor',
        'roleWithScope.scopes.7:',
        'roleWithScope.name.8=Desk East',
        'roleWithScope.scopes.8 = Scope.helpdesk , Scope.helpdesk',
        'roleWithScope.operatorDependent.8=true',
      ].join('\n'),
      FILE,
    );
    expect(catalog.find('Auditor')).toMatchObject({ scopes: [], operatorDependent: false });
    expect(catalog.find('Auditor')!.permissions.size).toBe(0);
    expect(catalog.find('Desk East')).toMatchObject({ scopes: [Scope.HelpDesk], operatorDependent: true });
  });

  it('a role not in the file reaches nothing', () => {
    expect(parseScopeAssignment('', FILE).allows('Administration', Permission.DeviceRead)).toBe(false);
  });

  it.each([
    [
      'a malformed line',
      'roleWithScope.name.1=A\nroleWithScope.scopes.1=Scope.helpdesk\nthis line has no separator',
      ':3: malformed line "this line has no separator"',
    ],
    ['an unknown key', 'roleWithScope.nme.1=A', ':1: unknown key "roleWithScope.nme.1"'],
    ['an unknown scope token', 'roleWithScope.name.1=A\nroleWithScope.scopes.1=Scope.helpdesk,Scope.everything', ':2: unknown scope "Scope.everything"'],
    [
      'a name without a scopes line',
      'roleWithScope.name.1=A\nroleWithScope.name.2=B\nroleWithScope.scopes.2=',
      ':1: role "A" (id 1) has no roleWithScope.scopes.1 line',
    ],
    ['a scopes line without a name', 'roleWithScope.scopes.5=Scope.device', ':1: roleWithScope.scopes.5 has no roleWithScope.name.5 line'],
    ['a duplicate id', 'roleWithScope.name.1=A\nroleWithScope.name.1=B', ':2: duplicate key roleWithScope.name.1 (first on line 1)'],
    [
      'a duplicate role name',
      'roleWithScope.name.1=A\nroleWithScope.scopes.1=\nroleWithScope.name.2=A\nroleWithScope.scopes.2=',
      ':3: duplicate role name "A" (first on line 1)',
    ],
    ['an empty role name', 'roleWithScope.name.1=\nroleWithScope.scopes.1=', ':1: roleWithScope.name.1 has an empty role name'],
    [
      'an operatorDependent value that is not a boolean',
      'roleWithScope.name.1=A\nroleWithScope.scopes.1=\nroleWithScope.operatorDependent.1=yes',
      ':3: roleWithScope.operatorDependent.1 must be true or false',
    ],
    [
      'an operatorDependent line without a name',
      'roleWithScope.operatorDependent.4=true',
      ':1: roleWithScope.operatorDependent.4 has no roleWithScope.name.4 line',
    ],
  ])('refuses %s, naming file and line', (_case, text, expected) => {
    expect(refusal(text)).toContain(`${FILE}${expected}`);
  });

  it('refuses a file that cannot be read, naming it', () => {
    const missing = join(mkdtempSync(join(tmpdir(), 'scopes-')), 'absent.properties');
    expect(() => loadScopeAssignment(missing)).toThrow(`${missing}: cannot be read (ENOENT)`);
  });

  it('reads a file from disk', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'scopes-')), 'custom.properties');
    writeFileSync(path, 'roleWithScope.name.1=Desk\r\nroleWithScope.scopes.1=Scope.helpdesk\r\n');
    expect(loadScopeAssignment(path).find('Desk')?.scopes).toEqual([Scope.HelpDesk]);
  });
});
