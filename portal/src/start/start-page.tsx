import { Button, Center, Stack, Text, TextInput, Title } from '@mantine/core';
import { Navigate } from '@tanstack/react-router';
import { useState } from 'react';
import { sessionOrganization } from '../session/sign-in';
import { SkipLink } from '../components/skip-link';

/** /portal/: the portal belongs to no organization of its own; a signed-in person goes to theirs, anyone else names it. */
export function StartPage() {
  const signedIn = sessionOrganization();
  return signedIn ? <Navigate to="/$org" params={{ org: signedIn }} replace /> : <ChooseOrganization />;
}

function ChooseOrganization() {
  const [org, setOrg] = useState('');
  const valid = /^[A-Za-z0-9_]{1,64}$/.test(org);
  return (
    <>
      <SkipLink />
      <Center mih="80vh" component="main" id="main" tabIndex={-1}>
        <form
          onSubmit={(event) => {
            event.preventDefault();
            // A page load, not a route change: the service sends a person without a session to the login page.
            if (valid) window.location.assign(`/portal/${org}/`);
          }}
        >
          <Stack w={360}>
            <Title order={1}>Management portal</Title>
            <Text>Sign in to your organization's administration and the operators' desk.</Text>
            <TextInput
              label="Organization"
              description="Your organization's id, as in its token URL"
              value={org}
              onChange={(event) => setOrg(event.currentTarget.value.trim())}
              error={org !== '' && !valid ? 'Letters, digits and _ only, at most 64' : undefined}
              autoComplete="organization"
              required
            />
            <Button type="submit" disabled={!valid}>
              Continue
            </Button>
          </Stack>
        </form>
      </Center>
    </>
  );
}
