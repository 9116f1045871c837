import { Button, Group, Stack, Table, Text, TextInput, Title, Anchor } from '@mantine/core';
import { useSuspenseQuery } from '@tanstack/react-query';
import { Link, useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { CreateSystemAccount } from './create-system-account';
import { systemAccountsQuery } from './queries';

/** System accounts of the organization: search, role, administrator flag, disabled; create one. */
export function SystemAccountsPage() {
  const { org } = useParams({ from: '/$org/system-accounts' });
  const { data } = useSuspenseQuery(systemAccountsQuery(org));
  const [search, setSearch] = useState('');
  const [creating, setCreating] = useState(false);
  const needle = search.trim().toLowerCase();
  const shown = data.Resources.filter((account) =>
    [account.clientId, account.role, account.description ?? ''].some((field) => field.toLowerCase().includes(needle)),
  );
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1}>System accounts</Title>
        <Button onClick={() => setCreating(true)}>Create system account</Button>
      </Group>
      <TextInput
        label="Search"
        description="Client ID, role or description"
        value={search}
        onChange={(event) => setSearch(event.currentTarget.value)}
        maw={400}
        type="search"
      />
      <Table striped highlightOnHover aria-label="System accounts">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Client ID</Table.Th>
            <Table.Th>Role</Table.Th>
            <Table.Th>Administrator</Table.Th>
            <Table.Th>State</Table.Th>
            <Table.Th>Description</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {shown.map((account) => (
            <Table.Tr key={account.clientId}>
              <Table.Td>
                <Anchor renderRoot={(props) => <Link {...props} to="/$org/system-accounts/$clientId" params={{ org, clientId: account.clientId }} />}>
                  {account.clientId}
                </Anchor>
              </Table.Td>
              <Table.Td>{account.role}</Table.Td>
              <Table.Td>{account.organizationAdministrator ? 'Yes' : 'No'}</Table.Td>
              <Table.Td>
                <Text fw={600} size="sm" span>
                  {account.disabled ? 'Disabled' : 'Enabled'}
                </Text>
              </Table.Td>
              <Table.Td>{account.description}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {shown.length === 0 ? <Text c="dimmed">{data.totalResults === 0 ? 'No system accounts yet.' : 'No system account matches the search.'}</Text> : null}
      <CreateSystemAccount org={org} opened={creating} onClose={() => setCreating(false)} />
    </Stack>
  );
}
