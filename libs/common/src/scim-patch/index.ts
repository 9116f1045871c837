export { applyPatch, matchesFilter, MAX_PATCH_OPERATIONS, PATCH_OP_SCHEMA, type PatchTarget } from './patch-op';
