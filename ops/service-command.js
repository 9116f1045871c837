'use strict';
// How the built service is started, in one place: by `npm start` (ops/start.js), the benches and the
// tests. The container's CMD spells the same command, and test/deploy-container.spec.ts holds it to
// this file. Cluster workers (WORKERS > 1) inherit the primary's flags.
const { join } = require('node:path');

/** The service's entry point, relative to the repository (and to the image's WORKDIR). */
const SERVICE_ENTRY = 'dist/apps/api/src/main.js';

/**
 * V8 flags the service runs with. `--max-semi-space-size=64`: a young generation of 2 x 64 MB
 * instead of V8's 2 x 16 MB. Every request allocates objects that die with it; with 16 MB, 32
 * requests in flight fill a semi-space every few milliseconds, so each scavenge finds live request
 * state, copies it and soon promotes it to the old generation, whose collection is dearer. Measured
 * with `npm run bench:cm` (docs/decisions.md, "Runtime flags"): 5-16% less Node CPU per request on
 * every route, for ~20 MB more resident memory under load.
 */
const SERVICE_NODE_FLAGS = ['--max-semi-space-size=64'];

/**
 * The arguments after `node` that start the built service; `extraFlags` go before the entry point.
 * `root`: the checkout whose build runs (another commit's, for ops/bench/same-host.js).
 */
function serviceArgs(extraFlags = [], root = join(__dirname, '..')) {
  return [...SERVICE_NODE_FLAGS, ...extraFlags, join(root, SERVICE_ENTRY)];
}

module.exports = { SERVICE_ENTRY, SERVICE_NODE_FLAGS, serviceArgs };
