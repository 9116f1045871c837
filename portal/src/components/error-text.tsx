import { Text } from '@mantine/core';

/** What a read or an action answered when it failed, announced at once (role alert); nothing while all is well. */
export function ErrorText({ error }: { error: { message: string } | null | undefined }) {
  return error ? (
    <Text c="red.8" role="alert">
      {error.message}
    </Text>
  ) : null;
}
