import { Button, Group, Modal, SimpleGrid, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { keepPreviousData, queryOptions, useQuery } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { api, answer } from '../api/client';
import type { AuditEvent, ListResponse } from '../api/resources';
import { ListFooter } from '../components/list-footer';
import { HiddenHeader } from '../components/hidden-header';
import { ErrorText } from '../components/error-text';
import { DateTime } from '../components/date-time';
import { NameLink, useAuditNames, type Named } from './names';

const PAGE = 50;

interface Filters {
  /** Free text found in the actor, the target or the details (the API's `q`). */
  q: string;
  from: string;
  to: string;
  actor: string;
  /** An action of the catalogue, or a group's prefix such as `device.*`. */
  action: string | null;
  target: string;
  outcome: string | null;
}

const EMPTY: Filters = { q: '', from: '', to: '', actor: '', action: null, target: '', outcome: null };

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
    ...(filters.q.trim() ? { q: filters.q.trim() } : {}),
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
  const names = useAuditNames(org, events.data?.Resources ?? []);
  const describe = (action: string) => actions.data?.Resources.find((a) => a.action === action)?.description ?? action;
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
          <TextInput
            label="Search"
            description="Words of the actor, the target or the details"
            type="search"
            value={draft.q}
            onChange={set('q')}
            minLength={2}
            maxLength={100}
            error={draft.q.trim().length === 1 ? 'Type at least 2 characters' : undefined}
          />
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
          <Button type="submit" disabled={draft.q.trim().length === 1}>
            Apply filters
          </Button>
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
              <Table.Td title={describe(event.action)}>{event.action}</Table.Td>
              <Table.Td>
                <NameLink org={org} named={names.actor(event)} />
              </Table.Td>
              <Table.Td>
                <NameLink org={org} named={names.target(event)} />
              </Table.Td>
              <Table.Td>{event.outcome}</Table.Td>
              <Table.Td>
                <Button
                  size="xs"
                  variant="default"
                  aria-label={`Detail of ${event.action} at ${new Date(event.occurred).toLocaleString()}`}
                  onClick={() => setShown(event)}
                >
                  Detail
                </Button>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {events.isSuccess && total === 0 ? <Text>No event matches these filters. Widen the dates or clear a filter.</Text> : null}
      <ListFooter loaded={Boolean(events.data)} total={total} noun="event" pageSize={PAGE} page={page} onPage={setPage} />
      <Modal opened={shown !== null} onClose={() => setShown(null)} title={shown ? `Audit event: ${describe(shown.action)}` : 'Audit event'} size="lg">
        {shown ? <EventDetail org={org} event={shown} actor={names.actor(shown)} target={names.target(shown)} /> : null}
      </Modal>
    </Stack>
  );
}

/** An event as a person reads it: every field labelled, its details a definition list (nested values as lists too, never JSON). */
function EventDetail({ org, event, actor, target }: { org: string; event: AuditEvent; actor: Named; target: Named | null }) {
  return (
    <Stack>
      <SimpleGrid cols={{ base: 1, sm: 2 }} component="dl" spacing="xs">
        <Fact term="Time" value={<DateTime iso={event.occurred} />} />
        <Fact term="Action" value={`${event.action} (code ${event.code})`} />
        <Fact term="Outcome" value={event.outcome === 'success' ? 'Success' : 'Failure'} />
        <Fact term="Actor" value={<NameLink org={org} named={actor} />} />
        <Fact term="Target" value={<NameLink org={org} named={target} />} />
        <Fact term="Source address" value={event.sourceAddress ?? 'not recorded'} />
        <Fact term="Correlation id" value={event.correlationId ? <code>{event.correlationId}</code> : 'none'} />
        <Fact term="Event id" value={<code>{event.id}</code>} />
      </SimpleGrid>
      <Title order={3} size="h5">
        Details
      </Title>
      {event.details && Object.keys(event.details).length > 0 ? <DetailList value={event.details} /> : <Text size="sm">No details recorded.</Text>}
    </Stack>
  );
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

/** `revokedTokens` -> "Revoked tokens": a detail's name as words. */
const words = (name: string) => {
  const spaced = name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replaceAll('_', ' ');
  return spaced.charAt(0).toUpperCase() + spaced.slice(1).toLowerCase();
};
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** A detail value: an object as a nested definition list, a list as a list, an instant as the portal's date, anything else as text. */
function DetailValue({ value }: { value: unknown }) {
  if (value === null || value === undefined) return <>none</>;
  if (Array.isArray(value))
    return value.length === 0 ? (
      <>none</>
    ) : (
      <ul style={{ margin: 0, paddingInlineStart: '1.2em' }}>
        {value.map((item, index) => (
          <li key={index}>
            <DetailValue value={item} />
          </li>
        ))}
      </ul>
    );
  if (typeof value === 'object') return <DetailList value={value as Record<string, unknown>} />;
  if (typeof value === 'boolean') return <>{value ? 'yes' : 'no'}</>;
  if (typeof value === 'string' && ISO_INSTANT.test(value)) return <DateTime iso={value} />;
  return <>{String(value)}</>;
}

function DetailList({ value }: { value: Record<string, unknown> }) {
  return (
    <dl style={{ margin: 0 }}>
      {Object.entries(value).map(([name, item]) => (
        <div key={name} style={{ display: 'flex', gap: '0.5em', flexWrap: 'wrap' }}>
          <Text component="dt" size="sm" fw={700} title={name}>
            {words(name)}
          </Text>
          <Text component="dd" size="sm" ms={0}>
            <DetailValue value={item} />
          </Text>
        </div>
      ))}
    </dl>
  );
}
