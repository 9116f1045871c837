import { Anchor, Button, Checkbox, Group, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useQueryClient, useSuspenseQuery } from '@tanstack/react-query';
import { Link, useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { api, answer } from '../api/client';
import { CreateSystemAccount } from './create-system-account';
import { systemAccountsQuery } from './queries';
import { HiddenHeader } from '../components/hidden-header';
import { DateTime } from '../components/date-time';

/** System accounts of the organization: search, role, administrator flag, disabled, nearest credential expiry; create one. */
export function SystemAccountsPage() {
  const { org } = useParams({ from: '/$org/system-accounts' });
  const { data } = useSuspenseQuery(systemAccountsQuery(org));
  const [search, setSearch] = useState('');
  const [creating, setCreating] = useState(false);
  const [selected, setSelected] = useState<string[]>([]);
  const [results, setResults] = useState<Array<{ clientId: string; outcome: string }>>([]);
  const [working, setWorking] = useState(false);
  const queryClient = useQueryClient();
  /** Disables or enables each selected account, one call each, and says what happened to each. */
  const setDisabled = async (disabled: boolean) => {
    setWorking(true);
    const outcomes: Array<{ clientId: string; outcome: string }> = [];
    for (const clientId of selected) {
      try {
        await answer(api.PATCH('/admin/v1/organizations/{org}/system-accounts/{clientId}', { params: { path: { org, clientId } }, body: { disabled } }));
        outcomes.push({ clientId, outcome: disabled ? 'disabled' : 'enabled' });
      } catch (error) {
        outcomes.push({ clientId, outcome: `refused: ${error instanceof Error ? error.message : String(error)}` });
      }
    }
    setResults(outcomes);
    setSelected([]);
    setWorking(false);
    await queryClient.invalidateQueries({ queryKey: ['system-accounts', org] });
  };
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
      <Group>
        <Button variant="default" disabled={selected.length === 0} loading={working} onClick={() => void setDisabled(true)}>
          Disable selected ({selected.length})
        </Button>
        <Button variant="default" disabled={selected.length === 0} loading={working} onClick={() => void setDisabled(false)}>
          Enable selected
        </Button>
      </Group>
      {results.length > 0 ? (
        <Stack gap={2} role="status" aria-label="Results">
          {results.map((result) => (
            <Text key={result.clientId} size="sm">
              {result.clientId}: {result.outcome}
            </Text>
          ))}
        </Stack>
      ) : null}
      <Table striped highlightOnHover aria-label="System accounts">
        <Table.Thead>
          <Table.Tr>
            <HiddenHeader>Select</HiddenHeader>
            <Table.Th>Client ID</Table.Th>
            <Table.Th>Role</Table.Th>
            <Table.Th>Administrator</Table.Th>
            <Table.Th>State</Table.Th>
            <Table.Th>Nearest credential expiry</Table.Th>
            <Table.Th>Description</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {shown.map((account) => (
            <Table.Tr key={account.clientId}>
              <Table.Td>
                <Checkbox
                  aria-label={`Select ${account.clientId}`}
                  checked={selected.includes(account.clientId)}
                  onChange={(event) =>
                    setSelected(event.currentTarget.checked ? [...selected, account.clientId] : selected.filter((id) => id !== account.clientId))
                  }
                />
              </Table.Td>
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
              <Table.Td>{account.nearestCredentialExpiry ? <DateTime iso={account.nearestCredentialExpiry} date /> : 'No live credential'}</Table.Td>
              <Table.Td>{account.description}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {shown.length === 0 ? (
        <Text>
          {data.totalResults === 0
            ? 'No system account yet. Create one for each application that calls the API.'
            : 'No system account matches the search. Clear it to see them all.'}
        </Text>
      ) : null}
      <CreateSystemAccount org={org} opened={creating} onClose={() => setCreating(false)} />
    </Stack>
  );
}
