import { Group, Pagination, Text } from '@mantine/core';

/**
 * The foot of every paged list: how many matched (announced as a status, once the answer is in)
 * and the pages, each control named for screen readers. `noun` is the singular, e.g. "user".
 */
export function ListFooter({
  loaded,
  total,
  noun,
  pageSize,
  page,
  onPage,
}: {
  loaded: boolean;
  total: number;
  noun: string;
  pageSize: number;
  page: number;
  onPage: (page: number) => void;
}) {
  return (
    <Group justify="space-between">
      <Text size="sm" role="status">
        {loaded ? `${total} ${total === 1 ? noun : `${noun}s`}` : ''}
      </Text>
      <Pagination
        total={Math.max(1, Math.ceil(total / pageSize))}
        value={page}
        onChange={onPage}
        getControlProps={(control) => ({ 'aria-label': `${control} page` })}
      />
    </Group>
  );
}
