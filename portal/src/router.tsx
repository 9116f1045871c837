import { Outlet, createRootRouteWithContext, createRoute, createRouter, useParams } from '@tanstack/react-router';
import type { QueryClient } from '@tanstack/react-query';
import { Navigate } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { ApiError } from './api/client';
import { ErrorPage, ForbiddenPage, Loading, NotFoundPage } from './components/pages';
import { sessionOrganization, signIn } from './session/sign-in';
import { can, whoamiQuery, type Screen } from './session/whoami';
import { Shell } from './shell/shell';
import { StartPage } from './start/start-page';
import { SystemAccountsPage } from './system-accounts/system-accounts-page';
import { SystemAccountPage } from './system-accounts/system-account-page';
import { RolesPage } from './roles/roles-page';
import { AuditPage } from './audit/audit-page';
import { UsersPage } from './users/users-page';
import { DeskPage } from './desk/desk-page';
import { RequestsPage } from './desk/requests-page';
import { OrganizationPage } from './organization/organization-page';

/**
 * The portal's pages (DECISIONS 17): /portal/{org}/<screen>. Each page of an organization first
 * reads whoami: no session sends the person to the login page, another organization's URL shows
 * the not-found page (the server answers so), and a screen the person's role does not reach shows
 * the forbidden page (the server refuses its calls anyway).
 */
const root = createRootRouteWithContext<{ queryClient: QueryClient }>()({
  component: Outlet,
  notFoundComponent: NotFoundPage,
  errorComponent: ({ error, reset }) => <ErrorPage error={error} reset={reset} />,
});

const start = createRoute({ getParentRoute: () => root, path: '/', component: StartPage });

const organization = createRoute({
  getParentRoute: () => root,
  path: '$org',
  beforeLoad: async ({ params, context }) => {
    if (!/^[A-Za-z0-9_]{1,64}$/.test(params.org)) throw notFound();
    // Signed in to another organization: as the admin API answers, that organization is not found to them.
    const sessionOrg = sessionOrganization();
    if (sessionOrg !== undefined && sessionOrg !== params.org) throw notFound();
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
  errorComponent: ({ error, reset }) => <ErrorPage error={error} reset={reset} />,
});

function notFound(): ApiError {
  return new ApiError(404, 'Not found');
}

/** The first screen the person may open. */
function Home() {
  const { org } = useParams({ from: '/$org/' });
  const { data: whoami } = useQuery(whoamiQuery(org));
  if (!whoami) return null;
  const first = (['system-accounts', 'desk', 'requests', 'audit'] as const).find((screen) => can(whoami, screen));
  if (!first) return <ForbiddenPage detail="Your role reaches none of the portal's screens." />;
  return <Navigate to={`/$org/${first}` as const} params={{ org }} replace />;
}

const home = createRoute({ getParentRoute: () => organization, path: '/', component: Home });

/** A screen of the organization opens only for those the menu offers it to. */
async function onlyFor(name: Screen, { params, context }: { params: { org: string }; context: { queryClient: QueryClient } }) {
  const whoami = await context.queryClient.ensureQueryData(whoamiQuery(params.org));
  if (!can(whoami, name)) throw new ApiError(403, 'Your role does not reach this screen.');
}

const screenOptions = {
  getParentRoute: () => organization,
  pendingComponent: () => <Loading />,
  errorComponent: ({ error, reset }: { error: unknown; reset: () => void }) => <ErrorPage error={error} reset={reset} />,
};

const systemAccounts = createRoute({
  ...screenOptions,
  path: 'system-accounts',
  beforeLoad: (load) => onlyFor('system-accounts', load),
  component: SystemAccountsPage,
});
const systemAccount = createRoute({
  getParentRoute: () => organization,
  path: 'system-accounts/$clientId',
  beforeLoad: (load) => onlyFor('system-accounts', load),
  component: SystemAccountPage,
  pendingComponent: screenOptions.pendingComponent,
  errorComponent: screenOptions.errorComponent,
});
const users = createRoute({ ...screenOptions, path: 'users', beforeLoad: (load) => onlyFor('users', load), component: UsersPage });
const desk = createRoute({ ...screenOptions, path: 'desk', beforeLoad: (load) => onlyFor('desk', load), component: DeskPage });
const requests = createRoute({ ...screenOptions, path: 'requests', beforeLoad: (load) => onlyFor('requests', load), component: RequestsPage });
const audit = createRoute({ ...screenOptions, path: 'audit', beforeLoad: (load) => onlyFor('audit', load), component: AuditPage });
const roles = createRoute({ ...screenOptions, path: 'roles', beforeLoad: (load) => onlyFor('roles', load), component: RolesPage });
const organizationSettings = createRoute({
  ...screenOptions,
  path: 'organization',
  beforeLoad: (load) => onlyFor('organization', load),
  component: OrganizationPage,
});

const routeTree = root.addChildren([
  start,
  organization.addChildren([home, systemAccounts, systemAccount, users, desk, requests, audit, roles, organizationSettings]),
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
