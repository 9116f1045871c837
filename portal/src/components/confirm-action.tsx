import { Button, Group, Modal, Stack } from '@mantine/core';
import type { ReactNode } from 'react';
import { ErrorText } from './error-text';

/**
 * A significant action asked once, in a dialog whose title names what it acts on (STYLE, "The
 * portal"); the body says what will happen. Mantine's Modal traps focus and closes with Escape.
 */
export function ConfirmAction({
  opened,
  onClose,
  title,
  children,
  action,
  onConfirm,
  pending,
  error,
  danger = false,
}: {
  opened: boolean;
  onClose: () => void;
  title: string;
  children: ReactNode;
  action: string;
  onConfirm: () => void;
  pending: boolean;
  error?: { message: string } | null;
  danger?: boolean;
}) {
  return (
    <Modal opened={opened} onClose={onClose} title={title}>
      <Stack>
        {children}
        <ErrorText error={error} />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button color={danger ? 'red' : undefined} onClick={onConfirm} loading={pending} data-autofocus>
            {action}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
