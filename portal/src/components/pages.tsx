import { Anchor, Button, Center, Loader, Stack, Text, Title } from '@mantine/core';
import { Link } from '@tanstack/react-router';
import type { ReactNode } from 'react';
import { ApiError } from '../api/client';

/** A page that says what happened and what to do next: the portal's 403, 404 and failures. */
export function MessagePage({ title, children }: { title: string; children: ReactNode }) {
  return (
    <Center mih="60vh" component="section" aria-labelledby="message-title">
      <Stack maw={520} gap="sm">
        <Title order={1} id="message-title">
          {title}
        </Title>
        {children}
      </Stack>
    </Center>
  );
}

export function NotFoundPage() {
  return (
    <MessagePage title="Page not found">
      <Text>Nothing is at this address, or it belongs to an organization you do not administer.</Text>
      <Anchor renderRoot={(props) => <Link {...props} to="/" />}>Go to the start page</Anchor>
    </MessagePage>
  );
}

export function ForbiddenPage({ detail }: { detail?: string }) {
  return (
    <MessagePage title="Not allowed">
      <Text>Your role does not allow this page. Ask your organization's administrator if you need it.</Text>
      {detail ? <Text c="dimmed">The service said: {detail}</Text> : null}
    </MessagePage>
  );
}

/** An error while loading a page: 403 and 404 as their pages, anything else with the service's words. */
export function ErrorPage({ error, reset }: { error: unknown; reset?: () => void }) {
  if (error instanceof ApiError && error.status === 404) return <NotFoundPage />;
  if (error instanceof ApiError && error.status === 403) return <ForbiddenPage detail={error.message} />;
  if (error instanceof ApiError && error.status === 401) return <Loading label="Signing in" />;
  return (
    <MessagePage title="Something went wrong">
      <Text>{error instanceof Error ? error.message : String(error)}</Text>
      {reset ? (
        <Button onClick={reset} w="fit-content">
          Try again
        </Button>
      ) : null}
    </MessagePage>
  );
}

export function Loading({ label = 'Loading' }: { label?: string }) {
  return (
    <Center mih="30vh">
      <Loader aria-label={label} />
    </Center>
  );
}
