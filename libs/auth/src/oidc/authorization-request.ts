/**
 * Reading an authorization request's parameters (RFC 6749 4.1.1, RFC 7636 4.3, OIDC Core 3.1.2.1;
 * DECISIONS 15.2): each at most once, within its length, in its syntax. Pure functions, so that
 * every refusal has one sentence saying what was wrong and how to fix it.
 */

/** Longest value of each parameter the endpoint reads. */
export const PARAMETER_LIMITS = {
  client_id: 130,
  redirect_uri: 2000,
  response_type: 64,
  response_mode: 64,
  scope: 1000,
  state: 1024,
  nonce: 512,
  code_challenge: 43,
  code_challenge_method: 16,
  prompt: 100,
  max_age: 9,
  login_hint: 128,
  login_after: 64,
} as const;

export type KnownParameter = keyof typeof PARAMETER_LIMITS;

/** The scopes this OpenID Provider knows (DECISIONS 15.2). */
export const SUPPORTED_SCOPES = ['openid', 'offline_access'] as const;

/** Raw parameters as Fastify parses them: a repeated parameter is an array. */
export type RawParameters = Record<string, unknown>;

export class ParameterProblem extends Error {
  constructor(readonly description: string) {
    super(description);
  }
}

/** The parameter's single value, undefined when absent; a ParameterProblem when repeated, too long or not text. */
export function single(raw: RawParameters, name: KnownParameter): string | undefined {
  const value = raw[name];
  if (value === undefined) return undefined;
  if (Array.isArray(value)) throw new ParameterProblem(`The parameter ${name} is given more than once; send it once (RFC 6749 3.1).`);
  if (typeof value !== 'string') throw new ParameterProblem(`The parameter ${name} must be text.`);
  const limit = PARAMETER_LIMITS[name];
  if (value.length > limit) throw new ParameterProblem(`The parameter ${name} is longer than ${limit} characters.`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) throw new ParameterProblem(`The parameter ${name} contains a control character.`);
  return value;
}

/** The first parameter given more than once, if any: RFC 6749 3.1 forbids every repetition. */
export function repeatedParameter(raw: RawParameters): string | undefined {
  return Object.entries(raw).find(([, value]) => Array.isArray(value))?.[0];
}

/** RFC 6749 3.3: scope-tokens of %x21 / %x23-5B / %x5D-7E separated by single spaces. */
export function parseScope(value: string): string[] {
  if (!/^[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*$/.test(value)) {
    throw new ParameterProblem('The parameter scope must be scope names separated by single spaces, such as "openid offline_access".');
  }
  return [...new Set(value.split(' '))];
}

export type Prompt = 'none' | 'login' | 'consent' | 'select_account';

/** OIDC Core 3.1.2.1: space-separated values; `none` stands alone. */
export function parsePrompt(value: string): Set<Prompt> {
  const values = value.split(' ');
  const known: Prompt[] = ['none', 'login', 'consent', 'select_account'];
  for (const v of values) {
    if (!known.includes(v as Prompt))
      throw new ParameterProblem(`The parameter prompt has the value "${v.slice(0, 40)}"; use none, login, consent or select_account.`);
  }
  const prompts = new Set(values as Prompt[]);
  if (prompts.has('none') && prompts.size > 1) throw new ParameterProblem('prompt=none cannot be combined with other prompt values.');
  return prompts;
}

/** RFC 7636 4.2: BASE64URL(SHA256(code_verifier)) is exactly 43 characters. */
export const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** RFC 7636 4.1: 43 to 128 unreserved characters. */
export const CODE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
