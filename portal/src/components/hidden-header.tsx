import { Table } from '@mantine/core';
import type { ReactNode } from 'react';

/**
 * The header of a column of checkboxes or row actions: heard by screen readers, not shown, so that
 * every column of a table keeps a name.
 */
export function HiddenHeader({ children }: { children: ReactNode }) {
  return (
    <Table.Th>
      <span className="visually-hidden">{children}</span>
    </Table.Th>
  );
}
