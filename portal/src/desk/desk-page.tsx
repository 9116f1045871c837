import { Anchor, Button, Group, Modal, Select, Paper, SimpleGrid, Stack, Table, Text, TextInput, Title, UnstyledButton } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from '@tanstack/react-router';
import { useState, type ReactNode } from 'react';
import { api, answer } from '../api/client';
import type { paths } from '../api/schema';
import { useWhoami } from '../session/whoami';
import { ListFooter } from '../components/list-footer';
import { ErrorText } from '../components/error-text';
import { HiddenHeader } from '../components/hidden-header';
import { CredentialsTable } from './credentials';
import { IssueDevice, type Issuing } from './issue-device';

export const PAGE = 25;
export const SEARCH_REQUEST = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest' as const;

type UserList = paths['/aims/rs/scim/v2/Users/.search']['post']['responses'][200]['content']['application/scim+json'];
type WalletList = paths['/aims/rs/scim/v2/Wallet/.search']['post']['responses'][200]['content']['application/scim+json'];
type User = UserList['Resources'][number];

/** A SCIM string literal: the person's typing never becomes filter syntax. */
export const scimString = (text: string) => JSON.stringify(text);

/**
 * SCIM calls use the canonical path (/aims/rs/scim/v2): the session names the organization.
 *
 * The operators' desk: a user search that answers as one types (debounced; the server filters and
 * pages, so it stays quick with 100,000 users), then the chosen user's wallet with its devices and
 * credentials.
 */
export function DeskPage() {
  const { org } = useParams({ from: '/$org/desk' });
  const [typed, setTyped] = useState('');
  const [search] = useDebouncedValue(typed.trim(), 200);
  const [page, setPage] = useState(1);
  const [chosen, setChosen] = useState<User | null>(null);
  const users = useQuery({
    queryKey: ['desk-users', org, search, page],
    queryFn: () =>
      answer<UserList>(
        api.POST('/aims/rs/scim/v2/Users/.search', {
          body: {
            schemas: [SEARCH_REQUEST],
            ...(search ? { filter: `userName sw ${scimString(search)}` } : {}),
            sortBy: 'userName',
            startIndex: (page - 1) * PAGE + 1,
            count: PAGE,
          },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  const total = users.data?.totalResults ?? 0;
  return (
    <Stack>
      <Title order={1}>Operators' desk</Title>
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <Stack>
          <TextInput
            label="Find a user"
            description="The beginning of their user name"
            type="search"
            value={typed}
            onChange={(event) => {
              setTyped(event.currentTarget.value);
              setPage(1);
            }}
            data-autofocus
          />
          <ErrorText error={users.error} />
          <Table highlightOnHover aria-label="Users found" aria-busy={users.isFetching}>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>User name</Table.Th>
                <Table.Th>Name</Table.Th>
                <Table.Th>Type</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {users.data?.Resources.map((user) => (
                <Table.Tr key={user.id} aria-selected={chosen?.id === user.id}>
                  <Table.Td>
                    <UnstyledButton onClick={() => setChosen(user)} td="underline">
                      {user.userName}
                    </UnstyledButton>
                  </Table.Td>
                  <Table.Td>{user.displayName ?? user.name?.formatted ?? ''}</Table.Td>
                  <Table.Td>{user.userType}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          {users.isSuccess && total === 0 ? (
            <Text>No user name begins with this. Check the spelling, or create the user under Users and operators.</Text>
          ) : null}
          <ListFooter loaded={Boolean(users.data)} total={total} noun="user" pageSize={PAGE} page={page} onPage={setPage} />
        </Stack>
        {chosen ? <WalletPanel org={org} user={chosen} /> : <Text>Find a user by the beginning of their user name, then choose them to see their wallet.</Text>}
      </SimpleGrid>
    </Stack>
  );
}

function WalletPanel({ org, user }: { org: string; user: User }) {
  const wallets = useQuery({
    queryKey: ['desk-wallet', org, user.id],
    queryFn: () =>
      answer<WalletList>(
        api.POST('/aims/rs/scim/v2/Wallet/.search', {
          body: { schemas: [SEARCH_REQUEST], filter: `owner.value eq ${scimString(user.id)}` },
        }),
      ),
  });
  const wallet = wallets.data?.Resources[0];
  const whoami = useWhoami(org);
  const mayIssue = ['contentRequest.issuance.create', 'device.search', 'devicePolicy.search'].every((p) => whoami.permissions.includes(p));
  const [issuing, setIssuing] = useState<Issuing | null>(null);
  return (
    <Paper withBorder p="md" component="section" aria-labelledby="wallet-title">
      <Stack>
        <Group justify="space-between">
          <Title order={2} size="h3" id="wallet-title">
            Wallet of {user.userName}
          </Title>
          {wallet && mayIssue ? (
            <Group gap="xs">
              <Button variant="default" onClick={() => setIssuing('card')}>
                Issue a device
              </Button>
              <Button variant="default" onClick={() => setIssuing('otp')}>
                Issue an OTP token
              </Button>
            </Group>
          ) : null}
        </Group>
        {issuing && wallet ? (
          <IssueDevice key={issuing} org={org} wallet={wallet.id!} userName={user.userName!} issuing={issuing} onClose={() => setIssuing(null)} />
        ) : null}
        <ErrorText error={wallets.error} />
        {wallet ? (
          <>
            <Group>
              <Text size="sm">Status</Text>
              <Text fw={600}>{wallet.status}</Text>
            </Group>
            <Title order={3} size="h4">
              Devices
            </Title>
            {wallet.devices?.length ? (
              <Table aria-label="Devices">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>CUID</Table.Th>
                    <Table.Th>Status</Table.Th>
                    <HiddenHeader>Actions</HiddenHeader>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {wallet.devices.map((device) => (
                    <DeviceRow key={device.value} org={org} id={device.value!} />
                  ))}
                </Table.Tbody>
              </Table>
            ) : (
              <Text>No device in this wallet. A card comes with an issuance request approved and encoded.</Text>
            )}
            <Title order={3} size="h4">
              Credentials
            </Title>
            {wallet.credentials?.length ? (
              <CredentialsTable org={org} credentials={wallet.credentials} label="Credentials" />
            ) : (
              <Text>No credential. Credentials come with an issued device.</Text>
            )}
          </>
        ) : wallets.isSuccess ? (
          <Text>This user has no wallet: operators have none, cardholders get one when they are created.</Text>
        ) : null}
      </Stack>
    </Paper>
  );
}

export type Device = paths['/aims/rs/scim/v2/Device/{id}']['get']['responses'][200]['content']['application/scim+json'];

/**
 * The lifecycle moves the desk offers, from which statuses, with the permission each needs and the
 * reasons it takes (the device lifecycle's; the server decides all of it again).
 */
/** Why a device may be revoked (the device lifecycle's reasons); the devices screen's bulk revoke offers the same. */
export const REVOKE_REASONS = ['LOST', 'STOLEN', 'DAMAGED', 'RENEW', 'EXPIRED'] as const;
const MOVES = [
  { action: 'suspend', label: 'Suspend', from: ['ISSUED'], permission: 'device.suspend', reasons: ['LOST', 'FORGOTTEN', 'DAMAGED', 'STOLEN'] },
  { action: 'resume', label: 'Resume', from: ['ON_HOLD'], permission: 'device.resume', reasons: [] },
  { action: 'revoke', label: 'Revoke', from: ['ISSUED', 'ON_HOLD'], permission: 'device.revoke', reasons: REVOKE_REASONS },
  { action: 'terminate', label: 'Terminate', from: ['ISSUED', 'ON_HOLD', 'REVOKED', 'PRODUCED'], permission: 'device.terminate', reasons: [] },
] as const;
type Move = (typeof MOVES)[number];
export type Reason = 'LOST' | 'FORGOTTEN' | 'DAMAGED' | 'STOLEN' | 'RENEW' | 'EXPIRED';

/**
 * The lifecycle moves the person's role allows from a device's status, each asked once in a dialog
 * that names the device (and, with a reason where the lifecycle takes one); its credentials follow
 * it (DECISIONS 8). `name` is how people know the device, its card's CUID.
 */
export function DeviceMoves({ org, id, name, status }: { org: string; id: string; name: string; status: string }) {
  const whoami = useWhoami(org);
  const queryClient = useQueryClient();
  const [asking, setAsking] = useState<Move | null>(null);
  const [reason, setReason] = useState<string | null>(null);
  const move = useMutation({
    mutationFn: ({ action, reason }: { action: Move['action']; reason?: Reason }) =>
      answer<Device>(api.POST(`/aims/rs/scim/v2/Device/{id}/${action}`, { params: { path: { id } }, body: reason ? { reason } : {} })),
    onSuccess: async (updated) => {
      setAsking(null);
      setReason(null);
      queryClient.setQueryData(['device', id], updated);
      // Its credentials followed it.
      await queryClient.invalidateQueries({ queryKey: ['credential'] });
    },
  });
  const allowed = MOVES.filter((m) => (m.from as readonly string[]).includes(status) && whoami.permissions.includes(m.permission));
  const close = () => {
    setAsking(null);
    setReason(null);
    move.reset();
  };
  return (
    <>
      <Group gap="xs" wrap="nowrap">
        {allowed.map((m) => (
          <Button key={m.action} size="xs" variant="default" aria-label={`${m.label} ${name}`} onClick={() => setAsking(m)}>
            {m.label}
          </Button>
        ))}
      </Group>
      <Modal opened={asking !== null} onClose={close} title={asking ? `${asking.label} ${name}` : ''}>
        {asking ? (
          <form
            onSubmit={(event) => {
              event.preventDefault();
              if (asking.reasons.length === 0 || reason) move.mutate({ action: asking.action, reason: (reason ?? undefined) as Reason | undefined });
            }}
          >
            <Stack>
              <Text size="sm">{CONSEQUENCES[asking.action]}</Text>
              {asking.reasons.length > 0 ? (
                <Select label="Reason" data={[...asking.reasons]} value={reason} onChange={setReason} required data-autofocus error={move.error?.message} />
              ) : (
                <ErrorText error={move.error} />
              )}
              <Group justify="flex-end">
                <Button variant="default" onClick={close}>
                  Cancel
                </Button>
                <Button
                  type="submit"
                  color={asking.action === 'revoke' || asking.action === 'terminate' ? 'red' : undefined}
                  disabled={asking.reasons.length > 0 && !reason}
                  loading={move.isPending}
                  data-autofocus={asking.reasons.length === 0 ? true : undefined}
                >
                  {asking.label} device
                </Button>
              </Group>
            </Stack>
          </form>
        ) : null}
      </Modal>
    </>
  );
}

/** What each move does, said in its dialog. */
const CONSEQUENCES: Record<Move['action'], string> = {
  suspend: 'Its credentials are put on hold (certificateHold on the CRL) until it is resumed.',
  resume: 'Its credentials are valid again and leave the CRL.',
  revoke: 'Its credentials are revoked and its certificates go on the CRL. This cannot be undone.',
  terminate: 'Its credentials are revoked and it leaves its holder; a recycle request then brings it back to stock.',
};

/** How people know a device: its card's CUID, else its id. */
export function deviceName(device: Pick<Device, 'externalIds'> | undefined, id: string): string {
  const cuid = device?.externalIds?.[0]?.CUID;
  return cuid ? `card ${cuid}` : `device ${id.slice(0, 8)}`;
}

/**
 * A device (of a wallet, or found by the device search): its CUID (a link to its page, the id on
 * hover), status, and the moves the person's role allows. `initial` is the device as a search
 * answered it (no second read); `children` are cells shown between its status and its moves;
 * `select` is a cell shown first (a list's selection checkbox, for its actions in bulk).
 */
export function DeviceRow({ org, id, initial, children, select }: { org: string; id: string; initial?: Device; children?: ReactNode; select?: ReactNode }) {
  const device = useQuery({
    queryKey: ['device', id],
    queryFn: () => answer<Device>(api.GET('/aims/rs/scim/v2/Device/{id}', { params: { path: { id } } })),
    initialData: initial,
  });
  const status = device.data?.status?.status ?? '';
  const cuid = device.data?.externalIds?.map((e) => e.CUID).join(', ');
  return (
    <Table.Tr>
      {select}
      <Table.Td>
        <Anchor renderRoot={(props) => <Link {...props} to="/$org/devices/$id" params={{ org, id }} />} title={`Device ${id}`}>
          {cuid || id}
        </Anchor>
      </Table.Td>
      <Table.Td>{status}</Table.Td>
      {children}
      <Table.Td>
        <DeviceMoves org={org} id={id} name={deviceName(device.data, id)} status={status} />
      </Table.Td>
    </Table.Tr>
  );
}
