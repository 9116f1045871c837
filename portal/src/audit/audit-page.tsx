import { Button, Code, Group, Modal, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { keepPreviousData, queryOptions, useQuery } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { api, answer } from '../api/client';
import type { AuditEvent, ListResponse } from '../api/resources';
import { ListFooter } from '../components/list-footer';
import { HiddenHeader } from '../components/hidden-header';
import { ErrorText } from '../components/error-text';
import { DateTime } from '../components/date-time';

const PAGE = 50;

interface Filters {
  from: string;
  to: string;
  actor: string;
  /** An action of the catalogue, or a group's prefix such as `device.*`. */
  action: string | null;
  target: string;
  outcome: string | null;
}

const EMPTY: Filters = { from: '', to: '', actor: '', action: null, target: '', outcome: null };

interface AuditAction {
  action: string;
  code: number;
  group: string;
  description: string;
}

/** The catalogue of audit actions (GET /admin/v1/audit-actions): the same for every organization, read once. */
const actionsQuery = () =>
  queryOptions({
    queryKey: ['audit-actions'],
    queryFn: () => answer<ListResponse<AuditAction>>(api.GET('/admin/v1/audit-actions')),
    staleTime: Infinity,
  });

/** The catalogue as the action picker's groups: each group first offers all of it (`device.*`), then each action by its meaning. */
function actionOptions(actions: AuditAction[]) {
  const groups = new Map<string, AuditAction[]>();
  for (const action of actions) groups.set(action.group, [...(groups.get(action.group) ?? []), action]);
  return [...groups].map(([group, members]) => ({
    group: group.replaceAll('_', ' '),
    items: [
      { value: `${group}.*`, label: `Any ${group.replaceAll('_', ' ')} action` },
      ...members.map((member) => ({ value: member.action, label: `${member.description} (${member.action}, ${member.code})` })),
    ],
  }));
}

/** The filters as the audit API's query (GET /admin/v1/organizations/{org}/audit-events). */
function query(filters: Filters) {
  return {
    ...(filters.from ? { from: new Date(filters.from).toISOString() } : {}),
    ...(filters.to ? { to: new Date(filters.to).toISOString() } : {}),
    ...(filters.actor.trim() ? { actor: filters.actor.trim() } : {}),
    ...(filters.action ? { action: filters.action } : {}),
    ...(filters.target.trim() ? { target: filters.target.trim() } : {}),
    ...(filters.outcome ? { outcome: filters.outcome as 'success' | 'failure' } : {}),
  };
}

function fetchPage(org: string, filters: Filters, startIndex: number, count: number) {
  return answer<ListResponse<AuditEvent>>(
    api.GET('/admin/v1/organizations/{org}/audit-events', { params: { path: { org }, query: { ...query(filters), startIndex, count } } }),
  );
}

const csvCell = (value: unknown) => {
  const text = value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
  // A leading = + - @ would be a formula to a spreadsheet (CSV injection): quoted and prefixed.
  const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
  return `"${safe.replaceAll('"', '""')}"`;
};

/** Every event the filters select, page by page, as CSV (RFC 4180). */
async function exportCsv(org: string, filters: Filters): Promise<void> {
  const columns: Array<keyof AuditEvent> = ['occurred', 'code', 'action', 'outcome', 'actor', 'target', 'sourceAddress', 'correlationId', 'details'];
  const lines = [columns.join(',')];
  for (let start = 1; ; start += 1000) {
    const page = await fetchPage(org, filters, start, 1000);
    for (const event of page.Resources) lines.push(columns.map((column) => csvCell(event[column])).join(','));
    if (page.Resources.length === 0 || start + page.Resources.length > page.totalResults) break;
  }
  const url = URL.createObjectURL(new Blob([`${lines.join('\r\n')}\r\n`], { type: 'text/csv' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = `audit-events-${org}.csv`;
  link.click();
  URL.revokeObjectURL(url);
}

/** The organization's audit events: filters, paging, an event's detail, CSV export of the filtered list. */
export function AuditPage() {
  const { org } = useParams({ from: '/$org/audit' });
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [filters, setFilters] = useState<Filters>(EMPTY);
  const [page, setPage] = useState(1);
  const [shown, setShown] = useState<AuditEvent | null>(null);
  const [exporting, setExporting] = useState(false);
  const events = useQuery({
    queryKey: ['audit', org, filters, page],
    queryFn: () => fetchPage(org, filters, (page - 1) * PAGE + 1, PAGE),
    placeholderData: keepPreviousData,
  });
  const actions = useQuery(actionsQuery());
  const set = (field: keyof Filters) => (event: React.ChangeEvent<HTMLInputElement>) => setDraft({ ...draft, [field]: event.currentTarget.value });
  const total = events.data?.totalResults ?? 0;
  return (
    <Stack>
      <Title order={1}>Audit events</Title>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          setFilters(draft);
          setPage(1);
        }}
      >
        <Group align="flex-end">
          <TextInput label="From" type="datetime-local" value={draft.from} onChange={set('from')} />
          <TextInput label="To" type="datetime-local" value={draft.to} onChange={set('to')} />
          <TextInput label="Actor" value={draft.actor} onChange={set('actor')} />
          <Select
            label="Action"
            placeholder="Any action"
            data={actionOptions(actions.data?.Resources ?? [])}
            value={draft.action}
            onChange={(action) => setDraft({ ...draft, action })}
            searchable
            clearable
            nothingFoundMessage="No action of the catalogue matches"
            w={320}
          />
          <TextInput label="Target" value={draft.target} onChange={set('target')} />
          <Select
            label="Outcome"
            data={[
              { value: 'success', label: 'Success' },
              { value: 'failure', label: 'Failure' },
            ]}
            value={draft.outcome}
            onChange={(outcome) => setDraft({ ...draft, outcome })}
            clearable
            w={140}
          />
          <Button type="submit">Apply filters</Button>
          <Button
            variant="default"
            loading={exporting}
            onClick={async () => {
              setExporting(true);
              try {
                await exportCsv(org, filters);
              } finally {
                setExporting(false);
              }
            }}
          >
            Export CSV
          </Button>
        </Group>
      </form>
      <ErrorText error={events.error ?? actions.error} />
      <Table striped aria-label="Audit events">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Time</Table.Th>
            <Table.Th>Code</Table.Th>
            <Table.Th>Action</Table.Th>
            <Table.Th>Actor</Table.Th>
            <Table.Th>Target</Table.Th>
            <Table.Th>Outcome</Table.Th>
            <HiddenHeader>Detail</HiddenHeader>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {events.data?.Resources.map((event) => (
            <Table.Tr key={event.id}>
              <Table.Td>
                <DateTime iso={event.occurred} />
              </Table.Td>
              <Table.Td>{event.code}</Table.Td>
              <Table.Td>{event.action}</Table.Td>
              <Table.Td>{event.actor}</Table.Td>
              <Table.Td>{event.target}</Table.Td>
              <Table.Td>{event.outcome}</Table.Td>
              <Table.Td>
                <Button size="xs" variant="default" aria-label={`Detail of ${event.action} at ${event.occurred}`} onClick={() => setShown(event)}>
                  Detail
                </Button>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {events.isSuccess && total === 0 ? <Text>No event matches these filters. Widen the dates or clear a filter.</Text> : null}
      <ListFooter loaded={Boolean(events.data)} total={total} noun="event" pageSize={PAGE} page={page} onPage={setPage} />
      <Modal opened={shown !== null} onClose={() => setShown(null)} title="Audit event" size="lg">
        {shown ? <Code block>{JSON.stringify(shown, null, 2)}</Code> : null}
      </Modal>
    </Stack>
  );
}
