import { Paper, Stack, Text } from '@mantine/core';
import type { ReactNode } from 'react';

/**
 * Something the person must notice (a secret to copy now, a session about to end): bordered, in the
 * theme's own text colours, which keep their contrast in both themes (coloured alerts did not).
 */
export function Notice({ title, children, role }: { title: string; children: ReactNode; role?: 'status' | 'alert' }) {
  return (
    <Paper withBorder p="sm" role={role} style={{ borderWidth: 2, borderColor: 'var(--mantine-color-orange-filled)' }}>
      <Stack gap={4}>
        <Text fw={700}>{title}</Text>
        {children}
      </Stack>
    </Paper>
  );
}
