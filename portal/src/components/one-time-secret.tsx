import { Button, Code, CopyButton, Group, Stack, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { Notice } from './notice';
import { DateTime } from './date-time';

/**
 * A secret value shown once: it lives only in the dialog that shows it (never in a query cache or a
 * store), with a copy button; the service never answers it again. `children` says how the secret is used
 * (e.g. how a receiver verifies a signature); a secret without `expiresAt` does not expire.
 */
export function OneTimeSecret({ label, value, expiresAt, children }: { label: string; value: string; expiresAt?: string; children?: ReactNode }) {
  return (
    <Stack gap="xs">
      <Notice title="Copy the secret now">
        <Text size="sm">It is shown only this once. Store it where the client reads its configuration.</Text>
        {children}
      </Notice>
      <Text size="sm" fw={500} id="one-time-secret-label">
        {label}
      </Text>
      <Code block aria-labelledby="one-time-secret-label">
        {value}
      </Code>
      <Group justify="space-between">
        <Text size="sm">
          {expiresAt ? (
            <>
              Expires <DateTime iso={expiresAt} />
            </>
          ) : (
            'Does not expire'
          )}
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
