import { ApiError } from '../api/client';

/**
 * The server's 400 at the fields it names (Keycloak's form per settings page): a validation detail
 * reads "Invalid <what>: <field>: <reason>; <field>: <reason>." (libs/common parseBody), and a name
 * taken is a 409 whose sentence says "named". What names no field of the form stays for the form's
 * own error line, in the server's words.
 */
export function fieldErrors<F extends string>(error: unknown, fields: readonly F[], nameField?: F): { at: Partial<Record<F, string>>; rest: string | null } {
  if (!error) return { at: {}, rest: null };
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof ApiError && error.status === 409 && nameField && / named /.test(message))
    return { at: { [nameField]: message } as Partial<Record<F, string>>, rest: null };
  const match = /^Invalid [^:]+: (.*?)\.?$/.exec(message);
  if (!match) return { at: {}, rest: message };
  const at: Partial<Record<F, string>> = {};
  const rest: string[] = [];
  for (const problem of match[1].split('; ')) {
    const colon = problem.indexOf(': ');
    const field = (colon > 0 ? problem.slice(0, colon).split('.')[0] : '') as F;
    if (fields.includes(field)) at[field] = at[field] ? `${at[field]}; ${problem.slice(colon + 2)}` : problem.slice(colon + 2);
    else rest.push(problem);
  }
  return { at, rest: rest.length > 0 ? rest.join('; ') : null };
}
