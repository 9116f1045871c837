import { Button, Group, Paper, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { ApiError, api, answer, done } from '../api/client';
import type { CertifiedApplication, ListResponse, Organization } from '../api/resources';
import { ErrorText } from '../components/error-text';
import { AuditDestinations } from './audit-destinations';
import { Authority } from './certificate-authority';
import { PushGateways } from './push-gateways';
import { SettingsForm } from './settings-form';

/** The organization: its settings (a form), certified applications, issuing CA (generations, renewal, downloads), push gateways and audit destinations (a SIEM) with their deliveries. */
export function OrganizationPage() {
  const { org } = useParams({ from: '/$org/organization' });
  const organization = useQuery({
    queryKey: ['organization', org],
    queryFn: () => answer<Organization>(api.GET('/admin/v1/organizations/{org}', { params: { path: { org } } })),
  });
  return (
    <Stack>
      <Title order={1}>Organization {organization.data?.name ?? org}</Title>
      <ErrorText error={organization.error} />
      {organization.data ? <SettingsForm org={org} organization={organization.data} /> : null}
      <Applications org={org} />
      <Authority org={org} />
      <PushGateways org={org} />
      <AuditDestinations org={org} />
    </Stack>
  );
}

function Applications({ org }: { org: string }) {
  const queryClient = useQueryClient();
  const [applicationId, setApplicationId] = useState('');
  const applications = useQuery({
    queryKey: ['applications', org],
    queryFn: () => answer<ListResponse<CertifiedApplication>>(api.GET('/admin/v1/organizations/{org}/applications', { params: { path: { org } } })),
  });
  const add = useMutation({
    mutationFn: () => answer(api.POST('/admin/v1/organizations/{org}/applications', { params: { path: { org } }, body: { applicationId } })),
    onSuccess: () => {
      setApplicationId('');
      void queryClient.invalidateQueries({ queryKey: ['applications', org] });
    },
  });
  const remove = useMutation({
    mutationFn: (id: string) =>
      done(api.DELETE('/admin/v1/organizations/{org}/applications/{applicationId}', { params: { path: { org, applicationId: id } } })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ['applications', org] }),
  });
  return (
    <Paper withBorder p="md" component="section" aria-labelledby="applications-title">
      <Stack>
        <Title order={2} size="h3" id="applications-title">
          Certified applications
        </Title>
        <Text size="sm">Under the organization's "certified" Application-ID policy, only these applications may call the API.</Text>
        <Table aria-labelledby="applications-title">
          <Table.Tbody>
            {applications.data?.Resources.map((application) => (
              <Table.Tr key={application.applicationId}>
                <Table.Td>
                  <code>{application.applicationId}</code>
                </Table.Td>
                <Table.Td>{application.name}</Table.Td>
                <Table.Td>
                  <Button
                    size="xs"
                    variant="default"
                    aria-label={`Remove ${application.applicationId}`}
                    onClick={() => remove.mutate(application.applicationId)}
                  >
                    Remove
                  </Button>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
        <form
          onSubmit={(event) => {
            event.preventDefault();
            add.mutate();
          }}
        >
          <Group align="flex-end">
            <TextInput
              label="Application-ID"
              value={applicationId}
              onChange={(event) => setApplicationId(event.currentTarget.value)}
              error={add.error instanceof ApiError ? add.error.message : undefined}
            />
            <Button type="submit" disabled={!applicationId.trim()} loading={add.isPending}>
              Certify
            </Button>
          </Group>
        </form>
      </Stack>
    </Paper>
  );
}
