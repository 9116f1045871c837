import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createTestApp, TestApp } from './support';

/**
 * The portal's request and response types are generated (openapi-typescript, at every portal build
 * and type-check, into the untracked portal/src/api/schema.d.ts) from the service's own OpenAPI
 * document, the one /api-docs serves, committed as portal/src/api/openapi.json so that the portal
 * builds without a running service. This suite fails when that copy is stale: a changed API must
 * change the portal's types, and so break its type-check wherever the portal no longer fits.
 *
 * To refresh it after changing a route: `UPDATE_PORTAL_API=1 npx jest test/portal-api.e2e-spec.ts`.
 */
const ROOT = resolve(__dirname, '..');
const DOCUMENT = join(ROOT, 'portal', 'src', 'api', 'openapi.json');
const UPDATE = process.env.UPDATE_PORTAL_API === '1';

describe("The portal's API types", () => {
  let t: TestApp;
  let document: string;

  beforeAll(async () => {
    t = await createTestApp();
    const answer = await t.http.get('/api-docs-json').expect(200);
    document = `${JSON.stringify(answer.body, null, 2)}\n`;
  });
  afterAll(() => t?.close());

  it('portal/src/api/openapi.json is the document the service serves at /api-docs-json', () => {
    if (UPDATE) writeFileSync(DOCUMENT, document);
    expect(existsSync(DOCUMENT)).toBe(true);
    // Not toEqual on the whole text: a diff of a 10,000-line document is unreadable; name the paths instead.
    const committed = JSON.parse(readFileSync(DOCUMENT, 'utf8')) as { paths: Record<string, unknown> };
    const served = JSON.parse(document) as { paths: Record<string, unknown> };
    expect(Object.keys(committed.paths).sort()).toEqual(Object.keys(served.paths).sort());
    expect(readFileSync(DOCUMENT, 'utf8') === document).toBe(true);
  });
});
