import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AppConfig } from '@app/config';

/**
 * The few lines a person at the terminal needs once the service listens (issue 33 item 3): where the
 * portal and the API docs are, and where the first sign-in link is. Never a secret: the link itself
 * is in the owner-only bootstrap credentials file (and was shown once when it was made).
 */
export function startBanner(config: AppConfig): string {
  const file = join(config.dataDir, 'bootstrap-credentials');
  const link =
    existsSync(file) && /^enrolment_link=/m.test(readFileSync(file, 'utf8'))
      ? `the enrolment_link line of ${file} (it works once; a new one: npm run cli -- user enrolment-link platform ${config.platformAdminUser ?? '<userName>'})`
      : `npm run cli -- user enrolment-link <org> <userName> makes a person's one-time sign-in link`;
  return [
    '',
    'Credential platform is ready.',
    `  Portal:            ${config.publicBaseUrl}/portal/`,
    `  API docs:          ${config.publicBaseUrl}/api-docs`,
    `  First sign-in:     ${link}`,
    '',
    '',
  ].join('\n');
}
