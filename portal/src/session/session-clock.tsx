import { Button, Group, Text } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import type { Whoami } from '../api/resources';
import { Notice } from '../components/notice';
import { lastApiCall, signIn } from './sign-in';

/** How long before a timeout the portal warns. */
const WARN_MS = 2 * 60 * 1000;

function remaining(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  return seconds >= 60 ? `${Math.floor(seconds / 60)} min ${seconds % 60} s` : `${seconds} s`;
}

/**
 * Shows the session's idle and absolute timeouts before they end (DECISIONS 17): a warning two
 * minutes before either, a button that keeps an idle session alive (any API call does), and the
 * login page once one has passed. Both are counted on the browser's clock from durations the
 * service answered (whoami at `readAt`), so a skewed clock does not matter: the idle timeout from
 * the last API call, the absolute one from the moment whoami was read.
 */
export function SessionClock({ whoami, readAt }: { whoami: Whoami; readAt: number }) {
  const queryClient = useQueryClient();
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), 1000);
    return () => window.clearInterval(timer);
  }, []);
  const session = whoami.session;
  const idleLeft = session ? Math.max(lastApiCall(), readAt) + session.idleTimeoutSeconds * 1000 - now : Infinity;
  const absoluteLeft = session ? readAt + session.absoluteExpiresInSeconds * 1000 - now : Infinity;
  useEffect(() => {
    if (Math.min(idleLeft, absoluteLeft) <= 0) signIn();
  }, [idleLeft, absoluteLeft]);
  if (!session) return null;
  if (absoluteLeft <= WARN_MS && absoluteLeft <= idleLeft) {
    return (
      <Notice title="Your session is ending" role="status">
        <Text size="sm">For security, every session ends after a fixed time. You will be asked to sign in again in {remaining(absoluteLeft)}.</Text>
      </Notice>
    );
  }
  if (idleLeft <= WARN_MS) {
    return (
      <Notice title="Are you still there?" role="status">
        <Group justify="space-between">
          <Text size="sm">Your session ends in {remaining(idleLeft)} unless you use the portal.</Text>
          <Button size="xs" onClick={() => void queryClient.invalidateQueries({ queryKey: ['whoami'] })}>
            Stay signed in
          </Button>
        </Group>
      </Notice>
    );
  }
  return null;
}
