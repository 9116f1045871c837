import { Button, Group, Modal, Radio, Select, Stack, Table, Text, TextInput } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { api, answer } from '../api/client';
import type { paths } from '../api/schema';
import { ErrorText } from '../components/error-text';
import { SEARCH_REQUEST, scimString } from './desk-page';

type DeviceList = paths['/aims/rs/scim/v2/Device/.search']['post']['responses'][200]['content']['application/scim+json'];
type PolicyList = paths['/aims/rs/scim/v2/DevicePolicy/.search']['post']['responses'][200]['content']['application/scim+json'];
type ContentRequest = paths['/aims/rs/scim/v2/ContentRequest/{id}']['get']['responses'][200]['content']['application/scim+json'];

/**
 * Issuance from the desk (issue 37): for the chosen person, a card in stock found by its CUID, a
 * device policy (what it carries), then the content request, which opens the request's page. The
 * server decides everything again (the device must be AVAILABLE, the policy must reach the person).
 */
export function IssueDevice({ org, wallet, userName, onClose }: { org: string; wallet: string; userName: string; onClose: () => void }) {
  const navigate = useNavigate();
  const [typed, setTyped] = useState('');
  const [cuid] = useDebouncedValue(typed.trim(), 200);
  const [device, setDevice] = useState<string | null>(null);
  const [policy, setPolicy] = useState<string | null>(null);
  const devices = useQuery({
    queryKey: ['stock-devices', org, cuid],
    queryFn: () =>
      answer<DeviceList>(
        api.POST('/aims/rs/scim/v2/Device/.search', {
          body: {
            schemas: [SEARCH_REQUEST],
            filter: `status.status eq "AVAILABLE"${cuid ? ` and externalIds.CUID sw ${scimString(cuid)}` : ''}`,
            count: 10,
          },
        }),
      ),
  });
  const policies = useQuery({
    queryKey: ['device-policies', org],
    queryFn: () => answer<PolicyList>(api.POST('/aims/rs/scim/v2/DevicePolicy/.search', { body: { schemas: [SEARCH_REQUEST], count: 200 } })),
  });
  const chosenPolicy = policies.data?.Resources.find((p) => p.id === policy);
  const issue = useMutation({
    mutationFn: () =>
      answer<ContentRequest>(
        api.POST('/aims/rs/scim/v2/ContentRequest', {
          body: {
            schemas: ['urn:vendor:scim:api:cms:1.0:ContentRequest'],
            type: 'issuance',
            target: { device: { value: device! }, devicePolicy: { value: policy! } },
            wallet: { value: wallet },
          },
        }),
      ),
    onSuccess: (request) => navigate({ to: '/$org/requests/$id', params: { org, id: request.id } }),
  });
  const cuidOf = (id: string) => devices.data?.Resources.find((d) => d.id === id)?.externalIds?.[0]?.CUID ?? id;
  return (
    <Modal opened onClose={onClose} title={`Issue a device to ${userName}`} size="lg">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (device && policy) issue.mutate();
        }}
      >
        <Stack>
          <TextInput
            label="Card in stock"
            description="The beginning of the CUID printed on the card"
            type="search"
            value={typed}
            onChange={(event) => setTyped(event.currentTarget.value)}
            data-autofocus
          />
          <ErrorText error={devices.error} />
          <Radio.Group label="Device" value={device} onChange={setDevice} required>
            <Table aria-label="Cards in stock">
              <Table.Tbody>
                {devices.data?.Resources.map((found) => (
                  <Table.Tr key={found.id}>
                    <Table.Td>
                      <Radio value={found.id!} label={`Card ${found.externalIds?.[0]?.CUID ?? found.id}`} />
                    </Table.Td>
                    <Table.Td>
                      <code>{found.externalIds?.[0]?.ATR}</code>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Radio.Group>
          {devices.isSuccess && devices.data.totalResults === 0 ? (
            <Text>No card in stock begins with this CUID. Check the number on the card, or have the card imported first.</Text>
          ) : null}
          <Select
            label="Device policy"
            description="What the device carries"
            placeholder="Choose a policy"
            data={policies.data?.Resources.map((p) => ({ value: p.id!, label: p.name ?? p.id! })) ?? []}
            value={policy}
            onChange={setPolicy}
            allowDeselect={false}
            searchable
            nothingFoundMessage="No policy has this name"
            required
          />
          <ErrorText error={policies.error} />
          {chosenPolicy ? (
            <Text size="sm">
              Credentials: {(chosenPolicy.credentialTypes ?? []).join(', ') || 'none'}
              {chosenPolicy.requiresApproval === false ? '; no approval needed' : '; another operator approves it'}
            </Text>
          ) : null}
          <ErrorText error={issue.error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" disabled={!device || !policy} loading={issue.isPending}>
              {device ? `Issue card ${cuidOf(device)}` : 'Issue'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
