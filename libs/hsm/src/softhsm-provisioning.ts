import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { HsmConfigurationError } from './hsm.errors';

/** A SoftHSM2 token under a private folder: the embedded default and the tests (DECISIONS.md §12). */
export interface SoftHsmTokenOptions {
  /** Holds `softhsm2.conf` and `tokens/`, e.g. `<data folder>/softhsm`. */
  directory: string;
  tokenLabel: string;
  soPin: string;
  pin: string;
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

/**
 * Creates `<directory>/tokens` (mode 0700) and `<directory>/softhsm2.conf`, points
 * `process.env.SOFTHSM2_CONF` at it and initializes a token labelled `tokenLabel` unless one
 * exists. Call it before `Pkcs11Signer.connect`: SoftHSM reads the variable and the token folder
 * only at C_Initialize (pkcs11.md rule 8). Under Jest, `process.env` is a per-file copy that
 * native code never sees, so call it from `globalSetup` or set the real environment yourself.
 */
export function ensureSoftHsmToken(options: SoftHsmTokenOptions): SoftHsmToken {
  const modulePath = MODULE_PATHS.find((path) => existsSync(path));
  if (modulePath === undefined) {
    throw new HsmConfigurationError('HSM_SOFTHSM_MISSING', `SoftHSM2 module not found at ${MODULE_PATHS.join(' or ')}: ${INSTALL_HINTS['softhsm2-util']}`);
  }
  const directory = resolve(options.directory);
  const tokenDirectory = join(directory, 'tokens');
  mkdirSync(tokenDirectory, { recursive: true, mode: 0o700 });
  chmodSync(tokenDirectory, 0o700);
  const configPath = join(directory, 'softhsm2.conf');
  writeFileSync(
    configPath,
    `# Written by ensureSoftHsmToken (libs/hsm).\ndirectories.tokendir = ${tokenDirectory}\nobjectstore.backend = file\nlog.level = ERROR\n`,
  );
  process.env.SOFTHSM2_CONF = configPath;

  if (!tokenLabels(configPath).includes(options.tokenLabel)) {
    runTool('softhsm2-util', configPath, ['--init-token', '--free', '--label', options.tokenLabel, '--so-pin', options.soPin, '--pin', options.pin]);
  }
  return { modulePath, configPath };
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

function tokenLabels(configPath: string): string[] {
  const slots = runTool('softhsm2-util', configPath, ['--show-slots']);
  return [...slots.matchAll(/^\s*Label:[ \t]*(.*)$/gm)].map((match) => (match[1] ?? '').trim());
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
