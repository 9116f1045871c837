import { Table, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { api, answer } from '../api/client';
import type { AuditEvent, ListResponse } from '../api/resources';
import { DateTime } from '../components/date-time';
import { ErrorText } from '../components/error-text';
import { NameLink, useAuditNames } from './names';

/**
 * What happened to an object, newest first: the audit events whose target it is (a device, a content
 * request), each with its actor by name. Administrators read the audit log; the caller shows this
 * only to them (`can(whoami, 'audit')`), so nobody else's browser asks and is refused.
 */
export function History({ org, target, noun }: { org: string; target: string; noun: string }) {
  const events = useQuery({
    queryKey: ['audit', org, 'target', target],
    queryFn: () =>
      answer<ListResponse<AuditEvent>>(
        api.GET('/admin/v1/organizations/{org}/audit-events', { params: { path: { org }, query: { target, startIndex: 1, count: 50 } } }),
      ),
  });
  const names = useAuditNames(org, events.data?.Resources ?? []);
  return (
    <>
      <ErrorText error={events.error} />
      <Table aria-label="History">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Time</Table.Th>
            <Table.Th>Action</Table.Th>
            <Table.Th>By</Table.Th>
            <Table.Th>Outcome</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {events.data?.Resources.map((event) => (
            <Table.Tr key={event.id}>
              <Table.Td>
                <DateTime iso={event.occurred} />
              </Table.Td>
              <Table.Td>{event.action}</Table.Td>
              <Table.Td>
                <NameLink org={org} named={names.actor(event)} />
              </Table.Td>
              <Table.Td>{event.outcome}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {events.isSuccess && events.data.totalResults === 0 ? <Text>Nothing recorded for this {noun} yet.</Text> : null}
    </>
  );
}
