/**
 * DECISIONS 10: a connection string is `Key=Value;` pairs holding `Endpoint` (an `sb://` URL),
 * `SharedAccessKeyName` and `SharedAccessKey`, as a notification hub's access policy shows it, e.g.
 * `Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=...;`.
 * Other keys (`EntityPath`, ...) are allowed. Values may contain `=` (base64 keys); the final `;`
 * may be left out. Problems are described without ever quoting the value: it is a secret.
 */
export const MAX_CONNECTION_STRING_LENGTH = 2048;

const FORMAT = 'Endpoint=sb://<namespace>/;SharedAccessKeyName=<name>;SharedAccessKey=<key>;';
const REQUIRED_KEYS = ['Endpoint', 'SharedAccessKeyName', 'SharedAccessKey'];

/** The problem with a connection string, or undefined when it is well formed. */
export function connectionStringProblem(value: string): string | undefined {
  if (value.length === 0) return `must not be empty; the format is ${FORMAT}`;
  if (value.length > MAX_CONNECTION_STRING_LENGTH) return `must be at most ${MAX_CONNECTION_STRING_LENGTH} characters`;
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(value)) return 'must not contain control characters';
  const body = value.endsWith(';') ? value.slice(0, -1) : value;
  const pairs = new Map<string, string>();
  for (const [index, pair] of body.split(';').entries()) {
    const equals = pair.indexOf('=');
    const key = equals > 0 ? pair.slice(0, equals).trim() : '';
    const pairValue = equals > 0 ? pair.slice(equals + 1).trim() : '';
    if (!/^[A-Za-z][A-Za-z0-9]*$/.test(key) || pairValue === '') {
      return `part ${index + 1} is not a Key=Value pair; the format is ${FORMAT}`;
    }
    if ([...pairs.keys()].some((known) => known.toLowerCase() === key.toLowerCase())) return `has ${key} twice`;
    pairs.set(key, pairValue);
  }
  const missing = REQUIRED_KEYS.filter((key) => !pairs.has(key));
  if (missing.length > 0) return `lacks ${missing.join(', ')}; the format is ${FORMAT}`;
  if (!isServiceBusUrl(pairs.get('Endpoint')!)) return 'Endpoint must be an sb:// URL with a host name, e.g. sb://namespace.servicebus.windows.net/';
  return undefined;
}

/** What the sender signs with (DECISIONS 10.2), from a connection string that connectionStringProblem accepted. */
export interface ConnectionStringParts {
  /** The endpoint's host, with its port when one is given (`ns.servicebus.windows.net`, `127.0.0.1:4711`). */
  host: string;
  /**
   * The host name alone, for the outbound rule (DECISIONS 10.2), as the https URL parser reads it:
   * `sb:` is not a special scheme, so its parser leaves `127.1` or `2130706433` as written, while the
   * request goes to 127.0.0.1.
   */
  hostname: string;
  keyName: string;
  key: string;
}

export function connectionStringParts(value: string): ConnectionStringParts {
  const problem = connectionStringProblem(value);
  if (problem) throw new Error(`The connection string ${problem}.`);
  const body = value.endsWith(';') ? value.slice(0, -1) : value;
  const pairs = new Map(
    body.split(';').map((pair) => {
      const equals = pair.indexOf('=');
      return [pair.slice(0, equals).trim(), pair.slice(equals + 1).trim()] as const;
    }),
  );
  const endpoint = new URL(pairs.get('Endpoint')!);
  const hostname = new URL(`https://${endpoint.host}/`).hostname;
  // The port as written (the https parser would drop a 443, which is not the default of plain http).
  const host = endpoint.port ? `${hostname}:${endpoint.port}` : hostname;
  return { host, hostname, keyName: pairs.get('SharedAccessKeyName')!, key: pairs.get('SharedAccessKey')! };
}

function isServiceBusUrl(text: string): boolean {
  if (!/^sb:\/\//i.test(text)) return false;
  try {
    const url = new URL(text);
    // The host must also be one an https URL can hold: the send goes to https://{host}.
    return url.protocol === 'sb:' && url.hostname.length > 0 && url.username === '' && url.password === '' && URL.canParse(`https://${url.host}/`);
  } catch {
    return false;
  }
}
