import { queryOptions, useSuspenseQuery } from '@tanstack/react-query';
import { api, answer } from '../api/client';
import type { Whoami } from '../api/resources';

/** Who is signed in to this organization, and what they may do (menus only: the server decides every call). */
export const whoamiQuery = (org: string) =>
  queryOptions({
    queryKey: ['whoami', org],
    queryFn: () => answer<Whoami>(api.GET('/credential-management/customer/{org}/whoami', { params: { path: { org } } })),
    staleTime: Infinity,
    retry: false,
  });

export function useWhoami(org: string): Whoami {
  return useSuspenseQuery(whoamiQuery(org)).data;
}

/** The screens of the portal and who may open them: the same rules the routes of the service apply. */
export function can(whoami: Whoami, screen: Screen): boolean {
  const has = (...permissions: string[]) => permissions.every((permission) => whoami.permissions.includes(permission));
  const administrator = whoami.organizationAdministrator || whoami.platformAdministrator;
  switch (screen) {
    case 'system-accounts':
    case 'users':
    case 'organization':
    case 'audit':
    case 'roles':
    case 'device-policies':
    case 'groups':
    case 'printers':
    case 'policies':
      return administrator;
    case 'desk':
      return has('user.search') || has('contentRequest.search');
    case 'devices':
      return has('device.search');
    case 'requests':
      return has('contentRequest.search');
    case 'stats':
      return has('stats.read');
    case 'security':
      // A person's own factors and sessions; a system account has neither.
      return whoami.kind === 'user';
  }
}

export type Screen =
  | 'system-accounts'
  | 'users'
  | 'organization'
  | 'audit'
  | 'roles'
  | 'desk'
  | 'devices'
  | 'requests'
  | 'stats'
  // Reference data (issue 37 item 3).
  | 'device-policies'
  | 'groups'
  | 'printers'
  | 'policies'
  // Every person's own factors and sessions (issue 33).
  | 'security';
