import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { Browser } from 'playwright-core';
import { accessibilityViolations, launchBrowser, watchedPage } from './support/browser';

/**
 * playwright-core targets a newer Chromium than Debian ships; both are pinned, and this test fails
 * loudly when they stop agreeing, before any flow test fails for a less obvious reason.
 */
describe('The browser the tests drive', () => {
  let browser: Browser;
  let server: Server;
  let base: string;

  beforeAll(async () => {
    browser = await launchBrowser();
    server = createServer((request, response) => {
      const strict = request.url === '/strict';
      response.writeHead(200, {
        'Content-Type': 'text/html; charset=utf-8',
        ...(strict ? { 'Content-Security-Policy': "default-src 'none'; script-src 'none'" } : {}),
      });
      response.end(
        `<!doctype html><html lang="en"><head><title>Smoke</title></head><body><main><h1>Smoke</h1>` +
          `<form><label for="name">Name</label><input id="name" name="name"><button type="submit">Send</button></form>` +
          (strict ? '<script>document.title = "ran";</script>' : '') +
          `</main></body></html>`,
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('launches, finds controls by role and name, and axe-core finds nothing on a plain accessible page', async () => {
    const { context, page, problems } = await watchedPage(browser);
    await page.goto(`${base}/`);
    await page.getByRole('textbox', { name: 'Name' }).fill('Ada');
    expect(await page.getByRole('button', { name: 'Send' }).isVisible()).toBe(true);
    expect(await accessibilityViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('reports a CSP violation as a problem, so flow tests can assert there is none', async () => {
    const { context, page, problems } = await watchedPage(browser);
    await page.goto(`${base}/strict`);
    await page.waitForTimeout(100);
    expect(await page.title()).toBe('Smoke');
    expect(problems.some((problem) => problem.includes('CSP violation: script-src'))).toBe(true);
    await context.close();
  });
});
