import { Text } from '@mantine/core';

/**
 * Why a delivery failed, as an administrator reads it: the coarse class in bold (`timeout`,
 * `http_503`, ...; DECISIONS 10.5 and 11.4), the service's fixed sentence under it. Nothing when all went well.
 */
export function FailureReason({ reason, detail }: { reason: string; detail: string | null }) {
  return (
    <>
      {reason ? (
        <Text fw={700} size="sm" component="span">
          {reason}
        </Text>
      ) : null}
      {detail ? (
        <Text size="sm" c="dimmed">
          {detail}
        </Text>
      ) : null}
    </>
  );
}
