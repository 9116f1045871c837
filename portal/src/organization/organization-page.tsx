import { Anchor, Button, Code, Group, Paper, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { ApiError, api, answer, done } from '../api/client';
import type { CaGeneration, CertificateAuthority, CertifiedApplication, ListResponse, Organization, PushGateway } from '../api/resources';
import { ErrorText } from '../components/error-text';
import { DateTime } from '../components/date-time';

/** The organization: its name and settings, certified applications, issuing CA (certificate and downloads), push gateways. */
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
      {organization.data ? (
        <Paper withBorder p="md" component="section" aria-labelledby="settings-title">
          <Stack>
            <Title order={2} size="h3" id="settings-title">
              Settings
            </Title>
            <Code block>{JSON.stringify(organization.data.settings, null, 2)}</Code>
          </Stack>
        </Paper>
      ) : null}
      <Applications org={org} />
      <Authority org={org} />
      <PushGateways org={org} />
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

/**
 * The issuing CA. Its generations are read first, which answer an empty list for an organization
 * without a CA; the CA itself is read only when there is one (GET .../ca answers 404 otherwise,
 * which the browser would log: DECISIONS 17).
 */
function Authority({ org }: { org: string }) {
  const generations = useQuery({
    queryKey: ['ca-generations', org],
    queryFn: () => answer<ListResponse<CaGeneration>>(api.GET('/admin/v1/organizations/{org}/ca/generations', { params: { path: { org } } })),
  });
  const exists = (generations.data?.totalResults ?? 0) > 0;
  const ca = useQuery({
    queryKey: ['ca', org],
    queryFn: () => answer<CertificateAuthority>(api.GET('/admin/v1/organizations/{org}/ca', { params: { path: { org } } })),
    enabled: exists,
  });
  return (
    <Paper withBorder p="md" component="section" aria-labelledby="ca-title">
      <Stack>
        <Title order={2} size="h3" id="ca-title">
          Issuing CA
        </Title>
        {generations.isSuccess && !exists ? <CreateAuthority org={org} /> : null}
        <ErrorText error={generations.error ?? ca.error} />
        {ca.data ? (
          <>
            <Text size="sm">
              {ca.data.subject} · generation {ca.data.generation} · {ca.data.keyAlgorithm} · {ca.data.status}
              {ca.data.notAfter ? (
                <>
                  {' · valid until '}
                  <DateTime iso={ca.data.notAfter} />
                </>
              ) : null}
            </Text>
            <Group>
              <Anchor href={`/pki/${encodeURIComponent(org)}/ca.crt`} download>
                Download the CA certificate
              </Anchor>
              <Anchor href={`/pki/${encodeURIComponent(org)}/ca-chain.pem`} download>
                Download the chain (PEM)
              </Anchor>
              <Anchor href={`/pki/${encodeURIComponent(org)}/crl`} download>
                Download the CRL
              </Anchor>
            </Group>
          </>
        ) : null}
      </Stack>
    </Paper>
  );
}

/** An organization without a CA: says so and creates a self-signed one (its key made in the HSM). */
function CreateAuthority({ org }: { org: string }) {
  const queryClient = useQueryClient();
  const [keyAlgorithm, setKeyAlgorithm] = useState<string | null>('EC-P256');
  const create = useMutation({
    mutationFn: () =>
      answer<CertificateAuthority>(
        api.POST('/admin/v1/organizations/{org}/ca', { params: { path: { org } }, body: { keyAlgorithm: (keyAlgorithm ?? 'EC-P256') as 'EC-P256' } }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['ca-generations', org] }),
  });
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        create.mutate();
      }}
    >
      <Stack>
        <Text>The organization has no issuing CA yet, so no certificate can be issued. Create a self-signed one here; its key is made in the HSM.</Text>
        <Group align="flex-end">
          <Select
            label="Key algorithm"
            data={['EC-P256', 'EC-P384', 'RSA-3072']}
            value={keyAlgorithm}
            onChange={setKeyAlgorithm}
            allowDeselect={false}
            w={180}
          />
          <Button type="submit" loading={create.isPending}>
            Create the CA
          </Button>
        </Group>
        <ErrorText error={create.error} />
      </Stack>
    </form>
  );
}

/** The organization's push gateways (read here; configured through /configuration/{org}/v2/DeliveryGateway/Push). */
function PushGateways({ org }: { org: string }) {
  const gateways = useQuery({
    queryKey: ['push-gateways', org],
    queryFn: () =>
      answer<{ totalResults: number; resources: PushGateway[] }>(
        api.GET('/configuration/{tenant}/v2/DeliveryGateway/Push', { params: { path: { tenant: org } } }),
      ),
  });
  return (
    <Paper withBorder p="md" component="section" aria-labelledby="push-title">
      <Stack>
        <Title order={2} size="h3" id="push-title">
          Push gateways
        </Title>
        <ErrorText error={gateways.error} />
        {gateways.data && gateways.data.resources.length === 0 ? <Text>No push gateway is configured.</Text> : null}
        {gateways.data && gateways.data.resources.length > 0 ? (
          <Table aria-labelledby="push-title">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Type</Table.Th>
                <Table.Th>Operating systems</Table.Th>
                <Table.Th>Notification lifetime (s)</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {gateways.data.resources.map((gateway) => (
                <Table.Tr key={gateway.id}>
                  <Table.Td>{gateway.name}</Table.Td>
                  <Table.Td>{gateway.type}</Table.Td>
                  <Table.Td>{gateway.supportedOperatingSystems?.join(', ')}</Table.Td>
                  <Table.Td>{gateway.notificationTimeToLive}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        ) : null}
      </Stack>
    </Paper>
  );
}
