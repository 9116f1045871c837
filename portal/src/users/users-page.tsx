import { Button, Checkbox, Group, Modal, PasswordInput, Select, Stack, Table, Text, TextInput, Textarea, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { Suspense, lazy, useState } from 'react';
import { api, answer, done } from '../api/client';
import type { AdminUser, ListResponse } from '../api/resources';
import { ConfirmByTyping } from '../components/confirm-by-typing';
import { rolesQuery } from '../system-accounts/queries';
import { ListFooter } from '../components/list-footer';
import { HiddenHeader } from '../components/hidden-header';
import { ErrorText } from '../components/error-text';
import { DateTime } from '../components/date-time';
import { userSearchFilter } from './user-filter';

/** A person's sessions and sign-in dialogs: fetched when first opened (DECISIONS 17). */
const UserSessionsDialog = lazy(() => import('./user-dialogs').then((module) => ({ default: module.UserSessionsDialog })));
const UserSignInDialog = lazy(() => import('./user-dialogs').then((module) => ({ default: module.UserSignInDialog })));

const PAGE = 50;

/**
 * Users and operators of the organization (admin API): searched on the server (user name, display
 * name, e-mail), by page; create, edit, disable, delete; their sessions and their sign-in.
 */
export function UsersPage() {
  const { org } = useParams({ from: '/$org/users' });
  const [page, setPage] = useState(1);
  const [creating, setCreating] = useState(false);
  const [deleting, setDeleting] = useState<AdminUser | null>(null);
  const [editing, setEditing] = useState<AdminUser | null>(null);
  const [results, setResults] = useState<Record<string, string>>({});
  const [sessionsOf, setSessionsOf] = useState<AdminUser | null>(null);
  const [signInOf, setSignInOf] = useState<AdminUser | null>(null);
  const [search, setSearch] = useState('');
  const [needle] = useDebouncedValue(search.trim(), 250);
  const queryClient = useQueryClient();
  const users = useQuery({
    queryKey: ['users', org, page, needle],
    queryFn: () =>
      answer<ListResponse<AdminUser>>(
        api.GET('/admin/v1/organizations/{org}/users', {
          params: { path: { org }, query: { startIndex: (page - 1) * PAGE + 1, count: PAGE, ...(needle ? { filter: userSearchFilter(needle) } : {}) } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['users', org] });
  const act = async (user: AdminUser, label: string, call: () => Promise<unknown>) => {
    try {
      await call();
      setResults((previous) => ({ ...previous, [user.id]: label }));
    } catch (error) {
      setResults((previous) => ({ ...previous, [user.id]: error instanceof Error ? error.message : String(error) }));
    }
    await refresh();
  };
  const remove = useMutation({
    mutationFn: (user: AdminUser) => done(api.DELETE('/admin/v1/organizations/{org}/users/{id}', { params: { path: { org, id: user.id } } })),
    onSuccess: async () => {
      setDeleting(null);
      await refresh();
    },
  });
  const total = users.data?.totalResults ?? 0;
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1}>Users and operators</Title>
        <Button onClick={() => setCreating(true)}>Create user</Button>
      </Group>
      <TextInput
        label="Search"
        description="The beginning of a user name, or part of a display name or e-mail address"
        type="search"
        maw={420}
        value={search}
        onChange={(event) => {
          setSearch(event.currentTarget.value);
          setPage(1);
        }}
      />
      <ErrorText error={users.error} />
      <Table.ScrollContainer minWidth={900}>
        <Table striped aria-label="Users">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>User name</Table.Th>
              <Table.Th>Display name</Table.Th>
              <Table.Th>E-mail</Table.Th>
              <Table.Th>Type</Table.Th>
              <Table.Th>Role</Table.Th>
              <Table.Th>Administrator</Table.Th>
              <Table.Th>Last sign-in</Table.Th>
              <Table.Th>State</Table.Th>
              <HiddenHeader>Actions</HiddenHeader>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {users.data?.Resources.map((user) => (
              <Table.Tr key={user.id}>
                <Table.Td>{user.userName}</Table.Td>
                <Table.Td>{user.displayName ?? ''}</Table.Td>
                <Table.Td>{primaryEmail(user)}</Table.Td>
                <Table.Td>{user.userType}</Table.Td>
                <Table.Td>{user.role}</Table.Td>
                <Table.Td>{user.organizationAdministrator ? 'Yes' : 'No'}</Table.Td>
                <Table.Td>{user.lastSignIn ? <DateTime iso={user.lastSignIn} /> : 'None on record'}</Table.Td>
                <Table.Td>
                  <Text fw={600} size="sm" span>
                    {user.active ? 'Enabled' : 'Disabled'}
                  </Text>
                  {results[user.id] ? (
                    <Text size="xs" role="status">
                      {results[user.id]}
                    </Text>
                  ) : null}
                </Table.Td>
                <Table.Td>
                  <Group gap="xs" wrap="nowrap">
                    <Button
                      size="xs"
                      variant="default"
                      aria-label={`${user.active ? 'Disable' : 'Enable'} ${user.userName}`}
                      onClick={() =>
                        void act(user, user.active ? 'Disabled' : 'Enabled', () =>
                          answer(
                            api.PATCH('/admin/v1/organizations/{org}/users/{id}', {
                              params: { path: { org, id: user.id } },
                              body: { disabled: user.active },
                            }),
                          ),
                        )
                      }
                    >
                      {user.active ? 'Disable' : 'Enable'}
                    </Button>
                    <Button
                      size="xs"
                      variant="default"
                      aria-label={`End the sessions of ${user.userName}`}
                      onClick={() =>
                        void act(user, 'Sessions ended', () =>
                          done(api.DELETE('/admin/v1/organizations/{org}/users/{id}/sessions', { params: { path: { org, id: user.id } } })),
                        )
                      }
                    >
                      End sessions
                    </Button>
                    <Button size="xs" variant="default" aria-label={`Sessions of ${user.userName}`} onClick={() => setSessionsOf(user)}>
                      Sessions
                    </Button>
                    <Button size="xs" variant="default" aria-label={`Sign-in of ${user.userName}`} onClick={() => setSignInOf(user)}>
                      Sign-in
                    </Button>
                    <Button size="xs" variant="default" aria-label={`Edit ${user.userName}`} onClick={() => setEditing(user)}>
                      Edit
                    </Button>
                    <Button size="xs" variant="default" aria-label={`Delete ${user.userName}`} onClick={() => setDeleting(user)}>
                      Delete
                    </Button>
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {users.isSuccess && total === 0 && needle ? (
        <Text>No user matches “{needle}”. Check the spelling, or search by the beginning of the user name.</Text>
      ) : null}
      {users.isSuccess && total === 0 && !needle ? <Text>No user yet. Create one with Create user, or provision them through SCIM.</Text> : null}
      <ListFooter loaded={Boolean(users.data)} total={total} noun="user" pageSize={PAGE} page={page} onPage={setPage} />
      <CreateUser org={org} opened={creating} onClose={() => setCreating(false)} onCreated={() => void refresh()} />
      <Suspense fallback={null}>
        {sessionsOf ? <UserSessionsDialog org={org} user={sessionsOf} onClose={() => setSessionsOf(null)} /> : null}
        {signInOf ? <UserSignInDialog org={org} user={signInOf} onClose={() => setSignInOf(null)} onChanged={() => void refresh()} /> : null}
      </Suspense>
      {editing ? <EditUser org={org} user={editing} onClose={() => setEditing(null)} onChanged={() => void refresh()} /> : null}
      {deleting ? (
        <ConfirmByTyping
          opened
          onClose={() => {
            remove.reset();
            setDeleting(null);
          }}
          title={`Delete ${deleting.userName}`}
          name={deleting.userName}
          action="Delete user"
          consequence="Their wallet, credentials and sessions go with them. This cannot be undone."
          onConfirm={() => remove.mutate(deleting)}
          pending={remove.isPending}
          error={remove.error?.message}
        />
      ) : null}
    </Stack>
  );
}

/** The address marked primary, else the first. */
function primaryEmail(user: AdminUser): string {
  return (user.emails.find((email) => email.primary) ?? user.emails[0])?.value ?? '';
}

type UserType = 'operator' | 'cardholder';

/**
 * A new user: the type is chosen each time (no default, and choosing the same option again keeps
 * it), and the dialog asks only what that type takes: a password for a cardholder, never for an
 * operator (who signs in with an enrolled certificate). Everything typed is forgotten on close.
 */
function CreateUser({ org, opened, onClose, onCreated }: { org: string; opened: boolean; onClose: () => void; onCreated: () => void }) {
  const roles = useQuery({ ...rolesQuery(), enabled: opened });
  const [userName, setUserName] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [userType, setUserType] = useState<UserType | null>(null);
  const [role, setRole] = useState<string | null>(null);
  const [password, setPassword] = useState('');
  const [administrator, setAdministrator] = useState(false);
  const create = useMutation({
    mutationFn: (type: UserType) =>
      answer<AdminUser>(
        api.POST('/admin/v1/organizations/{org}/users', {
          params: { path: { org } },
          body: {
            userName,
            role: role ?? '',
            userType: type,
            ...(displayName.trim() ? { displayName: displayName.trim() } : {}),
            ...(type === 'cardholder' && password ? { password } : {}),
            organizationAdministrator: administrator,
          },
        }),
      ),
    onSuccess: () => {
      onCreated();
      close();
    },
  });
  const close = () => {
    setUserName('');
    setDisplayName('');
    setUserType(null);
    setRole(null);
    setPassword('');
    setAdministrator(false);
    create.reset();
    onClose();
  };
  return (
    <Modal opened={opened} onClose={close} title="Create a user">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (userType) create.mutate(userType);
        }}
      >
        <Stack>
          <TextInput label="User name" required value={userName} onChange={(event) => setUserName(event.currentTarget.value)} data-autofocus />
          <TextInput
            label="Display name"
            description="Optional: how the desk and certificates name them"
            value={displayName}
            onChange={(event) => setDisplayName(event.currentTarget.value)}
          />
          <Select
            label="Type"
            placeholder="Choose a type"
            required
            allowDeselect={false}
            data={[
              { value: 'operator', label: 'Operator (signs in with a certificate)' },
              { value: 'cardholder', label: 'Cardholder' },
            ]}
            value={userType}
            onChange={(value) => {
              setUserType(value as UserType | null);
              if (value !== 'cardholder') setPassword('');
            }}
          />
          <Select label="Role" required data={roles.data?.Resources.map((r) => r.name) ?? []} value={role} onChange={setRole} searchable />
          {userType === 'cardholder' ? (
            <PasswordInput
              label="Password"
              description="Optional: 12 characters or more"
              value={password}
              onChange={(event) => setPassword(event.currentTarget.value)}
              autoComplete="new-password"
            />
          ) : null}
          {userType === 'operator' ? <Text size="sm">An operator signs in with a certificate: enrol it with Edit once the user exists.</Text> : null}
          <Checkbox label="Organization administrator" checked={administrator} onChange={(event) => setAdministrator(event.currentTarget.checked)} />
          <ErrorText error={create.error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={close}>
              Cancel
            </Button>
            <Button type="submit" loading={create.isPending} disabled={!userName || !role || !userType}>
              Create
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

/** A user's role and administrator flag, and a certificate enrolled for their jwt-bearer sign-in. */
function EditUser({ org, user, onClose, onChanged }: { org: string; user: AdminUser; onClose: () => void; onChanged: () => void }) {
  const roles = useQuery(rolesQuery());
  const [role, setRole] = useState<string | null>(user.role);
  const [administrator, setAdministrator] = useState(Boolean(user.organizationAdministrator));
  const [pem, setPem] = useState('');
  const save = useMutation({
    mutationFn: () =>
      answer<AdminUser>(
        api.PATCH('/admin/v1/organizations/{org}/users/{id}', {
          params: { path: { org, id: user.id } },
          body: { role: role ?? user.role, organizationAdministrator: administrator },
        }),
      ),
    onSuccess: onChanged,
  });
  const enrol = useMutation({
    mutationFn: () => answer(api.POST('/admin/v1/organizations/{org}/users/{id}/certificates', { params: { path: { org, id: user.id } }, body: { pem } })),
    onSuccess: () => {
      setPem('');
      onChanged();
    },
  });
  return (
    <Modal opened onClose={onClose} title={`Edit ${user.userName}`} size="lg">
      <Stack>
        <form
          onSubmit={(event) => {
            event.preventDefault();
            save.mutate();
          }}
        >
          <Stack>
            <Select label="Role" data={roles.data?.Resources.map((r) => r.name) ?? [user.role]} value={role} onChange={setRole} searchable data-autofocus />
            <Checkbox label="Organization administrator" checked={administrator} onChange={(event) => setAdministrator(event.currentTarget.checked)} />
            <ErrorText error={save.error} />
            {save.isSuccess ? <Text role="status">Saved; their live tokens and sessions follow the change at once.</Text> : null}
            <Button type="submit" loading={save.isPending} w="fit-content">
              Save
            </Button>
          </Stack>
        </form>
        <form
          onSubmit={(event) => {
            event.preventDefault();
            enrol.mutate();
          }}
        >
          <Stack>
            <Textarea
              label="Enrol a certificate (PEM)"
              description="For the user's jwt-bearer sign-in: one X.509 certificate, RSA 2048+ or EC P-256/P-384"
              value={pem}
              onChange={(event) => setPem(event.currentTarget.value)}
              autosize
              minRows={3}
              error={enrol.error?.message}
            />
            {enrol.isSuccess ? <Text role="status">Certificate enrolled.</Text> : null}
            <Button type="submit" variant="default" loading={enrol.isPending} disabled={pem.trim() === ''} w="fit-content">
              Enrol certificate
            </Button>
          </Stack>
        </form>
        <Text size="sm">Enrolled certificates: {user.certificates.length === 0 ? 'none' : user.certificates.join(', ')}</Text>
      </Stack>
    </Modal>
  );
}
