import { createTheme } from '@mantine/core';

/**
 * Mantine's defaults with contrast raised where axe found WCAG AA failures on stock pages
 * (browser.md): the primary shade is one step darker in the light theme.
 */
export const theme = createTheme({
  primaryColor: 'blue',
  primaryShade: { light: 8, dark: 5 },
  defaultRadius: 'sm',
  focusRing: 'auto',
});
