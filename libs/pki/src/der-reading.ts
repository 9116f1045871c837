import * as asn1js from 'asn1js';

/** Tag classes as X.690 numbers them (asn1js counts from 1). */
export const UNIVERSAL = 0;
export const CONTEXT = 2;

/** Whether `block` has this tag (class and number). */
export const isTagged = (block: asn1js.AsnType, tagClass: number, tagNumber: number) =>
  block.idBlock.tagClass === tagClass + 1 && block.idBlock.tagNumber === tagNumber;

/** The items of a SEQUENCE, or undefined for anything else. */
export function sequenceItems(block: asn1js.AsnType | undefined): asn1js.AsnType[] | undefined {
  return block instanceof asn1js.Sequence ? block.valueBlock.value : undefined;
}
