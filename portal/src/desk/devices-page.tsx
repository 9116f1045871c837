import { Group, Pagination, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { api, answer } from '../api/client';
import type { paths } from '../api/schema';
import { DeviceRow, PAGE, SEARCH_REQUEST, scimString } from './desk-page';

type DeviceList = paths['/aims/rs/scim/v2/Device/.search']['post']['responses'][200]['content']['application/scim+json'];

/**
 * The desk's device search: answers as one types (debounced; the server filters, sorts and pages)
 * by the beginning of the device's id, its owner's user name or its card's CUID; each device found
 * offers the lifecycle moves the person's role allows, as in a wallet.
 */
export function DevicesPage() {
  const { org } = useParams({ from: '/$org/devices' });
  const [typed, setTyped] = useState('');
  const [search] = useDebouncedValue(typed.trim(), 200);
  const [page, setPage] = useState(1);
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
      {devices.error ? (
        <Text c="red.8" role="alert">
          {devices.error.message}
        </Text>
      ) : null}
      <Table highlightOnHover aria-label="Devices found" aria-busy={devices.isFetching}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Device</Table.Th>
            <Table.Th>Status</Table.Th>
            <Table.Th>Owner</Table.Th>
            <Table.Th>CUID</Table.Th>
            <Table.Th>
              <span className="visually-hidden">Actions</span>
            </Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {devices.data?.Resources.map((device) => (
            <DeviceRow key={device.id} org={org} id={device.id!} initial={device}>
              <Table.Td>{device.owner?.display ?? ''}</Table.Td>
              <Table.Td>
                <code>{device.externalIds?.map((e) => e.CUID).join(', ')}</code>
              </Table.Td>
            </DeviceRow>
          ))}
        </Table.Tbody>
      </Table>
      <Group justify="space-between">
        <Text size="sm" role="status">
          {devices.data ? `${total} ${total === 1 ? 'device' : 'devices'}` : ''}
        </Text>
        <Pagination
          total={Math.max(1, Math.ceil(total / PAGE))}
          value={page}
          onChange={setPage}
          getControlProps={(control) => ({ 'aria-label': `${control} page` })}
        />
      </Group>
    </Stack>
  );
}
