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
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { engines?: Record<string, string> | string[]; version?: string }>;
};
const supported = manifest.engines.node;

/** Every locked package with a Node engine range, as `name@version` and its range. */
function lockedEngines(): Array<{ name: string; range: string }> {
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
