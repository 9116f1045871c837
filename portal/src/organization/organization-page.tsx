import { Stack, Text, Title } from '@mantine/core';

export function OrganizationPage() {
  return (
    <Stack>
      <Title order={1}>Organization</Title>
      <Text>This screen is not built yet; the API serves it (see /api-docs).</Text>
    </Stack>
  );
}
