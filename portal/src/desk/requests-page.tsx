import { Anchor, Button, Checkbox, Group, Modal, Select, Stack, Table, Text, Title, Tooltip } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { ApiError, api, answer } from '../api/client';
import type { paths } from '../api/schema';
import { useWhoami } from '../session/whoami';
import { HiddenHeader } from '../components/hidden-header';
import { ErrorText } from '../components/error-text';
import { DateTime } from '../components/date-time';

type RequestList = paths['/aims/rs/scim/v2/ContentRequest/.search']['post']['responses'][200]['content']['application/scim+json'];
export type ContentRequest = RequestList['Resources'][number];

/** Each status as the desk says it; "approved" is what the card client still has to encode. */
export const STATUS_LABELS: Record<string, string> = {
  requested: 'Awaiting approval',
  approved: 'Awaiting encoding',
  denied: 'Denied',
  cancelled: 'Cancelled',
  completed: 'Completed',
  failed: 'Failed',
  expired: 'Expired',
};

/** A request as people name it: its type and whose it is. */
export const requestLabel = (request: ContentRequest) => `${request.type} for ${request.wallet?.display ?? request.id}`;

/** Why this person may not approve the request (four eyes), or undefined. The server decides anyway. */
export function fourEyes(request: ContentRequest, me: string): string | undefined {
  if (request.requestedBy === me) return 'You created this request: another operator approves it (four eyes).';
  if (request.wallet?.display === me) return 'The request is for your own wallet: another operator approves it (four eyes).';
  return undefined;
}

/**
 * The content-request queue: requests waiting for approval, approved or denied here one by one or
 * several at once, each row's result shown. The creator of a request sees its approve button
 * disabled with the reason; the server refuses them too (CREDENTIAL-MANAGEMENT four eyes).
 */
export function RequestsPage() {
  const { org } = useParams({ from: '/$org/requests' });
  const whoami = useWhoami(org);
  const queryClient = useQueryClient();
  const [status, setStatus] = useState<string | null>('requested');
  const [selected, setSelected] = useState<string[]>([]);
  /** What each action did, by request: kept after the list changes (an approved request leaves the "requested" list). */
  const [results, setResults] = useState<Record<string, { label: string; outcome: string }>>({});
  const [working, setWorking] = useState(false);
  const requests = useQuery({
    queryKey: ['requests', org, status],
    queryFn: () =>
      answer<RequestList>(
        api.POST('/aims/rs/scim/v2/ContentRequest/.search', {
          body: {
            schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'],
            ...(status ? { filter: `status eq ${JSON.stringify(status)}` } : {}),
            sortBy: 'meta.created',
            sortOrder: 'descending',
            count: 200,
          },
        }),
      ),
  });
  const labelOf = requestLabel;
  const [asking, setAsking] = useState<{ action: 'approve' | 'deny'; ids: string[] } | null>(null);
  const act = async (action: 'approve' | 'deny', ids: string[]) => {
    setWorking(true);
    const outcome: Record<string, { label: string; outcome: string }> = {};
    for (const id of ids) {
      const request = requests.data?.Resources.find((r) => r.id === id);
      const label = request ? labelOf(request) : id;
      try {
        await answer(api.POST(`/aims/rs/scim/v2/ContentRequest/{id}/${action}`, { params: { path: { id } }, body: {} }));
        outcome[id] = { label, outcome: action === 'approve' ? 'approved' : 'denied' };
      } catch (error) {
        outcome[id] = { label, outcome: `refused: ${error instanceof ApiError ? error.message : String(error)}` };
      }
    }
    setResults((previous) => ({ ...previous, ...outcome }));
    setSelected([]);
    setWorking(false);
    await queryClient.invalidateQueries({ queryKey: ['requests', org] });
  };
  const rows = requests.data?.Resources ?? [];
  return (
    <Stack>
      <Title order={1}>Content requests</Title>
      <Group align="flex-end">
        <Select
          label="Status"
          placeholder="Any status"
          data={Object.entries(STATUS_LABELS).map(([value, label]) => ({ value, label }))}
          value={status}
          onChange={setStatus}
          clearable
          w={220}
        />
        <Button disabled={selected.length === 0} loading={working} onClick={() => setAsking({ action: 'approve', ids: selected })}>
          Approve selected ({selected.length})
        </Button>
        <Button variant="default" disabled={selected.length === 0} loading={working} onClick={() => setAsking({ action: 'deny', ids: selected })}>
          Deny selected
        </Button>
      </Group>
      {Object.keys(results).length > 0 ? (
        <Stack gap={2} role="status" aria-label="Results">
          {Object.entries(results).map(([id, result]) => (
            <Text key={id} size="sm">
              {result.label}: {result.outcome}
            </Text>
          ))}
        </Stack>
      ) : null}
      <ErrorText error={requests.error} />
      <Table aria-label="Content requests">
        <Table.Thead>
          <Table.Tr>
            <HiddenHeader>Select</HiddenHeader>
            <Table.Th>Type</Table.Th>
            <Table.Th>Wallet</Table.Th>
            <Table.Th>Requested by</Table.Th>
            <Table.Th>Created</Table.Th>
            <Table.Th>Status</Table.Th>
            <HiddenHeader>Actions</HiddenHeader>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {rows.map((request) => {
            const refusal = fourEyes(request, whoami.name);
            const label = labelOf(request);
            return (
              <Table.Tr key={request.id}>
                <Table.Td>
                  <Checkbox
                    aria-label={`Select ${label}`}
                    checked={selected.includes(request.id)}
                    disabled={request.status !== 'requested'}
                    onChange={(event) => setSelected(event.currentTarget.checked ? [...selected, request.id] : selected.filter((id) => id !== request.id))}
                  />
                </Table.Td>
                <Table.Td>
                  <Anchor renderRoot={(props) => <Link {...props} to="/$org/requests/$id" params={{ org, id: request.id }} />}>{request.type}</Anchor>
                </Table.Td>
                <Table.Td>{request.wallet?.display}</Table.Td>
                <Table.Td>{request.requestedBy}</Table.Td>
                <Table.Td>
                  <DateTime iso={request.meta?.created} />
                </Table.Td>
                <Table.Td>{STATUS_LABELS[request.status ?? ''] ?? request.status}</Table.Td>
                <Table.Td>
                  {request.status === 'requested' ? (
                    <Group gap="xs" wrap="nowrap">
                      <Tooltip label={refusal} disabled={!refusal}>
                        {/* A disabled button gets no pointer events: the wrapper carries the tooltip and the reason. */}
                        <span>
                          <Button
                            size="xs"
                            disabled={Boolean(refusal) || working}
                            aria-label={`Approve ${label}`}
                            onClick={() => setAsking({ action: 'approve', ids: [request.id] })}
                          >
                            Approve
                          </Button>
                        </span>
                      </Tooltip>
                      <Button
                        size="xs"
                        variant="default"
                        disabled={working}
                        aria-label={`Deny ${label}`}
                        onClick={() => setAsking({ action: 'deny', ids: [request.id] })}
                      >
                        Deny
                      </Button>
                    </Group>
                  ) : null}
                  {refusal && request.status === 'requested' ? <Text size="xs">{refusal}</Text> : null}
                </Table.Td>
              </Table.Tr>
            );
          })}
        </Table.Tbody>
      </Table>
      <ConfirmDecision
        label={
          asking
            ? asking.ids.length === 1
              ? labelOf(rows.find((r) => r.id === asking.ids[0]) ?? ({ id: asking.ids[0] } as ContentRequest))
              : `${asking.ids.length} requests`
            : ''
        }
        action={asking?.action ?? null}
        onClose={() => setAsking(null)}
        onConfirm={() => {
          if (!asking) return;
          const { action, ids } = asking;
          setAsking(null);
          void act(action, ids);
        }}
        pending={working}
      />
      {requests.isSuccess && rows.length === 0 ? (
        <Text>
          {status
            ? `No request is ${STATUS_LABELS[status]?.toLowerCase() ?? status}. Choose another status, or clear it to see every request.`
            : 'No content request yet. Issue a device from the desk to file one.'}
        </Text>
      ) : null}
    </Stack>
  );
}

/** The actions a content request takes (CREDENTIAL-MANAGEMENT.md, content requests), as the desk names and explains them. */
export const REQUEST_ACTIONS = {
  approve: {
    verb: 'Approve',
    consequence: 'Approving lets the card client encode it. You are the second pair of eyes: check the person, the device and the policy.',
  },
  deny: { verb: 'Deny', consequence: 'Denying ends it: nothing is issued, and a new request is needed.' },
  cancel: { verb: 'Cancel', consequence: 'Cancelling ends it before the card is encoded: the card goes back to stock, and a new request is needed.' },
  retry: { verb: 'Retry', consequence: 'Retrying lets the card client encode it again, as approved.' },
} as const;
export type RequestAction = keyof typeof REQUEST_ACTIONS;

/** A decision on a content request, asked once in a dialog that names what it decides (one request, or several). */
export function ConfirmDecision({
  label,
  action,
  onClose,
  onConfirm,
  pending,
  error,
}: {
  label: string;
  action: RequestAction | null;
  onClose: () => void;
  onConfirm: () => void;
  pending: boolean;
  error?: { message: string } | null;
}) {
  const { verb, consequence } = REQUEST_ACTIONS[action ?? 'approve'];
  return (
    <Modal opened={action !== null} onClose={onClose} title={`${verb} ${label}?`}>
      <Stack>
        <Text size="sm">{consequence}</Text>
        <ErrorText error={error} />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Back
          </Button>
          <Button color={action === 'deny' || action === 'cancel' ? 'red' : undefined} loading={pending} onClick={onConfirm} data-autofocus>
            {verb}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
