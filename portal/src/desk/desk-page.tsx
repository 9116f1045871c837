import { Stack, Text, Title } from '@mantine/core';

export function DeskPage() {
  return (
    <Stack>
      <Title order={1}>Operators' desk</Title>
      <Text>This screen is not built yet; the API serves it (see /api-docs).</Text>
    </Stack>
  );
}
