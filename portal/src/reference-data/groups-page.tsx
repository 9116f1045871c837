import { Button, Group as Row, Modal, MultiSelect, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, answer, done } from '../api/client';
import type { AdminUser, ListResponse } from '../api/resources';
import { ErrorText } from '../components/error-text';
import { fieldErrors } from '../components/field-errors';
import { HiddenHeader } from '../components/hidden-header';
import { ListFooter } from '../components/list-footer';
import { scimString } from '../users/user-filter';
import { ConfirmDelete, RowActions, useNamedObjectList } from './named-object-list';
import { PAGE, groupsQuery, ifMatch, type Group } from './queries';

/** Groups of users (they decide who may get a device policy, and what an Operator Dependent role reaches). */
export function GroupsPage() {
  const list = useNamedObjectList({
    list: groupsQuery,
    queryKey: 'groups',
    remove: (org, group) => done(api.DELETE('/admin/v1/organizations/{org}/groups/{id}', { params: { path: { org, id: group.id } } })),
  });
  const { query: groups, total } = list;
  return (
    <Stack>
      <Row justify="space-between">
        <Title order={1}>Groups</Title>
        <Button onClick={list.add}>Create group</Button>
      </Row>
      <Text size="sm">Groups decide who may get a device policy, and which people an Operator Dependent role reaches.</Text>
      <ErrorText error={groups.error} />
      <Table striped aria-label="Groups">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Name</Table.Th>
            <Table.Th>Members</Table.Th>
            <HiddenHeader>Actions</HiddenHeader>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {groups.data?.Resources.map((group) => {
            const members = group.members ?? [];
            return (
              <Table.Tr key={group.id}>
                <Table.Td title={group.id}>{group.displayName}</Table.Td>
                <Table.Td>
                  {members.length === 0
                    ? 'None'
                    : `${members.length}: ${members
                        .slice(0, 5)
                        .map((member) => member.display ?? member.value)
                        .join(', ')}${members.length > 5 ? ', …' : ''}`}
                </Table.Td>
                <RowActions name={group.displayName} onEdit={() => list.edit(group)} onDelete={() => list.askDelete(group)} />
              </Table.Tr>
            );
          })}
        </Table.Tbody>
      </Table>
      {groups.isSuccess && total === 0 ? <Text>No group yet. Create one with Create group, then name it in a device policy.</Text> : null}
      <ListFooter loaded={Boolean(groups.data)} total={total} noun="group" pageSize={PAGE} page={list.page} onPage={list.setPage} />
      {list.editing !== undefined ? <GroupForm org={list.org} group={list.editing} onClose={list.closeEditor} onSaved={list.saved} /> : null}
      <ConfirmDelete
        list={list}
        name={(group) => group.displayName}
        action="Delete group"
        consequence="Its members leave it, and device policies that name it no longer do. This cannot be undone."
      />
    </Stack>
  );
}

/** Create (group null) or edit a group: its name and its members, found by user name as one types. */
function GroupForm({ org, group, onClose, onSaved }: { org: string; group: Group | null; onClose: () => void; onSaved: () => void }) {
  const [displayName, setDisplayName] = useState(group?.displayName ?? '');
  const [members, setMembers] = useState<string[]>((group?.members ?? []).map((member) => member.value ?? '').filter(Boolean));
  const [known, setKnown] = useState(() => new Map((group?.members ?? []).map((member) => [member.value ?? '', member.display ?? member.value ?? ''])));
  const [search, setSearch] = useState('');
  const [debounced] = useDebouncedValue(search.trim(), 250);
  const found = useQuery({
    queryKey: ['users', org, 'search', debounced],
    queryFn: () =>
      answer<ListResponse<AdminUser>>(
        api.GET('/admin/v1/organizations/{org}/users', {
          params: { path: { org }, query: { count: 20, ...(debounced ? { filter: `userName sw ${scimString(debounced)}` } : {}) } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  const options = new Map(known);
  for (const user of found.data?.Resources ?? []) options.set(user.id, user.userName);
  const save = useMutation({
    mutationFn: () =>
      group
        ? answer(
            api.PATCH('/admin/v1/organizations/{org}/groups/{id}', {
              params: { path: { org, id: group.id } },
              body: { displayName, members },
              headers: ifMatch(group.meta?.version),
            }),
          )
        : answer(api.POST('/admin/v1/organizations/{org}/groups', { params: { path: { org } }, body: { displayName, members } })),
    onSuccess: onSaved,
  });
  const errors = fieldErrors(save.error, ['displayName', 'members'] as const, 'displayName');
  return (
    <Modal opened onClose={onClose} title={group ? `Edit ${group.displayName}` : 'Create a group'} size="lg">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          save.mutate();
        }}
      >
        <Stack>
          <TextInput
            label="Name"
            description="Unique in the organization; device policies and roles name the group by it"
            required
            value={displayName}
            onChange={(event) => setDisplayName(event.currentTarget.value)}
            error={errors.at.displayName}
            data-autofocus
          />
          <MultiSelect
            label="Members"
            description="Type the beginning of a user name to find people; those left out leave the group"
            data={[...options].map(([value, label]) => ({ value, label }))}
            value={members}
            onChange={(ids) => {
              setKnown((previous) => new Map([...previous, ...ids.filter((id) => options.has(id)).map((id) => [id, options.get(id)!] as const)]));
              setMembers(ids);
            }}
            searchValue={search}
            onSearchChange={setSearch}
            filter={({ options: all }) => all}
            searchable
            clearable
            nothingFoundMessage={debounced ? 'No user name starts so' : undefined}
            error={errors.at.members}
          />
          <ErrorText error={errors.rest ? { message: errors.rest } : null} />
          <Row justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={save.isPending}>
              {group ? 'Save' : 'Create'}
            </Button>
          </Row>
        </Stack>
      </form>
    </Modal>
  );
}
