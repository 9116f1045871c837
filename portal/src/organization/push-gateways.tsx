import { Button, Checkbox, Group, Modal, Paper, PasswordInput, Select, Stack, Table, Text, TextInput, Textarea, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, answer, done } from '../api/client';
import type { ListResponse, PushGateway, PushNotification, TestSendResult } from '../api/resources';
import { ConfirmByTyping } from '../components/confirm-by-typing';
import { DateTime } from '../components/date-time';
import { ErrorText } from '../components/error-text';
import { FailureReason } from '../components/failure-reason';
import { HiddenHeader } from '../components/hidden-header';
import { ListFooter } from '../components/list-footer';
import { fieldErrors } from './settings-form';

const GATEWAY_SCHEMA = 'urn:vendor:scim:api:idp:2.0:DeliveryGateway:Push';
const TYPES = [
  { value: 'CLOUD_GCM_PUSH', label: 'Android (FCM)' },
  { value: 'CLOUD_APNS_PUSH', label: 'Apple (APNs)' },
  { value: 'CLOUD_WNS_PUSH', label: 'Windows (WNS)' },
] as const;
const OPERATING_SYSTEMS = ['Android', 'iOS12', 'iOS13', 'WINDOWS', 'WINDOWS10', 'WINDOWS11'] as const;
type OperatingSystem = (typeof OPERATING_SYSTEMS)[number];
const GATEWAY_FIELDS = ['name', 'hub', 'connectionString', 'notificationTimeToLive', 'supportedOperatingSystems', 'notes'] as const;
/** The interface's latest version: operating systems and notes are attributes of versions 2 and 3 (DECISIONS 10). */
const V3 = { 'api-version': '3' } as const;
const gatewaysKey = (org: string) => ['push-gateways', org];

/** The organization's push gateways (DECISIONS 10), with create, edit, delete and a test send, and their deliveries. */
export function PushGateways({ org }: { org: string }) {
  const gateways = useQuery({
    queryKey: gatewaysKey(org),
    queryFn: () =>
      answer<{ totalResults: number; resources: PushGateway[] }>(
        api.GET('/configuration/{tenant}/v2/DeliveryGateway/Push', { params: { path: { tenant: org }, query: V3 } }),
      ),
  });
  const [editing, setEditing] = useState<PushGateway | 'new' | null>(null);
  const [deleting, setDeleting] = useState<PushGateway | null>(null);
  const [testing, setTesting] = useState<PushGateway | null>(null);
  const list = gateways.data?.resources ?? [];
  return (
    <>
      <Paper withBorder p="md" component="section" aria-labelledby="push-title">
        <Stack>
          <Group justify="space-between">
            <Title order={2} size="h3" id="push-title">
              Push gateways
            </Title>
            <Button onClick={() => setEditing('new')}>Create push gateway</Button>
          </Group>
          <Text size="sm">
            Push gateways deliver notifications to people's authenticator apps through a notification hub. A gateway sends once an authenticator policy binds
            it.
          </Text>
          <ErrorText error={gateways.error} />
          {gateways.data && list.length === 0 ? (
            <Text>No push gateway is configured. Create one with your notification hub's name and connection string.</Text>
          ) : null}
          {list.length > 0 ? (
            <Table aria-labelledby="push-title">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Name</Table.Th>
                  <Table.Th>Type</Table.Th>
                  <Table.Th>Hub</Table.Th>
                  <Table.Th>Operating systems</Table.Th>
                  <Table.Th>Notification lifetime (s)</Table.Th>
                  <HiddenHeader>Actions</HiddenHeader>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {list.map((gateway) => (
                  <Table.Tr key={gateway.id}>
                    <Table.Td title={`id ${gateway.id}`}>{gateway.name}</Table.Td>
                    <Table.Td>{TYPES.find((type) => type.value === gateway.type)?.label ?? gateway.type}</Table.Td>
                    <Table.Td>{gateway.hub ?? 'not set'}</Table.Td>
                    <Table.Td>{gateway.supportedOperatingSystems?.join(', ')}</Table.Td>
                    <Table.Td>{gateway.notificationTimeToLive}</Table.Td>
                    <Table.Td>
                      <Group gap="xs" wrap="nowrap">
                        <Button size="xs" variant="default" aria-label={`Edit ${gateway.name}`} onClick={() => setEditing(gateway)}>
                          Edit
                        </Button>
                        <Button size="xs" variant="default" aria-label={`Test ${gateway.name}`} onClick={() => setTesting(gateway)} disabled={!gateway.hub}>
                          Test
                        </Button>
                        <Button size="xs" variant="default" color="red" aria-label={`Delete ${gateway.name}`} onClick={() => setDeleting(gateway)}>
                          Delete
                        </Button>
                      </Group>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          ) : null}
        </Stack>
      </Paper>
      {editing ? <GatewayDialog org={org} gateway={editing === 'new' ? null : editing} onClose={() => setEditing(null)} /> : null}
      {testing ? <TestDialog org={org} gateway={testing} onClose={() => setTesting(null)} /> : null}
      <DeleteGateway org={org} gateway={deleting} onClose={() => setDeleting(null)} />
      <Deliveries org={org} gateways={list} />
    </>
  );
}

/** Create (POST) or edit (PUT with If-Match) a gateway. The connection string is never shown again: left empty on edit, it stays. */
function GatewayDialog({ org, gateway, onClose }: { org: string; gateway: PushGateway | null; onClose: () => void }) {
  const queryClient = useQueryClient();
  const [type, setType] = useState<string | null>(gateway?.type ?? null);
  const [name, setName] = useState(gateway?.name ?? '');
  const [hub, setHub] = useState(gateway?.hub ?? '');
  const [connectionString, setConnectionString] = useState('');
  const [ttl, setTtl] = useState(gateway?.notificationTimeToLive ?? '86400');
  const [systems, setSystems] = useState<string[]>(gateway?.supportedOperatingSystems ?? []);
  const [notes, setNotes] = useState(gateway?.notes ?? '');
  const save = useMutation({
    mutationFn: () => {
      const fields = {
        schemas: [GATEWAY_SCHEMA],
        name,
        hub: hub.trim() || null,
        notificationTimeToLive: ttl,
        supportedOperatingSystems: systems as OperatingSystem[],
        notes: notes.trim() || null,
        ...(connectionString ? { connectionString } : {}),
      };
      return gateway
        ? answer<PushGateway>(
            api.PUT('/configuration/{tenant}/v2/DeliveryGateway/Push/{id}', {
              params: { path: { tenant: org, id: gateway.id }, query: V3, header: { 'If-Match': `W/"${gateway.meta.version}"` } },
              body: fields,
            }),
          )
        : answer<PushGateway>(
            api.POST('/configuration/{tenant}/v2/DeliveryGateway/Push', {
              params: { path: { tenant: org }, query: V3 },
              body: { ...fields, type: type as PushGateway['type'] },
            }),
          );
    },
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: gatewaysKey(org) });
      onClose();
    },
  });
  const { byField, rest } = fieldErrors(save.error, GATEWAY_FIELDS);
  return (
    <Modal opened onClose={onClose} title={gateway ? `Edit push gateway ${gateway.name}` : 'Create a push gateway'} size="lg">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          save.mutate();
        }}
      >
        <Stack>
          {gateway ? null : (
            <Select
              label="Type"
              data={[...TYPES]}
              value={type}
              onChange={setType}
              allowDeselect={false}
              placeholder="Choose the platform"
              required
              data-autofocus
            />
          )}
          <TextInput label="Name" value={name} onChange={(event) => setName(event.currentTarget.value)} error={byField.name} required />
          <TextInput
            label="Hub"
            description="The notification hub's name or path"
            value={hub}
            onChange={(event) => setHub(event.currentTarget.value)}
            error={byField.hub}
          />
          <PasswordInput
            label="Connection string"
            description={
              gateway
                ? 'Never shown again once saved. Leave empty to keep the current one.'
                : 'Endpoint=sb://…;SharedAccessKeyName=…;SharedAccessKey=… (stored encrypted, never shown again)'
            }
            value={connectionString}
            onChange={(event) => setConnectionString(event.currentTarget.value)}
            error={byField.connectionString}
            autoComplete="off"
          />
          <TextInput
            label="Notification lifetime (seconds)"
            description="A notification not delivered within this time is dropped; 0: no limit"
            inputMode="numeric"
            value={ttl}
            onChange={(event) => setTtl(event.currentTarget.value)}
            error={byField.notificationTimeToLive}
          />
          <Checkbox.Group label="Operating systems it delivers to" value={systems} onChange={setSystems} error={byField.supportedOperatingSystems}>
            <Group mt="xs">
              {OPERATING_SYSTEMS.map((system) => (
                <Checkbox key={system} value={system} label={system} />
              ))}
            </Group>
          </Checkbox.Group>
          <Textarea label="Notes" value={notes} onChange={(event) => setNotes(event.currentTarget.value)} error={byField.notes} autosize minRows={2} />
          <ErrorText error={rest ? { message: rest } : null} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={save.isPending} disabled={!name.trim() || (!gateway && !type)}>
              {gateway ? 'Save' : 'Create'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

/** One notification straight to the hub, to a device handle the administrator gives (their own phone), and what the hub said. */
function TestDialog({ org, gateway, onClose }: { org: string; gateway: PushGateway; onClose: () => void }) {
  const [pushHandle, setPushHandle] = useState('');
  const send = useMutation({
    mutationFn: () =>
      answer<TestSendResult>(
        api.POST('/configuration/{tenant}/v2/DeliveryGateway/Push/{id}/test', { params: { path: { tenant: org, id: gateway.id } }, body: { pushHandle } }),
      ),
  });
  const result = send.data;
  return (
    <Modal opened onClose={onClose} title={`Test push gateway ${gateway.name}`}>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          send.mutate();
        }}
      >
        <Stack>
          <Text size="sm">Sends one notification through the hub now, to the device whose push handle you give. Nothing is queued or retried.</Text>
          <TextInput
            label="Device push handle"
            value={pushHandle}
            onChange={(event) => setPushHandle(event.currentTarget.value)}
            autoComplete="off"
            required
            data-autofocus
            error={fieldErrors(send.error, ['pushHandle'] as const).byField.pushHandle}
          />
          <Text role="status" size="sm" fw={result ? 700 : undefined}>
            {result
              ? `${result.outcome === 'sent' ? 'Sent' : result.outcome === 'refused' ? 'Refused' : 'No answer'} (${result.reason}): ${result.detail}`
              : ''}
          </Text>
          <ErrorText error={send.error && !fieldErrors(send.error, ['pushHandle'] as const).byField.pushHandle ? send.error : null} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Close
            </Button>
            <Button type="submit" loading={send.isPending} disabled={!pushHandle.trim()}>
              Send test notification
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

function DeleteGateway({ org, gateway, onClose }: { org: string; gateway: PushGateway | null; onClose: () => void }) {
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: (target: PushGateway) =>
      done(
        api.DELETE('/configuration/{tenant}/v2/DeliveryGateway/Push/{id}', {
          params: { path: { tenant: org, id: target.id }, header: { 'If-Match': `W/"${target.meta.version}"` } },
        }),
      ),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: gatewaysKey(org) });
      onClose();
    },
  });
  return (
    <ConfirmByTyping
      key={gateway?.id ?? 'none'}
      opened={gateway !== null}
      onClose={() => {
        remove.reset();
        onClose();
      }}
      title={`Delete push gateway ${gateway?.name ?? ''}`}
      name={gateway?.name ?? ''}
      action="Delete"
      consequence="Notifications stop going through it. A gateway an authenticator policy still binds, or a default gateway, cannot be deleted."
      onConfirm={() => gateway && remove.mutate(gateway)}
      pending={remove.isPending}
      error={remove.error?.message}
    />
  );
}

const STATES = [
  { value: 'all', label: 'All' },
  { value: 'pending', label: 'Pending (retrying)' },
  { value: 'sent', label: 'Sent' },
  { value: 'failed', label: 'Failed' },
  { value: 'deadLettered', label: 'Dead-lettered' },
  { value: 'discarded', label: 'Discarded' },
];
const STATE_LABELS: Record<string, string> = { pending: 'Pending', sent: 'Sent', failed: 'Failed', deadLettered: 'Dead-lettered', discarded: 'Discarded' };

/**
 * The coarse class of a delivery's last error (DECISIONS 10.5): the class a send without an answer
 * starts with (`timeout`, `connection_failed`, ...), the hub's status, or what the service decided.
 */
export function reasonClass(notification: Pick<PushNotification, 'lastError' | 'lastStatus' | 'state'>): string {
  const error = notification.lastError?.replace(/^dead-lettered after \d+ attempts; last: /, '');
  if (!error) return notification.state === 'sent' ? 'delivered' : '';
  const named = /^([a-z_]+): /.exec(error);
  if (named) return named[1];
  if (notification.lastStatus !== null) return `hub answered ${notification.lastStatus}`;
  return error.startsWith('expired') ? 'expired' : 'not sent';
}

const PAGE = 20;

/** Every notification's delivery, newest first: sent, retried (attempts), failed, dead-lettered, with the reason's class. */
function Deliveries({ org, gateways }: { org: string; gateways: PushGateway[] }) {
  const [state, setState] = useState<string>('all');
  const [page, setPage] = useState(1);
  const deliveries = useQuery({
    queryKey: ['push-deliveries', org, state, page],
    queryFn: () =>
      answer<ListResponse<PushNotification>>(
        api.GET('/configuration/{tenant}/v2/DeliveryGateway/Notifications', {
          params: {
            path: { tenant: org },
            query: { startIndex: (page - 1) * PAGE + 1, count: PAGE, ...(state === 'all' ? {} : { state: state as PushNotification['state'] }) },
          },
        }),
      ),
  });
  const names = new Map(gateways.map((gateway) => [gateway.id, gateway.name]));
  const rows = deliveries.data?.Resources ?? [];
  return (
    <Paper withBorder p="md" component="section" aria-labelledby="deliveries-title">
      <Stack>
        <Group justify="space-between" align="flex-end">
          <Title order={2} size="h3" id="deliveries-title">
            Push deliveries
          </Title>
          <Group align="flex-end">
            <Select
              label="State"
              data={STATES}
              value={state}
              onChange={(value) => {
                setState(value ?? 'all');
                setPage(1);
              }}
              allowDeselect={false}
              w={200}
            />
            <Button variant="default" onClick={() => void deliveries.refetch()} loading={deliveries.isFetching}>
              Refresh
            </Button>
          </Group>
        </Group>
        <ErrorText error={deliveries.error} />
        {deliveries.data && rows.length === 0 ? (
          <Text>
            No notification {state === 'all' ? 'has been sent yet' : 'is in this state'}. Notifications appear here once a gateway bound by an authenticator
            policy sends them.
          </Text>
        ) : null}
        {rows.length > 0 ? (
          <Table aria-labelledby="deliveries-title">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Created</Table.Th>
                <Table.Th>Cause</Table.Th>
                <Table.Th>Gateway</Table.Th>
                <Table.Th>State</Table.Th>
                <Table.Th>Attempts</Table.Th>
                <Table.Th>Reason</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((row) => (
                <Table.Tr key={row.id}>
                  <Table.Td>
                    <DateTime iso={row.meta.created} />
                  </Table.Td>
                  <Table.Td>{row.cause}</Table.Td>
                  <Table.Td>{row.gateway ? (names.get(row.gateway.value) ?? `gateway ${row.gateway.value}`) : 'none'}</Table.Td>
                  <Table.Td>
                    {STATE_LABELS[row.state] ?? row.state}
                    {row.state === 'pending' && row.attempts > 0 ? ', retrying' : ''}
                    {row.state === 'sent' && row.attempts > 1 ? ' after retries' : ''}
                  </Table.Td>
                  <Table.Td>{row.attempts}</Table.Td>
                  <Table.Td>
                    <FailureReason reason={reasonClass(row)} detail={row.lastError} />
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        ) : null}
        <ListFooter loaded={deliveries.isSuccess} total={deliveries.data?.totalResults ?? 0} noun="notification" pageSize={PAGE} page={page} onPage={setPage} />
      </Stack>
    </Paper>
  );
}
