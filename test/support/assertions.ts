import type { Response } from 'supertest';

export const SCIM_ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** DECISIONS 6: the SCIM families answer application/scim+json, everything else application/json. */
const SCIM_FAMILY = /^\/(aims\/rs\/sc[i]?m\/|credential-management\/|configuration\/)/;

/**
 * A SCIM error answer (DECISIONS 7): the status, the SCIM error body with its scimType (or none), a
 * detail that contains (string) or matches (RegExp) what the test expects, and the media type of the
 * path's family.
 */
export function expectScimError(response: Response, status: number, scimType: string | undefined, detail: string | RegExp): void {
  expect({ status: response.status, body: response.body }).toEqual({
    status,
    body: {
      schemas: [SCIM_ERROR_SCHEMA],
      status: String(status),
      ...(scimType ? { scimType } : {}),
      detail: typeof detail === 'string' ? expect.stringContaining(detail) : expect.stringMatching(detail),
    },
  });
  const path = new URL((response as unknown as { request: { url: string } }).request.url).pathname;
  expect(response.headers['content-type']).toMatch(SCIM_FAMILY.test(path) ? /^application\/scim\+json/ : /^application\/json/);
}
