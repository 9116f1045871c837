import { Button, Group, Modal, NumberInput, Paper, SegmentedControl, Select, Stack, Switch, Table, Text, TextInput, Textarea, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ApiError, api, answer, done } from '../api/client';
import type { AuditDelivery, AuditDestination, DestinationTestResult, ListResponse } from '../api/resources';
import { ConfirmAction } from '../components/confirm-action';
import { ConfirmByTyping } from '../components/confirm-by-typing';
import { DateTime } from '../components/date-time';
import { ErrorText } from '../components/error-text';
import { FailureReason } from '../components/failure-reason';
import { HiddenHeader } from '../components/hidden-header';
import { ListFooter } from '../components/list-footer';
import { OneTimeSecret } from '../components/one-time-secret';
import { fieldErrors } from './settings-form';

const PATH = '/admin/v1/organizations/{org}/audit-destinations';
const ONE = '/admin/v1/organizations/{org}/audit-destinations/{id}';
const FIELDS = ['name', 'type', 'url', 'host', 'port', 'caCertificate', 'clientCertificate', 'clientKey'] as const;
const destinationsKey = (org: string) => ['audit-destinations', org];
const deliveriesKey = (org: string, id: string) => ['audit-deliveries', org, id];
const PAGE = 20;

/** Where a destination sends: the webhook's URL, or the syslog receiver's host:port. */
const target = (destination: AuditDestination) =>
  destination.type === 'webhook' ? (destination.url ?? '') : `${destination.host ?? ''}:${destination.port ?? 6514}`;

const STATE_LABELS: Record<AuditDelivery['state'], string> = { pending: 'Pending', delivered: 'Delivered', deadLettered: 'Dead-lettered' };

/**
 * The coarse class of a delivery's last failure (DECISIONS 11.4: `connection_failed`, `timeout`,
 * `tls_error`, `http_<status>`, ...), the dead letter's preamble left out; the sentence stays beside it.
 */
export function failureClass(lastError: string | null): string {
  if (!lastError) return '';
  const last = lastError.includes('; last: ') ? lastError.slice(lastError.indexOf('; last: ') + 8) : lastError;
  return /^([a-z0-9_]+): /.exec(last)?.[1] ?? last;
}

/**
 * The server's 400 at its field: the destination checks answer a sentence that starts with the
 * field's name ("url must use https ..."), the schema "field: reason"; either lands at the field.
 */
function destinationErrors(error: unknown) {
  const found = fieldErrors(error, FIELDS);
  if (!found.rest || !(error instanceof ApiError) || error.status !== 400) return found;
  const sentence = error.message.replace(/^Invalid [^:]*: /, '');
  const field = FIELDS.find((name) => sentence.startsWith(`${name} `));
  return field ? { byField: { [field]: sentence }, rest: undefined } : found;
}

/**
 * The organization's audit event destinations (DECISIONS 11.4): a SIEM's syslog receiver or signed
 * webhook, with create, edit, delete, a test event, and each destination's deliveries.
 */
export function AuditDestinations({ org }: { org: string }) {
  const destinations = useQuery({
    queryKey: destinationsKey(org),
    queryFn: () => answer<ListResponse<AuditDestination>>(api.GET(PATH, { params: { path: { org }, query: { count: 100 } } })),
  });
  const [editing, setEditing] = useState<AuditDestination | 'new' | null>(null);
  const [deleting, setDeleting] = useState<AuditDestination | null>(null);
  const [testing, setTesting] = useState<AuditDestination | null>(null);
  const [viewing, setViewing] = useState<string | null>(null);
  const list = destinations.data?.Resources ?? [];
  const shown = list.find((destination) => destination.id === viewing) ?? null;
  return (
    <>
      <Paper withBorder p="md" component="section" aria-labelledby="siem-title">
        <Stack>
          <Group justify="space-between">
            <Title order={2} size="h3" id="siem-title">
              Sending to a SIEM
            </Title>
            <Button onClick={() => setEditing('new')}>Create audit destination</Button>
          </Group>
          <Text size="sm">
            Every audit event of the organization is sent, once committed, to each enabled destination: a syslog receiver over TLS or an HTTPS webhook whose
            calls are signed. A receiver removes duplicates by the event id.
          </Text>
          <ErrorText error={destinations.error} />
          {destinations.data && list.length === 0 ? (
            <Text>No audit destination is configured. Create one with your SIEM's syslog address or webhook URL.</Text>
          ) : null}
          {list.length > 0 ? (
            <Table aria-labelledby="siem-title">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Name</Table.Th>
                  <Table.Th>Type</Table.Th>
                  <Table.Th>Target</Table.Th>
                  <Table.Th>Enabled</Table.Th>
                  <Table.Th>Last delivery</Table.Th>
                  <HiddenHeader>Actions</HiddenHeader>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {list.map((destination) => (
                  <Table.Tr key={destination.id}>
                    <Table.Td title={`id ${destination.id}`}>{destination.name}</Table.Td>
                    <Table.Td>{destination.type}</Table.Td>
                    <Table.Td>{target(destination)}</Table.Td>
                    <Table.Td>{destination.enabled ? 'Yes' : 'No'}</Table.Td>
                    <Table.Td>
                      <LastDelivery org={org} id={destination.id} />
                    </Table.Td>
                    <Table.Td>
                      <Group gap="xs" wrap="nowrap">
                        <Button size="xs" variant="default" aria-label={`Deliveries of ${destination.name}`} onClick={() => setViewing(destination.id)}>
                          Deliveries
                        </Button>
                        <Button size="xs" variant="default" aria-label={`Edit ${destination.name}`} onClick={() => setEditing(destination)}>
                          Edit
                        </Button>
                        <Button size="xs" variant="default" aria-label={`Test ${destination.name}`} onClick={() => setTesting(destination)}>
                          Test
                        </Button>
                        <Button size="xs" variant="default" color="red" aria-label={`Delete ${destination.name}`} onClick={() => setDeleting(destination)}>
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
      {editing ? <DestinationDialog org={org} destination={editing === 'new' ? null : editing} onClose={() => setEditing(null)} /> : null}
      {testing ? <TestDialog org={org} destination={testing} onClose={() => setTesting(null)} /> : null}
      <DeleteDestination
        org={org}
        destination={deleting}
        onClose={(deleted) => {
          if (deleted && deleted === viewing) setViewing(null);
          setDeleting(null);
        }}
      />
      {shown ? <Deliveries org={org} destination={shown} /> : null}
    </>
  );
}

/** The state of the destination's newest delivery, read as the first row of its deliveries. */
function LastDelivery({ org, id }: { org: string; id: string }) {
  const last = useQuery({
    queryKey: [...deliveriesKey(org, id), 'last'],
    queryFn: () => answer<ListResponse<AuditDelivery>>(api.GET(`${ONE}/deliveries`, { params: { path: { org, id }, query: { count: 1 } } })),
  });
  const row = last.data?.Resources[0];
  if (!last.data) return null;
  if (!row) return <>none yet</>;
  return (
    <>
      {STATE_LABELS[row.state]}
      {row.lastError ? ` (${failureClass(row.lastError)})` : ''}, <DateTime iso={row.deliveredAt ?? row.lastModified} />
    </>
  );
}

/**
 * Create (POST) or edit (PATCH with If-Match) a destination. A webhook's secret is answered once, by
 * the create, and shown here only; a client key is never shown again (left empty on edit, it stays).
 */
function DestinationDialog({ org, destination, onClose }: { org: string; destination: AuditDestination | null; onClose: () => void }) {
  const queryClient = useQueryClient();
  const [type, setType] = useState<string | null>(destination?.type ?? null);
  const [name, setName] = useState(destination?.name ?? '');
  const [url, setUrl] = useState(destination?.url ?? '');
  const [host, setHost] = useState(destination?.host ?? '');
  const [port, setPort] = useState<string | number>(destination?.port ?? 6514);
  const [enabled, setEnabled] = useState(destination?.enabled ?? true);
  const [ca, setCa] = useState(destination?.caCertificate ?? '');
  const [clientCertificate, setClientCertificate] = useState(destination?.clientCertificate ?? '');
  const [clientKey, setClientKey] = useState('');
  const save = useMutation({
    mutationFn: () => {
      const where = type === 'webhook' ? { url: url.trim() } : { host: host.trim(), port: Number(port) };
      const caCertificate = ca.trim() || null;
      const certificate = clientCertificate.trim() || null;
      // The client certificate and key change together (DECISIONS 11.4): a new certificate or key is
      // sent (the server says when one lacks the other), a cleared certificate removes both, else neither.
      const changed = Boolean(clientKey.trim()) || (certificate !== null && certificate !== (destination?.clientCertificate?.trim() ?? null));
      const pair = changed
        ? { clientCertificate: certificate, ...(clientKey.trim() ? { clientKey } : {}) }
        : destination?.clientCertificate && !certificate
          ? { clientCertificate: null, clientKey: null }
          : {};
      const fields = {
        name,
        enabled,
        ...where,
        ...(!destination || caCertificate !== destination.caCertificate ? { caCertificate } : {}),
        ...(type === 'syslog' ? pair : {}),
      };
      return destination
        ? answer<AuditDestination>(
            api.PATCH(ONE, { params: { path: { org, id: destination.id } }, headers: { 'If-Match': `W/"${destination.meta.version}"` }, body: fields }),
          )
        : answer<AuditDestination>(api.POST(PATH, { params: { path: { org } }, body: { ...fields, type: type as AuditDestination['type'] } }));
    },
    onSuccess: async (saved) => {
      await queryClient.invalidateQueries({ queryKey: destinationsKey(org) });
      if (!saved.secret) onClose();
    },
  });
  const { byField, rest } = destinationErrors(save.error);
  const secret = save.data?.secret;
  return (
    <Modal opened onClose={onClose} title={destination ? `Edit audit destination ${destination.name}` : 'Create an audit destination'} size="lg">
      {secret ? (
        <Stack>
          <OneTimeSecret label="Webhook secret" value={secret}>
            <Text size="sm">
              Each call carries a webhook-signature header: v1, then the base64 HMAC-SHA256, keyed with the base64 after whsec_, of the webhook-id header, a
              dot, the webhook-timestamp header, a dot and the raw body. Your receiver recomputes it (any Standard Webhooks library does) and refuses a
              timestamp more than 5 minutes off.
            </Text>
          </OneTimeSecret>
          <Group justify="flex-end">
            <Button onClick={onClose}>Done</Button>
          </Group>
        </Stack>
      ) : (
        <form
          onSubmit={(event) => {
            event.preventDefault();
            save.mutate();
          }}
        >
          <Stack>
            {destination ? null : (
              <Select
                label="Type"
                data={[
                  { value: 'webhook', label: 'HTTPS webhook' },
                  { value: 'syslog', label: 'Syslog over TLS' },
                ]}
                value={type}
                onChange={setType}
                allowDeselect={false}
                placeholder="Choose how the SIEM receives"
                required
                data-autofocus
              />
            )}
            <TextInput label="Name" value={name} onChange={(event) => setName(event.currentTarget.value)} error={byField.name} required />
            {destination ? <Switch label="Enabled" checked={enabled} onChange={(event) => setEnabled(event.currentTarget.checked)} /> : null}
            {type === 'webhook' ? (
              <TextInput
                label="URL"
                description="https only; each call is signed with the secret shown once after creation"
                value={url}
                onChange={(event) => setUrl(event.currentTarget.value)}
                error={byField.url}
                required
              />
            ) : null}
            {type === 'syslog' ? (
              <Group grow align="flex-start">
                <TextInput label="Host" value={host} onChange={(event) => setHost(event.currentTarget.value)} error={byField.host} required />
                <NumberInput label="Port" description="6514 is syslog over TLS" value={port} onChange={setPort} min={1} max={65535} error={byField.port} />
              </Group>
            ) : null}
            {type ? (
              <Textarea
                label="CA certificate (PEM)"
                description="Trusted instead of the system's CAs; leave empty to use them"
                value={ca}
                onChange={(event) => setCa(event.currentTarget.value)}
                error={byField.caCertificate}
                autosize
                minRows={2}
                maxRows={6}
              />
            ) : null}
            {type === 'syslog' ? (
              <>
                <Textarea
                  label="Client certificate (PEM)"
                  description="Presented to the receiver, with its key"
                  value={clientCertificate}
                  onChange={(event) => setClientCertificate(event.currentTarget.value)}
                  error={byField.clientCertificate}
                  autosize
                  minRows={2}
                  maxRows={6}
                />
                <Textarea
                  label="Client key (PEM)"
                  description={destination ? 'Never shown again once saved. Leave empty to keep the current one.' : 'Stored encrypted, never shown again'}
                  value={clientKey}
                  onChange={(event) => setClientKey(event.currentTarget.value)}
                  error={byField.clientKey}
                  autosize
                  minRows={2}
                  maxRows={6}
                />
              </>
            ) : null}
            <ErrorText error={rest ? { message: rest } : null} />
            <Group justify="flex-end">
              <Button variant="default" onClick={onClose}>
                Cancel
              </Button>
              <Button type="submit" loading={save.isPending} disabled={!name.trim() || !type}>
                {destination ? 'Save' : 'Create'}
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </Modal>
  );
}

/** One event of type audit.test sent now (enabled or not), and what came of it. */
function TestDialog({ org, destination, onClose }: { org: string; destination: AuditDestination; onClose: () => void }) {
  const send = useMutation({
    mutationFn: () => answer<DestinationTestResult>(api.POST(`${ONE}/test`, { params: { path: { org, id: destination.id } } })),
  });
  const result = send.data;
  return (
    <Modal opened onClose={onClose} title={`Test audit destination ${destination.name}`}>
      <Stack>
        <Text size="sm">Sends one test event (type audit.test) to {target(destination)} now. Nothing is queued or retried.</Text>
        <Text role="status" size="sm" fw={result ? 700 : undefined}>
          {result ? (result.delivered ? 'Delivered: the receiver accepted the test event.' : `Not delivered (${result.result}): ${result.detail ?? ''}`) : ''}
        </Text>
        <ErrorText error={send.error} />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Close
          </Button>
          <Button onClick={() => send.mutate()} loading={send.isPending} data-autofocus>
            Send a test event
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

function DeleteDestination({ org, destination, onClose }: { org: string; destination: AuditDestination | null; onClose: (deleted?: string) => void }) {
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: (gone: AuditDestination) =>
      done(api.DELETE(ONE, { params: { path: { org, id: gone.id } }, headers: { 'If-Match': `W/"${gone.meta.version}"` } })),
    onSuccess: async (_, gone) => {
      await queryClient.invalidateQueries({ queryKey: destinationsKey(org) });
      onClose(gone.id);
    },
  });
  return (
    <ConfirmByTyping
      key={destination?.id ?? 'none'}
      opened={destination !== null}
      onClose={() => {
        remove.reset();
        onClose();
      }}
      title={`Delete audit destination ${destination?.name ?? ''}`}
      name={destination?.name ?? ''}
      action="Delete"
      consequence="Events stop going to it, and its queued deliveries are dropped. The audit log itself keeps every event."
      onConfirm={() => destination && remove.mutate(destination)}
      pending={remove.isPending}
      error={remove.error?.message}
    />
  );
}

const STATES = [
  { value: 'pending', label: 'Pending' },
  { value: 'delivered', label: 'Delivered' },
  { value: 'deadLettered', label: 'Dead-lettered' },
];

/** One destination's deliveries in one state, newest event first; a dead letter can be delivered again (its attempts counted afresh). */
function Deliveries({ org, destination }: { org: string; destination: AuditDestination }) {
  const queryClient = useQueryClient();
  const [state, setState] = useState<AuditDelivery['state']>('deadLettered');
  const [page, setPage] = useState(1);
  const [again, setAgain] = useState<AuditDelivery | null>(null);
  const deliveries = useQuery({
    queryKey: [...deliveriesKey(org, destination.id), state, page],
    queryFn: () =>
      answer<ListResponse<AuditDelivery>>(
        api.GET(`${ONE}/deliveries`, { params: { path: { org, id: destination.id }, query: { state, startIndex: (page - 1) * PAGE + 1, count: PAGE } } }),
      ),
  });
  const redrive = useMutation({
    mutationFn: (delivery: AuditDelivery) =>
      done(api.POST(`${ONE}/deliveries/{eventId}/redrive`, { params: { path: { org, id: destination.id, eventId: delivery.eventId } } })),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: deliveriesKey(org, destination.id) });
      setAgain(null);
    },
  });
  const rows = deliveries.data?.Resources ?? [];
  return (
    <Paper withBorder p="md" component="section" aria-labelledby="audit-deliveries-title">
      <Stack>
        <Group justify="space-between" align="flex-end">
          <Title order={2} size="h3" id="audit-deliveries-title">
            Deliveries to {destination.name}
          </Title>
          <Group align="flex-end">
            <SegmentedControl
              aria-label="Delivery state"
              data={STATES}
              value={state}
              onChange={(value) => {
                setState(value as AuditDelivery['state']);
                setPage(1);
              }}
            />
            <Button
              variant="default"
              onClick={() => void queryClient.invalidateQueries({ queryKey: deliveriesKey(org, destination.id) })}
              loading={deliveries.isFetching}
            >
              Refresh
            </Button>
          </Group>
        </Group>
        <ErrorText error={deliveries.error} />
        {deliveries.data && rows.length === 0 ? (
          <Text>
            {state === 'deadLettered'
              ? 'No dead letter: every event was delivered or is still being tried.'
              : state === 'pending'
                ? 'Nothing is waiting: the receiver is keeping up.'
                : 'Nothing delivered yet. Send a test event, or wait for the next audit event.'}
          </Text>
        ) : null}
        {rows.length > 0 ? (
          <Table aria-labelledby="audit-deliveries-title">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Time</Table.Th>
                <Table.Th>Event</Table.Th>
                <Table.Th>Action</Table.Th>
                <Table.Th>Attempts</Table.Th>
                <Table.Th>Last error</Table.Th>
                <HiddenHeader>Actions</HiddenHeader>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((row) => (
                <Table.Tr key={row.eventId}>
                  <Table.Td>
                    <DateTime iso={row.deliveredAt ?? row.lastModified} />
                  </Table.Td>
                  <Table.Td>{row.eventId}</Table.Td>
                  <Table.Td>{row.action}</Table.Td>
                  <Table.Td>{row.attempts}</Table.Td>
                  <Table.Td>
                    <FailureReason reason={failureClass(row.lastError)} detail={row.lastError} />
                  </Table.Td>
                  <Table.Td>
                    {row.state === 'deadLettered' ? (
                      <Button size="xs" variant="default" aria-label={`Deliver event ${row.eventId} again`} onClick={() => setAgain(row)}>
                        Deliver again
                      </Button>
                    ) : null}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        ) : null}
        <ListFooter loaded={deliveries.isSuccess} total={deliveries.data?.totalResults ?? 0} noun="event" pageSize={PAGE} page={page} onPage={setPage} />
      </Stack>
      <ConfirmAction
        opened={again !== null}
        onClose={() => {
          redrive.reset();
          setAgain(null);
        }}
        title={`Deliver event ${again?.eventId ?? ''} again`}
        action="Deliver again"
        onConfirm={() => again && redrive.mutate(again)}
        pending={redrive.isPending}
        error={redrive.error}
      >
        <Text size="sm">
          The event goes back in the queue for {destination.name}, its attempts counted afresh. The receiver may see it twice if it got it before; it removes
          duplicates by the event id.
        </Text>
      </ConfirmAction>
    </Paper>
  );
}
