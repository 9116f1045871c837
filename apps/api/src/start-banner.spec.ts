import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AppConfig } from '@app/config';
import { startBanner } from './start-banner';

describe('the start banner (issue 33 item 3)', () => {
  const config = (dataDir: string) => ({ dataDir, publicBaseUrl: 'http://localhost:8080', platformAdminUser: 'admin' }) as AppConfig;

  it('names the portal, the API docs and the file that holds the first sign-in link, never the link', () => {
    const dir = mkdtempSync(join(tmpdir(), 'banner-'));
    writeFileSync(join(dir, 'bootstrap-credentials'), 'enrolment_link=http://localhost:8080/authentication/customer/platform/enrol/SECRET\n');
    const banner = startBanner(config(dir));
    expect(banner).toContain('Portal:            http://localhost:8080/portal/');
    expect(banner).toContain('API docs:          http://localhost:8080/api-docs');
    expect(banner).toContain(`First sign-in:     the enrolment_link line of ${join(dir, 'bootstrap-credentials')}`);
    expect(banner).toContain('npm run cli -- user enrolment-link platform admin');
    expect(banner).not.toContain('SECRET');
    expect(banner.split('\n').length).toBeLessThanOrEqual(8);
  });

  it('without a link in the data folder, says how to make one', () => {
    expect(startBanner(config(mkdtempSync(join(tmpdir(), 'banner-'))))).toContain(
      "First sign-in:     npm run cli -- user enrolment-link <org> <userName> makes a person's one-time sign-in link",
    );
  });
});
