import { Box, Group, Paper, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useSuspenseQuery } from '@tanstack/react-query';
import { api, answer } from '../api/client';
import type { paths } from '../api/schema';

type Stats = paths['/aims/rs/scim/v2/Stats']['get']['responses'][200]['content']['application/scim+json'];

/**
 * One count per bar, the count written beside it: a chart that reads the same to a screen reader
 * (a list of label and number) as to the eye, and needs no charting library.
 */
function BarChart({ title, counts }: { title: string; counts: Record<string, number | undefined> }) {
  const entries = Object.entries(counts).map(([label, value]) => [label, value ?? 0] as const);
  const largest = Math.max(1, ...entries.map(([, value]) => value));
  const id = `chart-${title.toLowerCase().replaceAll(' ', '-')}`;
  return (
    <Paper withBorder p="md" component="section" aria-labelledby={id}>
      <Stack gap="xs">
        <Title order={2} size="h4" id={id}>
          {title}
        </Title>
        <Stack gap={6} component="ul" style={{ listStyle: 'none', padding: 0, margin: 0 }}>
          {entries.map(([label, value]) => (
            <Group key={label} component="li" gap="sm" wrap="nowrap">
              <Text size="sm" w={110}>
                {label}
              </Text>
              <Box
                aria-hidden="true"
                h={14}
                style={{
                  width: `${(value / largest) * 100}%`,
                  minWidth: value > 0 ? 2 : 0,
                  maxWidth: '60%',
                  background: 'var(--mantine-primary-color-filled)',
                }}
              />
              <Text size="sm" fw={600}>
                {value.toLocaleString()}
              </Text>
            </Group>
          ))}
        </Stack>
      </Stack>
    </Paper>
  );
}

/** The organization's counts (GET /Stats): devices, credentials, users and content requests by status. */
export function StatsPage() {
  const { data } = useSuspenseQuery({ queryKey: ['stats'], queryFn: () => answer<Stats>(api.GET('/aims/rs/scim/v2/Stats')) });
  return (
    <Stack>
      <Title order={1}>Stats</Title>
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <BarChart title="Devices" counts={data.devices ?? {}} />
        <BarChart title="Credentials" counts={data.credentials ?? {}} />
        <BarChart title="Users" counts={data.users ?? {}} />
        <BarChart title="Content requests" counts={data.contentRequests ?? {}} />
      </SimpleGrid>
    </Stack>
  );
}
