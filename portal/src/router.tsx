import { Outlet, createRootRouteWithContext, createRoute, createRouter, useParams } from '@tanstack/react-router';
import type { QueryClient } from '@tanstack/react-query';
import { Navigate } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { lazy } from 'react';
import { ApiError } from './api/client';
import { ErrorPage, ForbiddenPage, Loading, NotFoundPage } from './components/pages';
import { isOwnOrganization, signIn } from './session/sign-in';
import { can, whoamiQuery, type Screen } from './session/whoami';
import { Shell } from './shell/shell';
import { SkipLink } from './components/skip-link';
import { StartPage } from './start/start-page';
import { SystemAccountsPage } from './system-accounts/system-accounts-page';
import { SystemAccountPage } from './system-accounts/system-account-page';
import { RolesPage } from './roles/roles-page';
import { AuditPage } from './audit/audit-page';
import { DeskPage } from './desk/desk-page';
import { DevicesPage } from './desk/devices-page';
import { RequestsPage } from './desk/requests-page';
import { StatsPage } from './stats/stats-page';

/**
 * The portal's pages (DECISIONS 17): /portal/{org}/<screen>. Each page of an organization first
 * reads whoami: no session sends the person to the login page, another organization's URL shows
 * the not-found page (the server answers so), and a screen the person's role does not reach shows
 * the forbidden page (the server refuses its calls anyway).
 */
/** A page outside an organization's shell (not found, failed): a main region the skip link reaches. */
function Bare({ children }: { children: React.ReactNode }) {
  return (
    <>
      <SkipLink />
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}

const root = createRootRouteWithContext<{ queryClient: QueryClient }>()({
  component: Outlet,
  notFoundComponent: () => (
    <Bare>
      <NotFoundPage />
    </Bare>
  ),
  errorComponent: ({ error, reset }) => (
    <Bare>
      <ErrorPage error={error} reset={reset} />
    </Bare>
  ),
});

const start = createRoute({ getParentRoute: () => root, path: '/', component: StartPage });

const organization = createRoute({
  getParentRoute: () => root,
  path: '$org',
  beforeLoad: async ({ params, context }) => {
    // Signed in to another organization: as the admin API answers, that organization is not found
    // to them. The shell shows the not-found page; nothing is asked of the service.
    if (!isOwnOrganization(params.org)) return;
    try {
      await context.queryClient.ensureQueryData(whoamiQuery(params.org));
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) {
        signIn();
        // The page is leaving for the login page; show nothing meanwhile.
        await new Promise(() => undefined);
      }
      if (error instanceof ApiError && error.status === 403) throw new ApiError(404, error.message);
      throw error;
    }
  },
  component: Shell,
  pendingComponent: () => <Loading label="Signing in" />,
  errorComponent: ({ error, reset }) => (
    <Bare>
      <ErrorPage error={error} reset={reset} />
    </Bare>
  ),
});

/** The first screen the person may open. */
function Home() {
  const { org } = useParams({ from: '/$org/' });
  const { data: whoami } = useQuery(whoamiQuery(org));
  if (!whoami) return null;
  const first = (['system-accounts', 'desk', 'requests', 'audit', 'security'] as const).find((screen) => can(whoami, screen));
  if (!first) return <ForbiddenPage detail="Your role reaches none of the portal's screens." />;
  return <Navigate to={`/$org/${first}` as const} params={{ org }} replace />;
}

const home = createRoute({ getParentRoute: () => organization, path: '/', component: Home });

/**
 * A screen of the organization opens only for those the menu offers it to; anyone else sees the
 * forbidden page (rendered, not thrown: a refusal is an answer, not an error).
 */
function onlyFor(name: Screen, Screen: React.ComponentType) {
  return function Guarded() {
    const { org } = useParams({ strict: false }) as { org: string };
    const { data: whoami } = useQuery(whoamiQuery(org));
    if (!whoami) return <Loading />;
    return can(whoami, name) ? <Screen /> : <ForbiddenPage />;
  };
}

const screenOptions = {
  getParentRoute: () => organization,
  pendingComponent: () => <Loading />,
  errorComponent: ({ error, reset }: { error: unknown; reset: () => void }) => <ErrorPage error={error} reset={reset} />,
};

const systemAccounts = createRoute({
  ...screenOptions,
  path: 'system-accounts',
  component: onlyFor('system-accounts', SystemAccountsPage),
});
const systemAccount = createRoute({
  getParentRoute: () => organization,
  path: 'system-accounts/$clientId',
  component: onlyFor('system-accounts', SystemAccountPage),
  pendingComponent: screenOptions.pendingComponent,
  errorComponent: screenOptions.errorComponent,
});
/** Users and operators: split from the first load (DECISIONS 17.2). */
const UsersPage = lazy(() => import('./users/users-page').then((module) => ({ default: module.UsersPage })));
const users = createRoute({ ...screenOptions, path: 'users', component: onlyFor('users', UsersPage) });
const desk = createRoute({ ...screenOptions, path: 'desk', component: onlyFor('desk', DeskPage) });
const devices = createRoute({ ...screenOptions, path: 'devices', component: onlyFor('devices', DevicesPage) });
/** A device's page: split from the first load (DECISIONS 17), fetched when the person first opens one. */
const DevicePage = lazy(() => import('./desk/device-page').then((module) => ({ default: module.DevicePage })));
const device = createRoute({ ...screenOptions, path: 'devices/$id', component: onlyFor('devices', DevicePage) });
const RequestPage = lazy(() => import('./desk/request-page').then((module) => ({ default: module.RequestPage })));
const request = createRoute({ ...screenOptions, path: 'requests/$id', component: onlyFor('requests', RequestPage) });
const requests = createRoute({ ...screenOptions, path: 'requests', component: onlyFor('requests', RequestsPage) });
/** The person's own Security page: split from the first load like object pages (DECISIONS 14.6, 17). */
const SecurityPage = lazy(() => import('./security/security-page').then((module) => ({ default: module.SecurityPage })));
const security = createRoute({ ...screenOptions, path: 'security', component: onlyFor('security', SecurityPage) });
const stats = createRoute({ ...screenOptions, path: 'stats', component: onlyFor('stats', StatsPage) });
const audit = createRoute({ ...screenOptions, path: 'audit', component: onlyFor('audit', AuditPage) });
const roles = createRoute({ ...screenOptions, path: 'roles', component: onlyFor('roles', RolesPage) });
/** The organization's administration (settings, CA, push gateways): split from the first load (DECISIONS 17). */
const OrganizationPage = lazy(() => import('./organization/organization-page').then((module) => ({ default: module.OrganizationPage })));
const organizationSettings = createRoute({
  ...screenOptions,
  path: 'organization',
  component: onlyFor('organization', OrganizationPage),
});

/** Reference data (issue 37 item 3), each split from the first load. */
const DevicePoliciesPage = lazy(() => import('./reference-data/device-policies-page').then((module) => ({ default: module.DevicePoliciesPage })));
const devicePolicies = createRoute({ ...screenOptions, path: 'device-policies', component: onlyFor('device-policies', DevicePoliciesPage) });
const PoliciesPage = lazy(() => import('./reference-data/policies-page').then((module) => ({ default: module.PoliciesPage })));
const policies = createRoute({ ...screenOptions, path: 'policies', component: onlyFor('policies', PoliciesPage) });
const GroupsPage = lazy(() => import('./reference-data/groups-page').then((module) => ({ default: module.GroupsPage })));
const groups = createRoute({ ...screenOptions, path: 'groups', component: onlyFor('groups', GroupsPage) });
const PrintersPage = lazy(() => import('./reference-data/printers-page').then((module) => ({ default: module.PrintersPage })));
const printers = createRoute({ ...screenOptions, path: 'printers', component: onlyFor('printers', PrintersPage) });
const referenceData = [devicePolicies, policies, groups, printers];

const routeTree = root.addChildren([
  start,
  organization.addChildren([
    home,
    systemAccounts,
    systemAccount,
    users,
    desk,
    devices,
    device,
    requests,
    request,
    stats,
    audit,
    roles,
    organizationSettings,
    ...referenceData,
    security,
  ]),
]);

export function createPortalRouter(queryClient: QueryClient) {
  return createRouter({
    routeTree,
    basepath: '/portal',
    context: { queryClient },
    defaultPreload: 'intent',
    defaultNotFoundComponent: NotFoundPage,
  });
}

declare module '@tanstack/react-router' {
  interface Register {
    router: ReturnType<typeof createPortalRouter>;
  }
}
