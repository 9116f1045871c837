import { Button, Group, Modal, Stack, Text, TextInput } from '@mantine/core';
import { useState } from 'react';

/**
 * A destructive action confirmed by typing the name of what it destroys (a deletion cannot be
 * undone). Mantine's Modal traps focus and closes with Escape.
 */
export function ConfirmByTyping({
  opened,
  onClose,
  title,
  name,
  action,
  consequence,
  onConfirm,
  pending,
  error,
}: {
  opened: boolean;
  onClose: () => void;
  title: string;
  name: string;
  action: string;
  consequence: string;
  onConfirm: () => void;
  pending: boolean;
  error?: string;
}) {
  const [typed, setTyped] = useState('');
  const close = () => {
    setTyped('');
    onClose();
  };
  return (
    <Modal opened={opened} onClose={close} title={title}>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (typed === name) onConfirm();
        }}
      >
        <Stack>
          <Text size="sm">{consequence}</Text>
          <TextInput
            label={`Type ${name} to confirm`}
            value={typed}
            onChange={(event) => setTyped(event.currentTarget.value)}
            autoComplete="off"
            data-autofocus
            error={error}
          />
          <Group justify="flex-end">
            <Button variant="default" onClick={close}>
              Cancel
            </Button>
            <Button type="submit" color="red" disabled={typed !== name} loading={pending}>
              {action}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
