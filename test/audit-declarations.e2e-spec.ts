import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AUDIT_CATALOGUE, AUDIT_DECLARATION, AuditDeclaration, auditCatalogueMarkdown } from '@app/audit';
import { TestApp, createTestApp, registeredRoutes } from '@app/testing';

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * GET routes that change state because their protocol makes the browser send a GET, each reviewed:
 * they declare their events like a POST.
 */
const PROTOCOL_GETS: Record<string, string> = {
  'GET /authentication/customer/:org/authorize': 'OIDC Core 3.1.2.1: the authorization request is a GET; it issues a code (DECISIONS 15.2)',
};

/**
 * One audit writer, declared per route (Issue 11 item 4): every state-changing route says which
 * events it writes, or why it writes none; the table is a reviewed snapshot, and the catalogue of
 * codes is the one in docs/audit-events.md.
 */
describe('audit declarations', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const declarations = () => registeredRoutes(t).map((r) => ({ ...r, declaration: r.metadata<AuditDeclaration>(AUDIT_DECLARATION) }));

  it('every POST, PUT, PATCH and DELETE route declares @Audited(...) or @NotAudited(reason)', () => {
    const mutating = declarations().filter((r) => MUTATING.has(r.method));
    expect(mutating.length).toBeGreaterThan(30);
    expect(mutating.filter((r) => r.declaration === undefined).map((r) => r.route)).toEqual([]);
  });

  it('a reading route declares nothing about the audit log (a GET that audits would be a state change)', () => {
    expect(
      declarations()
        .filter((r) => !MUTATING.has(r.method) && r.declaration !== undefined && PROTOCOL_GETS[r.route] === undefined)
        .map((r) => r.route),
    ).toEqual([]);
  });

  it('a GET that a protocol makes change state is reviewed, and declares its events', () => {
    const routes = declarations().filter((r) => PROTOCOL_GETS[r.route] !== undefined);
    expect(routes.map((r) => r.route).sort()).toEqual(Object.keys(PROTOCOL_GETS).sort());
    expect(routes.filter((r) => r.declaration?.kind !== 'audited').map((r) => r.route)).toEqual([]);
  });

  it('the table of routes and the events they write matches the reviewed snapshot', () => {
    const table = declarations()
      .filter((r) => r.declaration !== undefined)
      .map(({ route, declaration }) =>
        declaration!.kind === 'audited'
          ? `${route} -> ${declaration!.actions.map((a) => `${a} (${AUDIT_CATALOGUE[a].code})`).join(', ')}`
          : `${route} -> not audited: ${declaration!.reason}`,
      );
    expect(table).toMatchSnapshot();
  });

  it('codes are unique, and those the contract numbers keep their numbers', () => {
    const codes = Object.values(AUDIT_CATALOGUE).map((e) => e.code);
    expect(new Set(codes).size).toBe(codes.length);
    // CREDENTIAL-MANAGEMENT.md, "Events".
    expect(AUDIT_CATALOGUE['device.create'].code).toBe(10000);
    expect(AUDIT_CATALOGUE['device.delete'].code).toBe(10007);
    expect(AUDIT_CATALOGUE['device.terminate'].code).toBe(10012);
    expect(AUDIT_CATALOGUE['user.create'].code).toBe(40001);
    expect(AUDIT_CATALOGUE['content_request.unlock_pin'].code).toBe(30009);
    expect(AUDIT_CATALOGUE['crl.publish'].code).toBe(60003);
  });

  it('docs/audit-events.md is the catalogue (regenerate it with `npm run docs:audit`)', () => {
    expect(readFileSync(join(__dirname, '../docs/audit-events.md'), 'utf8')).toBe(auditCatalogueMarkdown());
  });
});
