import { Code, Group, Stack, Table, Text, Title } from '@mantine/core';
import { useSuspenseQuery } from '@tanstack/react-query';
import { rolesQuery } from '../system-accounts/queries';

/** The roles of scopeAssignment.properties, read-only: role, scopes, permissions (DECISIONS 5.2). */
export function RolesPage() {
  const { data } = useSuspenseQuery(rolesQuery());
  return (
    <Stack>
      <Title order={1}>Roles</Title>
      <Text size="sm">Roles and their scopes are set in scopeAssignment.properties when the service starts; this page shows them.</Text>
      <Table aria-label="Roles" verticalSpacing="sm">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Role</Table.Th>
            <Table.Th>Scopes</Table.Th>
            <Table.Th>Permissions</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {data.Resources.map((role) => (
            <Table.Tr key={role.name}>
              <Table.Td>
                {role.name}
                {role.operatorDependent ? <Text size="xs">Operator Dependent</Text> : null}
              </Table.Td>
              <Table.Td>{role.scopes.join(', ')}</Table.Td>
              <Table.Td>
                <Group gap={4}>
                  {role.permissions.map((permission) => (
                    <Code key={permission}>{permission}</Code>
                  ))}
                </Group>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}
