import { Stack, Text, Title } from '@mantine/core';

export function UsersPage() {
  return (
    <Stack>
      <Title order={1}>Users and operators</Title>
      <Text>This screen is not built yet; the API serves it (see /api-docs).</Text>
    </Stack>
  );
}
