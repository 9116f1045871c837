import { X509Certificate, createPrivateKey } from 'node:crypto';
import { z } from '@app/common';

/** The most a PEM field may hold (a chain of a few certificates). */
const MAX_PEM = 65_536;

const pem = (what: string) =>
  z
    .string({ message: `must be ${what} in PEM form, as a string` })
    .min(1)
    .max(MAX_PEM);

/**
 * A destination as an administrator writes it (DECISIONS 11.4). A webhook names an https `url`; a
 * syslog receiver a `host` and a `port` (6514, RFC 5425, when left out). `caCertificate` is the CA to
 * trust instead of the system's; `clientCertificate` with `clientKey` is presented to the receiver
 * (the key is stored sealed and never shown again).
 */
export const createDestinationSchema = z
  .object({
    name: z.string().trim().min(1).max(200),
    type: z.enum(['syslog', 'webhook'], { message: 'must be syslog or webhook' }),
    url: z.string().min(1).max(2048).optional(),
    host: z.string().min(1).max(253).optional(),
    port: z.number().int().min(1).max(65535).optional(),
    enabled: z.boolean().optional(),
    caCertificate: pem('a CA certificate').nullable().optional(),
    clientCertificate: pem('a certificate').nullable().optional(),
    clientKey: pem('a private key').nullable().optional(),
  })
  .strict();

/** A change: what is given changes (null clears a certificate), the type stays. */
export const updateDestinationSchema = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    url: z.string().min(1).max(2048).optional(),
    host: z.string().min(1).max(253).optional(),
    port: z.number().int().min(1).max(65535).optional(),
    enabled: z.boolean().optional(),
    caCertificate: pem('a CA certificate').nullable().optional(),
    clientCertificate: pem('a certificate').nullable().optional(),
    clientKey: pem('a private key').nullable().optional(),
  })
  .strict();

export type CreateDestinationInput = z.infer<typeof createDestinationSchema>;
export type UpdateDestinationInput = z.infer<typeof updateDestinationSchema>;

/** The problem with a webhook URL, or undefined: https, a host, no credentials, no fragment. */
export function webhookUrlProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'url must be an absolute https URL, e.g. https://siem.example.com/hooks/audit';
  }
  if (url.protocol !== 'https:') return 'url must use https (the events and their signature travel over TLS)';
  if (url.username || url.password) return 'url must not carry a user name or password (the call is signed with the destination secret)';
  if (url.hash) return 'url must not have a fragment';
  return undefined;
}

/** The problem with a syslog host (a DNS name or an IP literal), or undefined. */
export function syslogHostProblem(host: string): string | undefined {
  const bare = host.replace(/^\[|\]$/g, '');
  if (!URL.canParse(`https://${bare.includes(':') ? `[${bare}]` : bare}/`) || /[\s/?#@]/.test(bare)) return 'host must be a DNS name or an IP address';
  return undefined;
}

/** The problem with a CA certificate field (one or more PEM certificates), or undefined. */
export function caCertificateProblem(text: string): string | undefined {
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) return 'caCertificate must hold at least one PEM certificate (-----BEGIN CERTIFICATE-----)';
  try {
    for (const block of blocks) new X509Certificate(block);
  } catch {
    return 'caCertificate holds a certificate that cannot be read';
  }
  return undefined;
}

/** The problem with a client certificate and key pair, or undefined: both readable, and the key is the certificate's. */
export function clientPairProblem(certificate: string, key: string): string | undefined {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certificate);
  } catch {
    return 'clientCertificate must be a PEM certificate';
  }
  try {
    if (!cert.checkPrivateKey(createPrivateKey(key))) return 'clientKey is not the private key of clientCertificate';
  } catch {
    return 'clientKey must be an unencrypted PEM private key (PKCS#8, PKCS#1 or SEC1)';
  }
  return undefined;
}
