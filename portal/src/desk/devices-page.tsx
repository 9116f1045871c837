import { Button, Checkbox, Group, Modal, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { ApiError, api, answer } from '../api/client';
import type { paths } from '../api/schema';
import { useWhoami } from '../session/whoami';
import { DeviceRow, PAGE, REVOKE_REASONS, SEARCH_REQUEST, deviceName, scimString, type Device, type Reason } from './desk-page';
import { ListFooter } from '../components/list-footer';
import { HiddenHeader } from '../components/hidden-header';
import { ErrorText } from '../components/error-text';

type DeviceList = paths['/aims/rs/scim/v2/Device/.search']['post']['responses'][200]['content']['application/scim+json'];

/**
 * The desk's device search: answers as one types (debounced; the server filters, sorts and pages)
 * by the beginning of the device's id, its owner's user name or its card's CUID; each device found
 * offers the lifecycle moves the person's role allows, as in a wallet. With device.revoke, several
 * devices are selected and revoked at once with one reason (their credentials with them), each
 * row's result shown, as the other lists do their actions in bulk.
 */
export function DevicesPage() {
  const { org } = useParams({ from: '/$org/devices' });
  const [typed, setTyped] = useState('');
  const [search] = useDebouncedValue(typed.trim(), 200);
  const [page, setPage] = useState(1);
  const whoami = useWhoami(org);
  const queryClient = useQueryClient();
  const mayRevoke = whoami.permissions.includes('device.revoke');
  const [selected, setSelected] = useState<string[]>([]);
  const [results, setResults] = useState<Array<{ id: string; name: string; outcome: string }>>([]);
  const [working, setWorking] = useState(false);
  const [asking, setAsking] = useState(false);
  const [reason, setReason] = useState<string | null>(null);
  const devices = useQuery({
    queryKey: ['desk-devices', org, search, page],
    queryFn: () =>
      answer<DeviceList>(
        api.POST('/aims/rs/scim/v2/Device/.search', {
          body: {
            schemas: [SEARCH_REQUEST],
            ...(search ? { filter: `id sw ${scimString(search)} or owner.display sw ${scimString(search)} or externalIds.CUID sw ${scimString(search)}` } : {}),
            startIndex: (page - 1) * PAGE + 1,
            count: PAGE,
          },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  const total = devices.data?.totalResults ?? 0;
  /** Revokes each selected device with the one reason, one call each, and says what happened to each. */
  const revoke = async (why: Reason) => {
    setWorking(true);
    const outcomes: Array<{ id: string; name: string; outcome: string }> = [];
    for (const id of selected) {
      const name = deviceName(
        devices.data?.Resources.find((device) => device.id === id),
        id,
      );
      try {
        const updated = await answer<Device>(api.POST('/aims/rs/scim/v2/Device/{id}/revoke', { params: { path: { id } }, body: { reason: why } }));
        queryClient.setQueryData(['device', id], updated);
        outcomes.push({ id, name, outcome: 'revoked' });
      } catch (error) {
        outcomes.push({ id, name, outcome: `refused: ${error instanceof ApiError ? error.message : String(error)}` });
      }
    }
    setResults(outcomes);
    setSelected([]);
    setAsking(false);
    setReason(null);
    setWorking(false);
    await queryClient.invalidateQueries({ queryKey: ['desk-devices', org] });
  };
  return (
    <Stack>
      <Title order={1}>Devices</Title>
      <TextInput
        label="Find a device"
        description="The beginning of its id, its owner's user name or its card's CUID"
        type="search"
        value={typed}
        onChange={(event) => {
          setTyped(event.currentTarget.value);
          setPage(1);
        }}
        maw={480}
        data-autofocus
      />
      {mayRevoke ? (
        <Group>
          <Button variant="default" color="red" disabled={selected.length === 0} loading={working} onClick={() => setAsking(true)}>
            Revoke selected ({selected.length})
          </Button>
        </Group>
      ) : null}
      {results.length > 0 ? (
        <Stack gap={2} role="status" aria-label="Results">
          {results.map((result) => (
            <Text key={result.id} size="sm">
              {result.name}: {result.outcome}
            </Text>
          ))}
        </Stack>
      ) : null}
      <ErrorText error={devices.error} />
      <Table highlightOnHover aria-label="Devices found" aria-busy={devices.isFetching}>
        <Table.Thead>
          <Table.Tr>
            {mayRevoke ? <HiddenHeader>Select</HiddenHeader> : null}
            <Table.Th>CUID</Table.Th>
            <Table.Th>Status</Table.Th>
            <Table.Th>Owner</Table.Th>
            <HiddenHeader>Actions</HiddenHeader>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {devices.data?.Resources.map((device) => (
            <DeviceRow
              key={device.id}
              org={org}
              id={device.id!}
              initial={device}
              select={
                mayRevoke ? (
                  <Table.Td>
                    <Checkbox
                      aria-label={`Select ${deviceName(device, device.id!)}`}
                      checked={selected.includes(device.id!)}
                      disabled={!['ISSUED', 'ON_HOLD'].includes(device.status?.status ?? '')}
                      onChange={(event) => setSelected(event.currentTarget.checked ? [...selected, device.id!] : selected.filter((id) => id !== device.id))}
                    />
                  </Table.Td>
                ) : undefined
              }
            >
              <Table.Td>{device.owner?.display ?? ''}</Table.Td>
            </DeviceRow>
          ))}
        </Table.Tbody>
      </Table>
      {devices.isSuccess && total === 0 ? (
        <Text>
          {search
            ? 'No device matches. Type the beginning of a CUID, a user name or a device id.'
            : 'No device yet. Cards come in through an import or an issuance.'}
        </Text>
      ) : null}
      <ListFooter loaded={Boolean(devices.data)} total={total} noun="device" pageSize={PAGE} page={page} onPage={setPage} />
      <Modal opened={asking} onClose={() => setAsking(false)} title="Revoke the selected devices">
        <form
          onSubmit={(event) => {
            event.preventDefault();
            if (reason) void revoke(reason as Reason);
          }}
        >
          <Stack>
            <Text size="sm">
              {selected.length} {selected.length === 1 ? 'device' : 'devices'}: their credentials are revoked and their certificates go on the CRL. This cannot
              be undone.
            </Text>
            <Select label="Reason" data={[...REVOKE_REASONS]} value={reason} onChange={setReason} required data-autofocus />
            <Group justify="flex-end">
              <Button variant="default" onClick={() => setAsking(false)}>
                Cancel
              </Button>
              <Button type="submit" color="red" disabled={!reason} loading={working}>
                Revoke {selected.length} {selected.length === 1 ? 'device' : 'devices'}
              </Button>
            </Group>
          </Stack>
        </form>
      </Modal>
    </Stack>
  );
}
