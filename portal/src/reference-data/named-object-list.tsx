import { Button, Group, Table } from '@mantine/core';
import { useMutation, useQuery, useQueryClient, type QueryKey, type UseMutationResult, type UseQueryOptions } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { ConfirmByTyping } from '../components/confirm-by-typing';

interface Paged {
  totalResults?: number;
  Resources: { id: string }[];
}

/**
 * The state of a reference-data list page (device policies, groups, printers): the page shown, the
 * object being edited ('new' for the add dialog) or deleted, and the delete itself. Saving or
 * deleting refetches every page of the list, since either can shift what each page holds.
 */
export function useNamedObjectList<L extends Paged, K extends QueryKey, T extends L['Resources'][number] = L['Resources'][number]>({
  list,
  queryKey,
  remove,
}: {
  /** The list's query for one page. */
  list: (org: string, page: number) => UseQueryOptions<L, Error, L, K>;
  /** The first element of the list's query key, whose pages all refetch after a change. */
  queryKey: string;
  /** Deletes one object through the admin API. */
  remove: (org: string, item: T) => Promise<void>;
}) {
  const { org } = useParams({ strict: false }) as { org: string };
  const [page, setPage] = useState(1);
  const [editing, setEditing] = useState<T | 'new' | null>(null);
  const [deleting, setDeleting] = useState<T | null>(null);
  const queryClient = useQueryClient();
  const query = useQuery(list(org, page));
  const refresh = () => queryClient.invalidateQueries({ queryKey: [queryKey, org] });
  const deletion = useMutation({
    mutationFn: (item: T) => remove(org, item),
    onSuccess: async () => {
      setDeleting(null);
      await refresh();
    },
  });
  return {
    org,
    page,
    setPage,
    query,
    total: query.data?.totalResults ?? 0,
    /** The object the edit dialog is open on: null for a new one, undefined when it is closed. */
    editing: editing === 'new' ? null : (editing ?? undefined),
    add: () => setEditing('new'),
    edit: (item: T) => setEditing(item),
    closeEditor: () => setEditing(null),
    saved: () => {
      setEditing(null);
      void refresh();
    },
    deleting,
    askDelete: (item: T) => setDeleting(item),
    deletion,
    cancelDelete: () => {
      deletion.reset();
      setDeleting(null);
    },
  };
}

/** A row's Edit and Delete buttons, each named after the object it acts on. */
export function RowActions({ name, onEdit, onDelete }: { name: string | undefined; onEdit: () => void; onDelete: () => void }) {
  return (
    <Table.Td>
      <Group gap="xs" wrap="nowrap">
        <Button size="xs" variant="default" aria-label={`Edit ${name}`} onClick={onEdit}>
          Edit
        </Button>
        <Button size="xs" variant="default" aria-label={`Delete ${name}`} onClick={onDelete}>
          Delete
        </Button>
      </Group>
    </Table.Td>
  );
}

/** The delete confirmation of a list page, asked by typing the object's name; nothing while no delete is asked. */
export function ConfirmDelete<T extends { id: string }>({
  list,
  name,
  action,
  consequence,
}: {
  list: { deleting: T | null; deletion: UseMutationResult<void, Error, T>; cancelDelete: () => void };
  name: (item: T) => string | undefined;
  action: string;
  consequence: string;
}) {
  const { deleting, deletion, cancelDelete } = list;
  if (!deleting) return null;
  return (
    <ConfirmByTyping
      opened
      onClose={cancelDelete}
      title={`Delete ${name(deleting)}`}
      name={name(deleting) ?? ''}
      action={action}
      consequence={consequence}
      onConfirm={() => deletion.mutate(deleting)}
      pending={deletion.isPending}
      error={deletion.error?.message}
    />
  );
}
