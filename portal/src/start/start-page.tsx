import { Button, Center, Stack, Text, TextInput, Title } from '@mantine/core';
import { useNavigate } from '@tanstack/react-router';
import { useState } from 'react';

/** /portal/: the portal belongs to no organization of its own; the person names theirs. */
export function StartPage() {
  const navigate = useNavigate();
  const [org, setOrg] = useState('');
  const valid = /^[A-Za-z0-9_]{1,64}$/.test(org);
  return (
    <Center mih="80vh" component="main">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (valid) void navigate({ to: '/$org', params: { org } });
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
  );
}
