import { Principal } from '@app/common';
import { OperatorDependentPolicy } from './operator-dependent.policy';
import { parseScopeAssignment } from './scope-assignment.loader';

const catalog = parseScopeAssignment(
  [
    'roleWithScope.name.1=Desk',
    'roleWithScope.scopes.1=Scope.helpdesk',
    'roleWithScope.name.2=Desk East',
    'roleWithScope.scopes.2=Scope.helpdesk',
    'roleWithScope.operatorDependent.2=true',
  ].join('\n'),
  'test.properties',
);
const policy = new OperatorDependentPolicy(catalog);
const caller = (role: string, groups: string[]): Principal => ({
  kind: 'user',
  subjectId: 'u1',
  name: 'op',
  org: 'acme',
  role,
  groups,
  organizationAdministrator: false,
  platformAdministrator: false,
  tokenId: 't',
  applicationIdPolicy: 'any',
});

describe('OperatorDependentPolicy', () => {
  it('does not limit a role that is not Operator Dependent', () => {
    expect(policy.groupsOf(caller('Desk', ['east']))).toBeUndefined();
    expect(policy.canReach(caller('Desk', []), { groups: ['west'] })).toBe(true);
  });

  it('limits an Operator Dependent role to objects sharing one of its groups', () => {
    expect(policy.groupsOf(caller('Desk East', ['east']))).toEqual(['east']);
    expect(policy.canReach(caller('Desk East', ['east', 'north']), { groups: ['north'] })).toBe(true);
    expect(policy.canReach(caller('Desk East', ['east']), { groups: ['west'] })).toBe(false);
    expect(policy.canReach(caller('Desk East', ['east']), { groups: [] })).toBe(false);
    expect(policy.canReach(caller('Desk East', []), { groups: ['east'] })).toBe(false);
  });

  it('answers 404 for an object outside the groups', () => {
    expect(() => policy.assertCanReach(caller('Desk East', ['east']), { groups: ['west'] }, 'User 42')).toThrow('User 42 does not exist.');
    expect(() => policy.assertCanReach(caller('Desk East', ['east']), { groups: ['east'] }, 'User 42')).not.toThrow();
  });
});
