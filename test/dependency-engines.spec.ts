import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import semver from 'semver';

/**
 * The Node versions package.json declares (and the README states) are versions every installed
 * package supports: `npm install` on any of them prints no EBADENGINE warning, and a dependency
 * upgrade that drops one of them fails here, naming the package.
 */

const ROOT = resolve(__dirname, '..');
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
type Lock = { packages: Record<string, { engines?: Record<string, string> | string[]; version?: string }> };
const readLock = (folder: string) => JSON.parse(readFileSync(join(folder, 'package-lock.json'), 'utf8')) as Lock;
const supported = manifest.engines.node;
/** The management portal (portal/, DECISIONS 17) installs its own packages from its own lock: they must fit the same Node versions. */
const PORTAL = join(ROOT, 'portal');
const portalManifest = JSON.parse(readFileSync(join(PORTAL, 'package.json'), 'utf8')) as { engines: { node: string } };

/** Every locked package (of the root's lock and the portal's) with a Node engine range, as `name@version` and its range. */
function lockedEngines(): Array<{ name: string; range: string }> {
  return [readLock(ROOT), readLock(PORTAL)].flatMap((lock) => lockedEnginesOf(lock));
}

function lockedEnginesOf(lock: Lock): Array<{ name: string; range: string }> {
  return Object.entries(lock.packages)
    .filter(([path]) => path !== '')
    .flatMap(([path, entry]) => {
      const name = `${path.replace(/^.*node_modules\//, '')}@${entry.version}`;
      const engines = entry.engines;
      // Old manifests list engines as strings ("node >= 0.4"); npm reads them the same way.
      const range = Array.isArray(engines) ? engines.find((e) => e.startsWith('node'))?.replace(/^node\s*/, '') : engines?.node;
      return range === undefined ? [] : [{ name, range }];
    });
}

describe('Node versions: package.json engines, the README, and every installed package agree', () => {
  it('package.json declares a valid range, and the README names it', () => {
    expect(semver.validRange(supported)).not.toBeNull();
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).toContain(`\`"node": "${supported}"\``);
  });

  it('the lock holds packages with engine ranges (the check below has something to check)', () => {
    expect(lockedEngines().length).toBeGreaterThan(100);
  });

  it("the portal's package.json declares the same Node versions, and its lock has packages to check (vite, the router)", () => {
    expect(portalManifest.engines.node).toBe(supported);
    const portal = lockedEnginesOf(readLock(PORTAL)).map(({ name }) => name);
    expect(portal).toEqual(expect.arrayContaining([expect.stringMatching(/^vite@/), expect.stringMatching(/^@tanstack\/react-router@/)]));
  });

  it(`every installed package admits the minimum Node version package.json declares (${semver.minVersion(supported)?.version})`, () => {
    const minimum = semver.minVersion(supported)!;
    const refusing = lockedEngines().filter(({ range }) => !semver.satisfies(minimum, range));
    expect(refusing).toEqual([]);
  });

  it('every installed package admits every Node version package.json declares', () => {
    const narrower = lockedEngines().filter(({ range }) => !semver.subset(supported, range));
    expect(narrower).toEqual([]);
  });
});
