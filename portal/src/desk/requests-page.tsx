import { Stack, Text, Title } from '@mantine/core';

export function RequestsPage() {
  return (
    <Stack>
      <Title order={1}>Content requests</Title>
      <Text>This screen is not built yet; the API serves it (see /api-docs).</Text>
    </Stack>
  );
}
