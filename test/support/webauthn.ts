import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isoCBOR } from '@simplewebauthn/server/helpers';

/** What a ceremony's answer may be made wrong with (issue 33's bad input). */
export interface AnswerOverrides {
  origin?: string;
  rpId?: string;
  challenge?: string;
  /** The signature counter this answer reports (default: one more than the last). */
  counter?: number;
  /** Authenticator data flags (default: UP | UV, with AT on registration). */
  flags?: number;
  /** The user handle an assertion returns (default: the one registered; null for none). */
  userHandle?: string | null;
}

const UP = 0x01;
const UV = 0x04;
const AT = 0x40;

/**
 * A software passkey (WebAuthn level 2, attestation `none`): a P-256 key, the authenticator data,
 * clientDataJSON and attestation object a browser would send, built with node:crypto and the CBOR
 * encoder @simplewebauthn/server uses, so that e2e tests answer the service's ceremonies over HTTP.
 */
export class SoftPasskey {
  readonly id = randomBytes(32);
  private readonly privateKey: KeyObject;
  private readonly publicKey: KeyObject;
  counter = 0;
  userHandle?: string;

  constructor(
    readonly rpId: string,
    readonly origin: string,
  ) {
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.privateKey = pair.privateKey;
    this.publicKey = pair.publicKey;
  }

  get credentialId(): string {
    return this.id.toString('base64url');
  }

  /** The answer to navigator.credentials.create() with these options (PublicKeyCredentialCreationOptionsJSON). */
  register(options: { challenge: string; user: { id: string } }, overrides: AnswerOverrides = {}) {
    this.userHandle = options.user.id;
    const clientDataJSON = this.clientData('webauthn.create', overrides.challenge ?? options.challenge, overrides.origin);
    const jwk = this.publicKey.export({ format: 'jwk' });
    const cose = new Map<number, number | Uint8Array>([
      [1, 2],
      [3, -7],
      [-1, 1],
      [-2, Buffer.from(jwk.x!, 'base64url')],
      [-3, Buffer.from(jwk.y!, 'base64url')],
    ]);
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(this.id.length);
    const attested = Buffer.concat([Buffer.alloc(16), idLength, this.id, Buffer.from(isoCBOR.encode(cose))]);
    const authData = Buffer.concat([this.authDataHead(overrides, (overrides.flags ?? UP | UV) | AT, overrides.counter ?? 0), attested]);
    const attestationObject = isoCBOR.encode(
      new Map<string, unknown>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]) as never,
    );
    return {
      id: this.credentialId,
      rawId: this.credentialId,
      type: 'public-key',
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
      response: {
        clientDataJSON: clientDataJSON.toString('base64url'),
        attestationObject: Buffer.from(attestationObject).toString('base64url'),
        transports: ['internal'],
      },
    };
  }

  /** The answer to navigator.credentials.get() with these options (PublicKeyCredentialRequestOptionsJSON). */
  authenticate(options: { challenge: string }, overrides: AnswerOverrides = {}) {
    const counter = overrides.counter ?? this.counter + 1;
    this.counter = Math.max(this.counter, counter);
    const clientDataJSON = this.clientData('webauthn.get', overrides.challenge ?? options.challenge, overrides.origin);
    const authData = this.authDataHead(overrides, overrides.flags ?? UP | UV, counter);
    const signature = sign('sha256', Buffer.concat([authData, createHash('sha256').update(clientDataJSON).digest()]), this.privateKey);
    const userHandle = overrides.userHandle === undefined ? this.userHandle : overrides.userHandle;
    return {
      id: this.credentialId,
      rawId: this.credentialId,
      type: 'public-key',
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
      response: {
        clientDataJSON: clientDataJSON.toString('base64url'),
        authenticatorData: authData.toString('base64url'),
        signature: signature.toString('base64url'),
        ...(userHandle ? { userHandle } : {}),
      },
    };
  }

  private clientData(type: string, challenge: string, origin?: string): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin: origin ?? this.origin, crossOrigin: false }));
  }

  private authDataHead(overrides: AnswerOverrides, flags: number, counter: number): Buffer {
    const count = Buffer.alloc(4);
    count.writeUInt32BE(counter);
    return Buffer.concat([
      createHash('sha256')
        .update(overrides.rpId ?? this.rpId)
        .digest(),
      Buffer.from([flags]),
      count,
    ]);
  }
}

/** The ceremony options of the page's passkey form `formId` (its `data-options`, HTML-unescaped). */
export function passkeyOptions<T = { challenge: string; user: { id: string } }>(html: string, formId: string): T {
  const match = new RegExp(`<form [^>]*id="${formId}" data-passkey="[a-z]+" data-options="([^"]*)"`).exec(html);
  if (!match) throw new Error(`No passkey form ${formId} on the page: ${html.slice(0, 300)}`);
  const text = match[1]
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
  return JSON.parse(text) as T;
}

/** Flips one bit of a base64url value at `index` (a tampered answer). */
export function flipByte(value: string, index: number): string {
  const bytes = Buffer.from(value, 'base64url');
  bytes[index < 0 ? bytes.length + index : index] ^= 0x01;
  return bytes.toString('base64url');
}
