import {
  ActionIcon,
  AppShell,
  Burger,
  Button,
  Group,
  NavLink,
  Stack,
  Text,
  Title,
  Tooltip,
  useComputedColorScheme,
  useMantineColorScheme,
} from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useQuery } from '@tanstack/react-query';
import { Link, Outlet, useLocation, useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { api, done } from '../api/client';
import { SessionClock } from '../session/session-clock';
import { isOwnOrganization, loginUrl } from '../session/sign-in';
import { can, whoamiQuery, type Screen } from '../session/whoami';
import { NotFoundPage } from '../components/pages';
import { SkipLink } from '../components/skip-link';

const MENU = [
  { screen: 'system-accounts', label: 'System accounts', to: '/$org/system-accounts' },
  { screen: 'users', label: 'Users and operators', to: '/$org/users' },
  { screen: 'desk', label: "Operators' desk", to: '/$org/desk' },
  { screen: 'devices', label: 'Devices', to: '/$org/devices' },
  { screen: 'requests', label: 'Content requests', to: '/$org/requests' },
  { screen: 'stats', label: 'Stats', to: '/$org/stats' },
  { screen: 'audit', label: 'Audit events', to: '/$org/audit' },
  { screen: 'roles', label: 'Roles', to: '/$org/roles' },
  { screen: 'organization', label: 'Organization', to: '/$org/organization' },
  { screen: 'device-policies', label: 'Device policies', to: '/$org/device-policies' },
  { screen: 'policies', label: 'Credential and wallet policies', to: '/$org/policies' },
  { screen: 'groups', label: 'Groups', to: '/$org/groups' },
  { screen: 'printers', label: 'Printers', to: '/$org/printers' },
  { screen: 'security', label: 'Security', to: '/$org/security' },
] as const satisfies ReadonlyArray<{ screen: Screen; label: string; to: string }>;

/** Light and dark follow the system until the person chooses; Mantine remembers the choice (localStorage). */
function ThemeSwitch() {
  const { setColorScheme } = useMantineColorScheme();
  const computed = useComputedColorScheme('light');
  const next = computed === 'dark' ? 'light' : 'dark';
  return (
    <Tooltip label={`Switch to the ${next} theme`}>
      <ActionIcon variant="default" size="lg" aria-label={`Switch to the ${next} theme`} onClick={() => setColorScheme(next)}>
        <span aria-hidden="true">{computed === 'dark' ? '☀' : '☾'}</span>
      </ActionIcon>
    </Tooltip>
  );
}

function SignOut({ org }: { org: string }) {
  const [pending, setPending] = useState(false);
  return (
    <Button
      variant="default"
      loading={pending}
      onClick={async () => {
        setPending(true);
        try {
          await done(api.POST('/credential-management/customer/{org}/whoami/sign-out', { params: { path: { org } } }));
        } finally {
          window.location.assign(loginUrl(org, `/portal/${org}/`));
        }
      }}
    >
      Sign out
    </Button>
  );
}

/** Every page of an organization: its menu (only what the person may open), who is signed in, sign-out. */
export function Shell() {
  const { org } = useParams({ from: '/$org' });
  const own = isOwnOrganization(org);
  const { data: whoami, dataUpdatedAt } = useQuery({ ...whoamiQuery(org), enabled: own });
  const [opened, { toggle }] = useDisclosure();
  const { pathname } = useLocation();
  if (!own) {
    return (
      <>
        <SkipLink />
        <main id="main" tabIndex={-1}>
          <NotFoundPage />
        </main>
      </>
    );
  }
  if (!whoami) return null;
  /** The menu item of the screen shown (an object's page too: /devices/{id} is under Devices). */
  const isCurrent = (screen: string) => pathname === `/portal/${org}/${screen}` || pathname.startsWith(`/portal/${org}/${screen}/`);
  return (
    <>
      <SkipLink />
      <AppShell header={{ height: 60 }} navbar={{ width: 240, breakpoint: 'sm', collapsed: { mobile: !opened } }} padding="md">
        <AppShell.Header>
          <Group h="100%" px="md" justify="space-between" wrap="nowrap">
            <Group wrap="nowrap">
              <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Menu" />
              <Title order={2} size="h4">
                Management portal
              </Title>
              <Text c="dimmed" visibleFrom="sm">
                {org}
              </Text>
            </Group>
            <Group wrap="nowrap">
              <Text size="sm" visibleFrom="sm" aria-label="Signed in as">
                {whoami.name} ({whoami.role})
              </Text>
              <ThemeSwitch />
              <SignOut org={org} />
            </Group>
          </Group>
        </AppShell.Header>
        <AppShell.Navbar p="xs" aria-label="Main">
          <Stack gap={2}>
            {MENU.filter((item) => can(whoami, item.screen)).map((item) => (
              <NavLink
                key={item.screen}
                label={item.label}
                // Filled when current: white on the primary colour keeps 4.5:1 hovered or not (the light variant's hover fell to 4.01:1).
                active={isCurrent(item.screen)}
                variant="filled"
                renderRoot={(props) => <Link {...props} to={item.to} params={{ org }} />}
              />
            ))}
          </Stack>
        </AppShell.Navbar>
        <AppShell.Main id="main" tabIndex={-1}>
          <Stack>
            <SessionClock whoami={whoami} readAt={dataUpdatedAt} />
            <Outlet />
          </Stack>
        </AppShell.Main>
      </AppShell>
    </>
  );
}
