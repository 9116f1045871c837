import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { ConcurrencyLimit, DomainError, invalidValue } from '@app/common';
import { AppConfig } from '@app/config';
import { PasswordHashThreads } from './password-hash-threads';

/** Password length rules of DECISIONS 3.5, counted in Unicode code points. */
export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 1024;

/**
 * scrypt cost (RFC 7914): N=2^15, r=8, p=1 needs 128*N*r = 32 MiB per hash, the OWASP Password
 * Storage Cheat Sheet's minimum for scrypt. maxmem leaves room for Node's own overhead.
 */
const COST = { N: 32768, r: 8, p: 1 } as const;
const MAX_MEMORY = 64 * 1024 * 1024;
const SALT_BYTES = 16;
const HASH_BYTES = 32;
const PREFIX = 'scrypt';

/**
 * Run by verifyDummy for unknown userNames so that they take as long as known ones (DECISIONS 3.5).
 * Its hash is zeros: no password derives it in practice, and verifyDummy answers false anyway.
 */
const DUMMY_HASH = `${PREFIX}$${COST.N}$${COST.r}$${COST.p}$${Buffer.alloc(SALT_BYTES, 0x5a).toString('base64')}$${Buffer.alloc(HASH_BYTES).toString('base64')}`;

interface ParsedHash {
  N: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

/** What a caller is told to wait when every hash slot and every queue place is taken. */
const BUSY_RETRY_AFTER_S = 1;

/**
 * The turns of password hashing in this process (PASSWORD_HASH_CONCURRENCY running, at most
 * PASSWORD_HASH_QUEUE checks waiting), and the threads that run them. A flood of password checks
 * waits here, and past the queue is answered 503 with Retry-After at once (DECISIONS 3.5), instead
 * of starving every other request; while the service is busy, the hashes run at a lower priority
 * (PASSWORD_HASH_NICE) so that they take what CPU the other requests leave. The turns are shared per
 * source address (ConcurrencyLimit's parties, DECISIONS 4): a flood from a few addresses cannot keep
 * a person at another address waiting behind all of its guesses, or out of the queue.
 */
@Injectable()
export class PasswordHashSlots extends ConcurrencyLimit implements OnModuleDestroy {
  readonly threads: PasswordHashThreads;

  constructor(config: AppConfig) {
    super(
      config.passwordHashConcurrency,
      config.passwordHashQueue,
      () =>
        new DomainError('SERVICE_UNAVAILABLE', `Too many password checks are in progress; retry in ${BUSY_RETRY_AFTER_S} second.`, {
          'Retry-After': String(BUSY_RETRY_AFTER_S),
        }),
    );
    this.threads = new PasswordHashThreads(config.passwordHashNice ?? 0);
  }

  async onModuleDestroy(): Promise<void> {
    await this.threads.stop();
  }

  /** scrypt on one of the hash threads; the caller holds a turn. */
  derive(password: string, params: ParsedHash): Promise<Buffer> {
    return this.threads.derive({ password, salt: params.salt, keyLength: params.hash.length, N: params.N, r: params.r, p: params.p, maxmem: MAX_MEMORY });
  }
}

/**
 * Passwords of cardholders (DECISIONS 3.5): a memory-hard hash, scrypt from node:crypto, stored as
 * `scrypt$N$r$p$saltB64$hashB64` so that the cost can be raised later without breaking stored
 * hashes (verify reads the parameters from the stored string). Passwords are NFKC-normalized before
 * hashing (NIST SP 800-63B 5.1.1.2), so the same password typed on different keyboards matches.
 */
@Injectable()
export class PasswordHasher {
  constructor(private readonly slots: PasswordHashSlots) {}

  /** Throws a 400 naming `password` unless it has 12-1024 characters. */
  assertAcceptable(password: string): void {
    const length = [...normalize(password)].length;
    if (length < MIN_PASSWORD_LENGTH) throw invalidValue(`password must have at least ${MIN_PASSWORD_LENGTH} characters.`);
    if (length > MAX_PASSWORD_LENGTH) throw invalidValue(`password must have at most ${MAX_PASSWORD_LENGTH} characters.`);
  }

  async hash(password: string): Promise<string> {
    this.assertAcceptable(password);
    const salt = randomBytes(SALT_BYTES);
    // Setting a password is an authenticated administrator's call, not a flood: it waits for its turn.
    const hash = await this.slots.run(() => this.slots.derive(normalize(password), { ...COST, salt, hash: Buffer.alloc(HASH_BYTES) }), {
      maxWaiting: Infinity,
    });
    return [PREFIX, COST.N, COST.r, COST.p, salt.toString('base64'), hash.toString('base64')].join('$');
  }

  /**
   * True when `password` matches the stored hash; the comparison is constant-time. A password
   * outside the length rules is still run through scrypt (on a fixed value) so that its answer
   * takes as long as any other, and is false. A stored value that is not an scrypt string is false.
   * `party`: the source address the check is made for, which shares the hashing turns fairly with
   * other addresses (DECISIONS 4).
   */
  async verify(password: string, stored: string, party?: string): Promise<boolean> {
    const parsed = parseStored(stored);
    if (!parsed) {
      await this.verifyDummy(password, party);
      return false;
    }
    const acceptable = typeof password === 'string' && isAcceptableLength(password);
    const derived = await this.derive(acceptable ? normalize(password) : '', parsed, party);
    return timingSafeEqual(derived, parsed.hash) && acceptable;
  }

  /** Spends the same time as verify against a fixed hash, for unknown users; always false. */
  async verifyDummy(password: string, party?: string): Promise<false> {
    const parsed = parseStored(DUMMY_HASH)!;
    const acceptable = typeof password === 'string' && isAcceptableLength(password);
    const derived = await this.derive(acceptable ? normalize(password) : '', parsed, party);
    timingSafeEqual(derived, parsed.hash);
    return false;
  }

  /** Every check takes a turn of the slots, shared fairly by party, or is refused when the queue is full (for it). */
  private derive(password: string, params: ParsedHash, party?: string): Promise<Buffer> {
    return this.slots.run(() => this.slots.derive(password, params), { party });
  }
}

function normalize(password: string): string {
  return password.normalize('NFKC');
}

function isAcceptableLength(password: string): boolean {
  const length = [...normalize(password)].length;
  return length >= MIN_PASSWORD_LENGTH && length <= MAX_PASSWORD_LENGTH;
}

const STORED = /^scrypt\$(\d{1,8})\$(\d{1,3})\$(\d{1,3})\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/;

/** Reads a stored hash, refusing parameters outside sane bounds (so a damaged row cannot exhaust memory). */
function parseStored(stored: string): ParsedHash | undefined {
  const match = typeof stored === 'string' ? STORED.exec(stored) : null;
  if (!match) return undefined;
  const [N, r, p] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const salt = Buffer.from(match[4], 'base64');
  const hash = Buffer.from(match[5], 'base64');
  const powerOfTwo = N > 1 && (N & (N - 1)) === 0;
  // The memory scrypt needs (RFC 7914: 128*r*N for V, 128*r*p for B) must fit under maxmem.
  if (!powerOfTwo || r < 1 || p < 1 || 128 * r * (N + 2) + 128 * r * p > MAX_MEMORY) return undefined;
  if (salt.length < 16 || hash.length < 16 || hash.length > 64) return undefined;
  return { N, r, p, salt, hash };
}
