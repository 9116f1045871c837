import { Modal, createTheme, type CSSVariablesResolver } from '@mantine/core';

/**
 * Mantine's defaults with contrast raised where axe-core found WCAG AA failures (browser.md): the
 * primary shade dark enough for white text in both themes, and dimmed text (descriptions, hints)
 * and error text readable on either background.
 */
export const theme = createTheme({
  primaryColor: 'blue',
  primaryShade: { light: 8, dark: 8 },
  defaultRadius: 'sm',
  focusRing: 'auto',
  // Dialogs and menus appear without animation for those who ask their system for less motion.
  respectReducedMotion: true,
  components: {
    // The close button of every dialog has a name (axe: button-name).
    Modal: Modal.extend({ defaultProps: { closeButtonProps: { 'aria-label': 'Close dialog' } } }),
  },
});

export const cssVariablesResolver: CSSVariablesResolver = (resolved) => ({
  variables: {},
  light: {
    '--mantine-color-dimmed': resolved.colors.gray[7],
    '--mantine-color-placeholder': resolved.colors.gray[7],
    '--mantine-color-error': resolved.colors.red[9],
  },
  dark: {
    '--mantine-color-dimmed': resolved.colors.dark[1],
    '--mantine-color-placeholder': resolved.colors.dark[1],
    '--mantine-color-error': resolved.colors.red[3],
  },
});
