import { DomainError, invalidValue, parseBody, z } from '@app/common';

export const ENROLLMENT_DATA_SCHEMA = 'urn:vendor:scim:api:cms:1.0:EnrollmentData';
export const MAX_ENROLLMENT_ATTRIBUTES = 50;
export const MAX_PHOTO_BYTES = 512 * 1024;
/** Longest value other than the photo. */
const MAX_VALUE = 4096;
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export interface EnrollmentAttribute {
  name: string;
  value: string;
}

const bodySchema = z
  .object({
    schemas: z
      .array(z.string(), { message: 'must be an array of strings' })
      .refine((list) => list.includes(ENROLLMENT_DATA_SCHEMA), `must contain "${ENROLLMENT_DATA_SCHEMA}"`)
      .optional(),
    attributes: z
      .array(
        z
          .object(
            {
              name: z.string({ message: 'must be a string' }).regex(NAME, 'must be 1-64 characters of A-Z, a-z, 0-9, "_", "." and "-"'),
              value: z.string({ message: 'must be a string' }),
            },
            { message: 'must be an object {name, value}' },
          )
          .strict(),
        { message: 'is required: an array of {name, value}' },
      )
      .max(MAX_ENROLLMENT_ATTRIBUTES, `must hold at most ${MAX_ENROLLMENT_ATTRIBUTES} attributes`)
      .refine(
        (list) => new Set(list.map((a) => a.name.toLowerCase())).size === list.length,
        'must not name an attribute twice (names compare case-insensitively)',
      ),
  })
  .strict();

/**
 * POST /Users/{uid}/EnrollmentData (CREDENTIAL-MANAGEMENT.md "Resources"): at most 50 `{name, value}`;
 * names 1-64 characters of `[A-Za-z0-9_.-]`; `photo` is a base64 JPEG or PNG (by its magic bytes) of
 * at most 512 KiB decoded; other values at most 4096 characters.
 */
export function parseEnrollmentData(body: unknown): EnrollmentAttribute[] {
  const { attributes } = parseBody(bodySchema, body, 'EnrollmentData');
  for (const [index, attribute] of attributes.entries()) {
    if (attribute.name.toLowerCase() === 'photo') checkPhoto(attribute.value, index);
    else if (attribute.value.length > MAX_VALUE)
      throw invalidValue(`Invalid EnrollmentData: attributes.${index}.value (${attribute.name}) must be at most ${MAX_VALUE} characters.`);
  }
  return attributes;
}

function checkPhoto(value: string, index: number): void {
  const text = value.replace(/\s+/g, '');
  const where = `attributes.${index}.value (photo)`;
  // A base64 text longer than the limit's encoding cannot decode within it: refuse before decoding.
  if (text.length > Math.ceil(MAX_PHOTO_BYTES / 3) * 4)
    throw new DomainError('INVALID_VALUE', `Invalid EnrollmentData: ${where} is larger than ${MAX_PHOTO_BYTES / 1024} KiB; send a smaller JPEG or PNG.`);
  if (!BASE64.test(text)) throw invalidValue(`Invalid EnrollmentData: ${where} must be base64 (RFC 4648 section 4, with padding).`);
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length > MAX_PHOTO_BYTES)
    throw invalidValue(`Invalid EnrollmentData: ${where} is larger than ${MAX_PHOTO_BYTES / 1024} KiB; send a smaller JPEG or PNG.`);
  const jpeg = bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
  const png = bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  if (!jpeg && !png) throw invalidValue(`Invalid EnrollmentData: ${where} is neither a JPEG nor a PNG image (checked by its first bytes).`);
}
