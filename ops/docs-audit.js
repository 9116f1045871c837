#!/usr/bin/env node
'use strict';
// `npm run docs:audit`: writes docs/audit-events.md from the audit catalogue (libs/audit), which a
// test keeps equal to it. Reads the built catalogue, so it builds the one file first.
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { ROOT, run } = require('./setup');

run(join(ROOT, 'node_modules', '.bin', 'swc'), ['libs/audit/src/audit-catalogue.ts', '-o', join(ROOT, 'dist', 'audit-catalogue.js'), '--quiet']);
const { auditCatalogueMarkdown } = require(join(ROOT, 'dist', 'audit-catalogue.js'));
writeFileSync(join(ROOT, 'docs', 'audit-events.md'), auditCatalogueMarkdown());
process.stdout.write('Wrote docs/audit-events.md\n');
