import { Anchor, Button, Group, Paper, SimpleGrid, Stack, Text, Title, Tooltip } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { api, answer } from '../api/client';
import type { paths } from '../api/schema';
import { DateTime } from '../components/date-time';
import { ErrorText } from '../components/error-text';
import { Loading, NotFoundPage } from '../components/pages';
import { can, useWhoami } from '../session/whoami';
import { History } from '../audit/history';
import { SEARCH_REQUEST, scimString, type Device } from './desk-page';
import { ConfirmDecision, STATUS_LABELS, fourEyes, requestLabel, type ContentRequest, type RequestAction } from './requests-page';

type RequestList = paths['/aims/rs/scim/v2/ContentRequest/.search']['post']['responses'][200]['content']['application/scim+json'];

/** Statuses that still move: the page asks again every two seconds while the request is in one (the card client works meanwhile). */
const MOVING = ['requested', 'approved'];

/**
 * A content request (/portal/{org}/requests/{id}): person, device, policy, requester, approver,
 * expiry and what happened to it, its status moving live while it waits for approval or encoding;
 * approve and deny, each asked once in a dialog that names the request. Looked up with a search by
 * id, so that a stale link shows the not-found page with nothing logged.
 */
export function RequestPage() {
  const { org, id } = useParams({ from: '/$org/requests/$id' });
  const whoami = useWhoami(org);
  const request = useQuery({
    queryKey: ['request', id],
    queryFn: async () =>
      (
        await answer<RequestList>(
          api.POST('/aims/rs/scim/v2/ContentRequest/.search', { body: { schemas: [SEARCH_REQUEST], filter: `id eq ${scimString(id)}`, count: 1 } }),
        )
      ).Resources[0] ?? null,
    refetchInterval: (query) => (query.state.data && MOVING.includes(query.state.data.status ?? '') ? 2_000 : false),
  });
  if (request.error) return <ErrorText error={request.error} />;
  if (request.data === null) return <NotFoundPage />;
  if (!request.data) return <Loading />;
  const data = request.data;
  const label = requestLabel(data);
  const deviceId = data.target?.device?.value;
  return (
    <Stack>
      <Title order={1}>{label.charAt(0).toUpperCase() + label.slice(1)}</Title>
      <Paper withBorder p="md" component="section" aria-labelledby="request-facts-title">
        <Stack>
          <Title order={2} size="h3" id="request-facts-title">
            Request
          </Title>
          <SimpleGrid cols={{ base: 1, sm: 2 }} component="dl" spacing="xs">
            <Fact term="Status" value={<span role="status">{STATUS_LABELS[data.status ?? ''] ?? data.status}</span>} />
            <Fact term="Type" value={data.type} />
            <Fact term="Person" value={data.wallet?.display ?? 'Nobody'} />
            <Fact term="Device" value={deviceId ? <DeviceName org={org} id={deviceId} /> : 'None'} />
            <Fact term="Policy" value={data.target?.devicePolicy ? <PolicyName reference={data.target.devicePolicy} /> : 'None'} />
            <Fact term="Requested by" value={data.requestedBy} />
            <Fact term="Approved by" value={data.approvedBy ?? 'Not yet'} />
            <Fact term="Created" value={<DateTime iso={data.meta?.created} />} />
            <Fact term="Last change" value={<DateTime iso={data.meta?.lastModified} />} />
            <Fact term="Expires" value={<DateTime iso={data.expiresAt} />} />
            {data.failure?.detail ? <Fact term="Failure" value={data.failure.detail} /> : null}
          </SimpleGrid>
          {data.status === 'approved' ? <Text>Awaiting encoding: the card client encodes the card with a sync session; this page follows it.</Text> : null}
          {['requested', 'approved', 'failed'].includes(data.status ?? '') ? <Decide org={org} request={data} me={whoami.name} /> : null}
        </Stack>
      </Paper>
      <Paper withBorder p="md" component="section" aria-labelledby="request-history-title">
        <Stack>
          <Title order={2} size="h3" id="request-history-title">
            History
          </Title>
          {can(whoami, 'audit') ? (
            <History org={org} target={data.id} noun="request" />
          ) : (
            <Text>
              Filed by {data.requestedBy}
              {data.approvedBy ? `, approved by ${data.approvedBy}` : ''}; the full history is in the audit log, which administrators read.
            </Text>
          )}
        </Stack>
      </Paper>
      <Anchor renderRoot={(props) => <Link {...props} to="/$org/requests" params={{ org }} />}>Back to the content requests</Anchor>
    </Stack>
  );
}

/** The policy's name as the request answers it (its OpenAPI description lists value only). */
function PolicyName({ reference }: { reference: { value?: string } }) {
  const { value, display } = reference as { value?: string; display?: string };
  return <span title={`Device policy ${value}`}>{display ?? value}</span>;
}

function Fact({ term, value }: { term: string; value: React.ReactNode }) {
  return (
    <div>
      <Text component="dt" size="sm" fw={700}>
        {term}
      </Text>
      <Text component="dd" ms={0}>
        {value}
      </Text>
    </div>
  );
}

/** The device by its card's CUID, a link to its page; its id for those whose role does not read devices. */
function DeviceName({ org, id }: { org: string; id: string }) {
  const whoami = useWhoami(org);
  const device = useQuery({
    queryKey: ['device', id],
    queryFn: () => answer<Device>(api.GET('/aims/rs/scim/v2/Device/{id}', { params: { path: { id } } })),
    enabled: whoami.permissions.includes('device.read'),
  });
  const cuid = device.data?.externalIds?.[0]?.CUID;
  const text = cuid ? `Card ${cuid}` : id;
  return whoami.permissions.includes('device.search') ? (
    <Anchor renderRoot={(props) => <Link {...props} to="/$org/devices/$id" params={{ org, id }} />} title={`Device ${id}`}>
      {text}
    </Anchor>
  ) : (
    <span title={`Device ${id}`}>{text}</span>
  );
}

/**
 * What the request's status allows, each asked once: approve and deny while it awaits approval
 * (approve disabled, with the four-eyes reason, for its creator), cancel until it is encoded, retry
 * once it failed. The server decides each again.
 */
function Decide({ org, request, me }: { org: string; request: ContentRequest; me: string }) {
  const queryClient = useQueryClient();
  const [asking, setAsking] = useState<RequestAction | null>(null);
  const refusal = fourEyes(request, me);
  const label = requestLabel(request);
  const decide = useMutation({
    mutationFn: (action: RequestAction) =>
      answer(api.POST(`/aims/rs/scim/v2/ContentRequest/{id}/${action}`, { params: { path: { id: request.id } }, body: {} })),
    onSuccess: async () => {
      setAsking(null);
      await queryClient.invalidateQueries({ queryKey: ['request', request.id] });
      await queryClient.invalidateQueries({ queryKey: ['requests', org] });
    },
  });
  const close = () => {
    setAsking(null);
    decide.reset();
  };
  const status = request.status ?? '';
  return (
    <>
      <Group>
        {status === 'requested' ? (
          <>
            <Tooltip label={refusal} disabled={!refusal}>
              {/* A disabled button gets no pointer events: the wrapper carries the tooltip and the reason. */}
              <span>
                <Button disabled={Boolean(refusal)} aria-label={`Approve ${label}`} onClick={() => setAsking('approve')}>
                  Approve
                </Button>
              </span>
            </Tooltip>
            <Button variant="default" aria-label={`Deny ${label}`} onClick={() => setAsking('deny')}>
              Deny
            </Button>
          </>
        ) : null}
        {status === 'requested' || status === 'approved' ? (
          <Button variant="default" aria-label={`Cancel ${label}`} onClick={() => setAsking('cancel')}>
            Cancel request
          </Button>
        ) : null}
        {status === 'failed' ? (
          <Button variant="default" aria-label={`Retry ${label}`} onClick={() => setAsking('retry')}>
            Retry
          </Button>
        ) : null}
      </Group>
      {refusal && status === 'requested' ? <Text size="sm">{refusal}</Text> : null}
      <ConfirmDecision
        label={label}
        action={asking}
        onClose={close}
        onConfirm={() => asking && decide.mutate(asking)}
        pending={decide.isPending}
        error={decide.error}
      />
    </>
  );
}
