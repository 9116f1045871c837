import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as pkcs11js from 'pkcs11js';
import { HsmConfigurationError } from './hsm.errors';
import type { HsmLogger } from './hsm.logger';
import { findPrivateKeys, generateKeyPair, privateKeyLabels } from './pkcs11-keys';
import { claimModule, describeError, findObjects, findTokenSlotAtStart, initialize, login, quietly, releaseModule, sleepSync } from './pkcs11-token';
import { withProvisioningLock, type ProvisioningLockOptions } from './provisioning-lock';

// Development and tests only: the embedded default's SoftHSM2 token under the data folder
// (DECISIONS 12). Production HSMs are provisioned by their operators; the service only opens them.

/** A SoftHSM2 token under a private folder: the embedded default and the tests (DECISIONS 12). */
export interface SoftHsmTokenOptions {
  /** Holds `softhsm2.conf` and `tokens/`, e.g. `<data folder>/softhsm`. */
  directory: string;
  tokenLabel: string;
  soPin: string;
  pin: string;
  /** Where a duplicate token moved aside is reported. */
  logger?: HsmLogger;
  lock?: ProvisioningLockOptions;
}

export interface SoftHsmToken {
  modulePath: string;
  configPath: string;
}

export interface SoftHsmKeyOptions extends SoftHsmTokenOptions {
  keyLabel: string;
  keyType: 'EC' | 'RSA';
  /** RSA modulus length; default 2048. Ignored for EC, which is always P-256. */
  rsaBits?: number;
}

const MODULE_PATHS = ['/usr/lib/softhsm/libsofthsm2.so', '/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so'];
const INSTALL_HINTS = {
  'softhsm2-util': 'install SoftHSM2 with `apt-get install -y softhsm2`',
  'pkcs11-tool': 'install OpenSC with `apt-get install -y opensc`',
} as const;
/** How long a listing may keep missing a token folder before that folder is called unreadable. */
const LISTING_RETRY_MS = 3_000;
const LISTING_RETRY_PAUSE_MS = 20;

/**
 * Writes `<directory>/softhsm2.conf` if it is not already there, points `process.env.SOFTHSM2_CONF`
 * at it and returns the module path, without looking at the tokens: what a service worker does,
 * whose primary provisioned the token before forking it. SoftHSM reads the variable and the token
 * folder only at C_Initialize (pkcs11.md rule 8).
 */
export function openSoftHsmDirectory(directory: string): SoftHsmToken {
  const modulePath = MODULE_PATHS.find((path) => existsSync(path));
  if (modulePath === undefined) {
    throw new HsmConfigurationError('HSM_SOFTHSM_MISSING', `SoftHSM2 module not found at ${MODULE_PATHS.join(' or ')}: ${INSTALL_HINTS['softhsm2-util']}`);
  }
  const folder = resolve(directory);
  const tokenDirectory = join(folder, 'tokens');
  mkdirSync(tokenDirectory, { recursive: true, mode: 0o700 });
  if ((statSync(tokenDirectory).mode & 0o777) !== 0o700) chmodSync(tokenDirectory, 0o700);
  const configPath = join(folder, 'softhsm2.conf');
  const config = `# Written by the SoftHSM2 provisioning of libs/hsm.\ndirectories.tokendir = ${tokenDirectory}\nobjectstore.backend = file\nlog.level = ERROR\n`;
  // Written only when different, and by rename: another process's C_Initialize may be reading it.
  if (!existsSync(configPath) || readFileSync(configPath, 'utf8') !== config) {
    const temporary = `${configPath}.${process.pid}.tmp`;
    writeFileSync(temporary, config);
    renameSync(temporary, configPath);
  }
  process.env.SOFTHSM2_CONF = configPath;
  return { modulePath, configPath };
}

/**
 * Makes sure exactly one token labelled `tokenLabel` exists under `directory`, under the
 * provisioning lock (`<directory>/provisioning.lock`), and returns what `openSoftHsmDirectory` does.
 *
 * SoftHSM2 rewrites a token's `token.object` at every login, and a listing that reads it mid-write
 * leaves the token out; initializing a token then would make a second one under the label. So a
 * listing is trusted only when it shows a token for every token folder on disk. A start that finds
 * duplicates anyway (made before this rule) moves the empty ones aside to `<directory>/duplicate-tokens/`
 * and says so; when more than one holds objects it refuses, naming each folder and its keys.
 *
 * Under Jest, `process.env` is a per-file copy that native code never sees, so call it from
 * `globalSetup` or set the real environment yourself.
 */
export function ensureSoftHsmToken(options: SoftHsmTokenOptions): SoftHsmToken {
  const token = openSoftHsmDirectory(options.directory);
  withProvisioningLock(lockPathOf(options.directory), () => ensureToken(token, options), options.lock);
  return token;
}

/**
 * The embedded default's whole provisioning, once per data folder and start, in the primary (or the
 * single process) before any service process opens the token: the token (`ensureSoftHsmToken`) and
 * the token signer's key, an EC P-256 key pair generated in the token when no private key has
 * `keyLabel` (non-extractable, random CKA_ID), both under one hold of the provisioning lock. Uses
 * pkcs11js in this process and finalizes it again, so it must run before this process's `Pkcs11Hsm`
 * connects (pkcs11.md rule 4).
 */
export function provisionSoftHsmToken(options: SoftHsmTokenOptions & { keyLabel: string }): SoftHsmToken {
  const token = openSoftHsmDirectory(options.directory);
  withProvisioningLock(
    lockPathOf(options.directory),
    () => {
      ensureToken(token, options);
      ensureKey(token, options);
    },
    options.lock,
  );
  return token;
}

/**
 * Tests and dev only: generates a key pair in the token with `pkcs11-tool` in a child process,
 * so this process does not C_Initialize the module it may own later (pkcs11.md rules 4 and 8).
 * Returns the random CKA_ID, hex.
 */
export function generateSoftHsmKey(options: SoftHsmKeyOptions): { keyId: string } {
  const { modulePath, configPath } = ensureSoftHsmToken(options);
  const keyId = randomBytes(16).toString('hex');
  const keyType = options.keyType === 'EC' ? 'EC:prime256v1' : `rsa:${options.rsaBits ?? 2048}`;
  runTool('pkcs11-tool', configPath, [
    '--module',
    modulePath,
    '--token-label',
    options.tokenLabel,
    '--login',
    '--pin',
    options.pin,
    '--keypairgen',
    '--key-type',
    keyType,
    '--label',
    options.keyLabel,
    '--id',
    keyId,
  ]);
  return { keyId };
}

function lockPathOf(directory: string): string {
  return join(resolve(directory), 'provisioning.lock');
}

/** A token as `softhsm2-util --show-slots` lists it, and its folder. */
interface ListedToken {
  label: string;
  serial: string;
  folder?: string;
}

/**
 * Initializes the token only into a token folder that holds none yet. SoftHSM2 rewrites token.object
 * at every login, and a listing taken mid-write can show a token's slot and serial without its
 * label; deciding "no token under the label, so make one" from such a listing made a second token
 * (seen under load while another process logged in). The folder is the service's own, so a token
 * folder on disk means the token exists: read the listing again until it shows the label, and if it
 * never does, say what the folder holds instead of adding to it.
 */
function ensureToken(token: SoftHsmToken, options: SoftHsmTokenOptions): void {
  const tokenDirectory = join(token.configPath, '..', 'tokens');
  const labelled = () => listTokens(token.configPath, options.logger);
  let listed = labelled();
  const deadline = Date.now() + LISTING_RETRY_MS;
  while (!listed.some((entry) => entry.label === options.tokenLabel) && tokenFolders(tokenDirectory).length > 0) {
    if (Date.now() > deadline) {
      const seen = listed.map((entry) => `"${entry.label}" in ${entry.folder ? join(tokenDirectory, entry.folder) : `the token with serial ${entry.serial}`}`);
      throw new HsmConfigurationError(
        'HSM_TOKEN_NOT_FOUND',
        `${tokenDirectory} holds SoftHSM2 tokens but none labelled "${options.tokenLabel}" (found ${seen.join(', ') || 'no readable label'}): ` +
          `set PKCS11_TOKEN_LABEL to the label of the token that holds the keys, or move the token folders out of ${tokenDirectory} to start with a new token.`,
      );
    }
    sleepSync(LISTING_RETRY_PAUSE_MS);
    listed = labelled();
  }
  const matches = listed.filter((entry) => entry.label === options.tokenLabel);
  if (matches.length === 0) {
    runTool('softhsm2-util', token.configPath, ['--init-token', '--free', '--label', options.tokenLabel, '--so-pin', options.soPin, '--pin', options.pin]);
  } else if (matches.length > 1) {
    resolveDuplicates(token, options, matches);
  }
  backUpTokenObjects(token.configPath);
}

/**
 * Keeps a copy of each token's token.object under `<directory>/token-backups/<folder>/`. SoftHSM2
 * rewrites the file in place at every login, so a process killed in that moment leaves it empty and
 * the token (label, PIN-wrapped token key) unusable; the key objects are files of their own. The
 * file changes only with a PIN or label, so the copy from a good listing restores it (`listTokens`).
 * A copy is taken only of a file read twice alike around a listing that showed every token.
 */
function backUpTokenObjects(configPath: string): void {
  const tokenDirectory = join(configPath, '..', 'tokens');
  const before = new Map(tokenFolders(tokenDirectory).map((folder) => [folder, readFileSync(join(tokenDirectory, folder, 'token.object'))]));
  const listed = listTokens(configPath, undefined);
  for (const [folder, content] of before) {
    const backup = backupPathOf(configPath, folder);
    const now = readFileSync(join(tokenDirectory, folder, 'token.object'));
    if (content.length === 0 || !content.equals(now) || !listed.some((token) => token.folder === folder)) continue;
    if (existsSync(backup) && readFileSync(backup).equals(content)) continue;
    mkdirSync(join(backup, '..'), { recursive: true, mode: 0o700 });
    writeFileSync(`${backup}.tmp`, content, { mode: 0o600 });
    renameSync(`${backup}.tmp`, backup);
  }
}

function backupPathOf(configPath: string, folder: string): string {
  return join(configPath, '..', 'token-backups', folder, 'token.object');
}

function tokenFolders(tokenDirectory: string): string[] {
  return readdirSync(tokenDirectory).filter((entry) => existsSync(join(tokenDirectory, entry, 'token.object')));
}

/**
 * The initialized tokens, from a listing that accounts for every token folder (see
 * `ensureSoftHsmToken`); a listing that misses one is read again. A folder still missing after
 * LISTING_RETRY_MS gets its token.object back from its backup (`backUpTokenObjects`) when there is
 * one; otherwise the error says which folder to move away.
 */
function listTokens(configPath: string, logger: HsmLogger | undefined): ListedToken[] {
  const tokenDirectory = join(configPath, '..', 'tokens');
  let deadline = Date.now() + LISTING_RETRY_MS;
  const restored = new Set<string>();
  for (;;) {
    const folders = tokenFolders(tokenDirectory);
    const listed = parseSlots(runTool('softhsm2-util', configPath, ['--show-slots'])).map((listedToken) => ({
      ...listedToken,
      folder: folders.find((folder) => folder.replace(/-/g, '').endsWith(listedToken.serial)),
    }));
    const unlisted = folders.filter((folder) => !listed.some((listedToken) => listedToken.folder === folder));
    if (unlisted.length === 0) return listed;
    const restorable = unlisted.filter((folder) => !restored.has(folder) && existsSync(backupPathOf(configPath, folder)));
    if (Date.now() > deadline && restorable.length > 0) {
      for (const folder of restorable) {
        const objectPath = join(tokenDirectory, folder, 'token.object');
        const size = statSync(objectPath).size;
        writeFileSync(`${objectPath}.restored`, readFileSync(backupPathOf(configPath, folder)), { mode: 0o600 });
        renameSync(`${objectPath}.restored`, objectPath);
        restored.add(folder);
        logger?.warn(
          { tokenFolder: join(tokenDirectory, folder), unreadableBytes: size, backup: backupPathOf(configPath, folder) },
          'restored an unreadable SoftHSM2 token.object from its backup (a process killed while SoftHSM2 rewrote it at a login leaves it torn)',
        );
      }
      deadline = Date.now() + LISTING_RETRY_MS;
      continue;
    }
    if (Date.now() > deadline) {
      throw new HsmConfigurationError(
        'HSM_SOFTHSM_FAILED',
        `SoftHSM2 does not list the token in ${unlisted.map((folder) => join(tokenDirectory, folder)).join(', ')}: its token.object is unreadable ` +
          `(a start interrupted while creating it?); stop the service and move that folder out of ${tokenDirectory}`,
      );
    }
    sleepSync(LISTING_RETRY_PAUSE_MS);
  }
}

function parseSlots(slots: string): ListedToken[] {
  return slots
    .split(/^Slot /m)
    .filter((slot) => /^\s*Initialized:\s*yes\s*$/m.test(slot))
    .map((slot) => ({
      label: (/^\s*Label:[ \t]*(.*)$/m.exec(slot)?.[1] ?? '').trim(),
      serial: (/^\s*Serial number:[ \t]*(.*)$/m.exec(slot)?.[1] ?? '').trim(),
    }));
}

/** What a token holds, read with pkcs11js in this process. */
interface TokenContents {
  token: ListedToken;
  /** Every object the user sees after login; undefined when the login failed. */
  objects?: number;
  privateKeys: string[];
  problem?: string;
}

/**
 * Two or more tokens under the label: every start would refuse ("N tokens are labelled"), so say
 * which folder holds what. Empty ones (what the old concurrent provisioning left) are moved aside
 * when at most one token holds objects; otherwise nothing is moved and the error names each folder.
 */
function resolveDuplicates(token: SoftHsmToken, options: SoftHsmTokenOptions, matches: ListedToken[]): void {
  const contents = inspectTokens(token, options, matches);
  const tokenDirectory = join(token.configPath, '..', 'tokens');
  const holders = contents.filter((entry) => entry.objects !== 0);
  if (holders.length <= 1 && contents.every((entry) => entry.token.folder !== undefined)) {
    const keep = holders[0] ?? oldest(contents, tokenDirectory);
    const asideDirectory = join(token.configPath, '..', 'duplicate-tokens');
    mkdirSync(asideDirectory, { recursive: true, mode: 0o700 });
    for (const entry of contents.filter((candidate) => candidate !== keep)) {
      const folder = entry.token.folder!;
      renameSync(join(tokenDirectory, folder), join(asideDirectory, folder));
      options.logger?.warn(
        { tokenLabel: options.tokenLabel, kept: join(tokenDirectory, keep.token.folder!), movedAside: join(asideDirectory, folder) },
        `found ${contents.length} SoftHSM2 tokens labelled "${options.tokenLabel}"; moved the empty duplicate aside (made by concurrent provisioning; it held no objects)`,
      );
    }
    return;
  }
  const described = contents.map((entry) => {
    const where = entry.token.folder === undefined ? `the token with serial ${entry.token.serial}` : join(tokenDirectory, entry.token.folder);
    if (entry.problem !== undefined) return `${where}: ${entry.problem}`;
    // In label order: the token lists its objects in no fixed order.
    const keys = [...entry.privateKeys].sort().map((label) => `"${label}"`);
    return `${where} holds ${entry.objects} objects${keys.length > 0 ? `, private keys ${keys.join(', ')}` : ''}`;
  });
  throw new HsmConfigurationError(
    'HSM_TOKEN_AMBIGUOUS',
    `${contents.length} SoftHSM2 tokens are labelled "${options.tokenLabel}", so the service cannot tell which holds its keys: ${described.join('; ')}. ` +
      `Stop every service process on this data folder, keep the token that holds the signing key (the one tokens were issued with) and the CA keys, ` +
      `and move the other folders out of ${tokenDirectory}.`,
  );
}

function inspectTokens(token: SoftHsmToken, options: SoftHsmTokenOptions, matches: ListedToken[]): TokenContents[] {
  return withModule(token, (pkcs11) => {
    const slots = pkcs11.C_GetSlotList(true);
    return matches.map((match): TokenContents => {
      const slot = slots.find((candidate) => pkcs11.C_GetTokenInfo(candidate).serialNumber.trim() === match.serial);
      if (slot === undefined) return { token: match, privateKeys: [], problem: 'no longer listed' };
      const session = pkcs11.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION);
      try {
        pkcs11.C_Login(session, pkcs11js.CKU_USER, options.pin);
        return { token: match, objects: findObjects(pkcs11, session, []).length, privateKeys: privateKeyLabels(pkcs11, session) };
      } catch (error) {
        return { token: match, privateKeys: [], problem: `cannot log in with the configured PIN (${describeError(error)})` };
      } finally {
        quietly(options.logger, 'C_CloseSession', () => pkcs11.C_CloseSession(session));
      }
    });
  });
}

function oldest(contents: TokenContents[], tokenDirectory: string): TokenContents {
  const createdAt = (entry: TokenContents): number => statSync(join(tokenDirectory, entry.token.folder!)).mtimeMs;
  return contents.reduce((best, entry) => (createdAt(entry) < createdAt(best) ? entry : best));
}

/** Generates the token signer's key when the token has no private key under `keyLabel`. */
function ensureKey(token: SoftHsmToken, options: SoftHsmTokenOptions & { keyLabel: string }): void {
  withModule(token, (pkcs11) => {
    const slot = findTokenSlotAtStart(pkcs11, { modulePath: token.modulePath, tokenLabel: options.tokenLabel, pin: options.pin });
    // Creating token objects needs a read/write session.
    const session = pkcs11.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
    try {
      login(pkcs11, session, { modulePath: token.modulePath, tokenLabel: options.tokenLabel, pin: options.pin });
      if (findPrivateKeys(pkcs11, session, options.keyLabel).length > 0) return;
      const { id } = generateKeyPair(pkcs11, session, options.keyLabel, 'EC-P256');
      options.logger?.info(
        { tokenLabel: options.tokenLabel, keyLabel: options.keyLabel, keyId: id.toString('hex') },
        'generated an EC P-256 signing key in the HSM',
      );
    } finally {
      quietly(options.logger, 'C_Logout', () => pkcs11.C_Logout(session));
      quietly(options.logger, 'C_CloseSession', () => pkcs11.C_CloseSession(session));
    }
  });
}

/** Loads and initializes SoftHSM2 in this process for `action`, then finalizes it (rule 4: nothing else owns it meanwhile). */
function withModule<T>(token: SoftHsmToken, action: (pkcs11: pkcs11js.PKCS11) => T): T {
  claimModule('SoftHSM2 provisioning');
  const pkcs11 = new pkcs11js.PKCS11();
  try {
    pkcs11.load(token.modulePath);
    initialize(pkcs11, token.modulePath);
    try {
      return action(pkcs11);
    } finally {
      quietly(undefined, 'C_Finalize', () => pkcs11.C_Finalize());
    }
  } finally {
    quietly(undefined, 'close', () => pkcs11.close());
    releaseModule();
  }
}

/**
 * Runs a SoftHSM tool against `configPath` without a shell. The environment is passed explicitly
 * because under Jest `process.env` is not the environment children inherit. PINs are arguments,
 * so a failure reports the tool and its stderr, never the command line.
 */
function runTool(tool: keyof typeof INSTALL_HINTS, configPath: string, args: string[]): string {
  try {
    return execFileSync(tool, args, { env: { ...process.env, SOFTHSM2_CONF: configPath }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    const failure = error as NodeJS.ErrnoException & { stderr?: string; stdout?: string };
    if (failure.code === 'ENOENT') {
      throw new HsmConfigurationError('HSM_SOFTHSM_MISSING', `${tool} not found: ${INSTALL_HINTS[tool]}`);
    }
    const output = `${failure.stderr ?? ''}${failure.stdout ?? ''}`.trim();
    throw new HsmConfigurationError('HSM_SOFTHSM_FAILED', `${tool} failed with SOFTHSM2_CONF=${configPath}: ${output}`);
  }
}
