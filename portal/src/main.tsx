import '@mantine/core/styles.css';
import './portal.css';
import { MantineProvider, localStorageColorSchemeManager } from '@mantine/core';
import { QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { RouterProvider } from '@tanstack/react-router';
import { setNonce } from 'get-nonce';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { createPortalRouter } from './router';
import { cssVariablesResolver, theme } from './theme';

// The CSP nonce of this page (the service writes it into index.html): Mantine puts it on every
// <style> tag it injects, the only inline styles the portal's CSP allows.
const nonce = document.querySelector<HTMLMetaElement>('meta[name="csp-nonce"]')?.content ?? '';
// Dialogs lock the page's scroll with a <style> tag (react-remove-scroll), which takes its nonce from here.
setNonce(nonce);

const queryClient = new QueryClient({
  queryCache: new QueryCache(),
  defaultOptions: { queries: { retry: false, refetchOnWindowFocus: true, staleTime: 5_000 } },
});
const router = createPortalRouter(queryClient);

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <MantineProvider
      theme={theme}
      cssVariablesResolver={cssVariablesResolver}
      defaultColorScheme="auto"
      colorSchemeManager={localStorageColorSchemeManager({ key: 'portal-color-scheme' })}
      getStyleNonce={() => nonce}
    >
      <QueryClientProvider client={queryClient}>
        <RouterProvider router={router} />
      </QueryClientProvider>
    </MantineProvider>
  </StrictMode>,
);
