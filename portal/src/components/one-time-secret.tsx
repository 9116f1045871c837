import { Button, Code, CopyButton, Group, Stack, Text } from '@mantine/core';
import { Notice } from './notice';
import { DateTime } from './date-time';

/**
 * A secret value shown once: it lives only in the dialog that shows it (never in a query cache or a
 * store), with a copy button; the service never answers it again.
 */
export function OneTimeSecret({ label, value, expiresAt }: { label: string; value: string; expiresAt: string }) {
  return (
    <Stack gap="xs">
      <Notice title="Copy the secret now">
        <Text size="sm">It is shown only this once. Store it where the client reads its configuration.</Text>
      </Notice>
      <Text size="sm" fw={500} id="one-time-secret-label">
        {label}
      </Text>
      <Code block aria-labelledby="one-time-secret-label">
        {value}
      </Code>
      <Group justify="space-between">
        <Text size="sm">
          Expires <DateTime iso={expiresAt} />
        </Text>
        <CopyButton value={value}>
          {({ copied, copy }) => (
            <Button variant={copied ? 'filled' : 'default'} onClick={copy}>
              {copied ? 'Copied' : 'Copy secret'}
            </Button>
          )}
        </CopyButton>
      </Group>
    </Stack>
  );
}
