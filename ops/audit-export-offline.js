#!/usr/bin/env node
'use strict';
// The offline check of an `audit export` (DECISIONS 11.2; docs/audit-events.md, "Offline verification"),
// for an auditor who runs none of the platform's code: plain Node.js (node:crypto, node:fs), nothing
// else. It recomputes every event's digest (SHA-256 of the canonical JSON of its content) and every
// link, checks each checkpoint's message against the digest at its position, and writes what openssl
// needs to check the signatures itself:
//   <dir>/pub.pem                        the public key of the export's first line (compare it with
//                                        GET /audit/v1/checkpoint-key, or use your own copy instead)
//   <dir>/checkpoint-<seq>.msg           the exact bytes signed
//   <dir>/checkpoint-<seq>.sig.der       the ES256 signature, raw r||s converted to DER
// then prints one `openssl dgst -sha256 -verify ... -signature ... ...` line per checkpoint.
// Usage: node ops/audit-export-offline.js <export.jsonl> <dir>; exit code 1 names the first problem.
const { Buffer } = require('node:buffer');
const { createHash, createPublicKey } = require('node:crypto');
const { mkdirSync, readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const GENESIS = '0'.repeat(64);

/** Members sorted by name, no whitespace, strings and numbers as JSON.stringify writes them (RFC 8785 for these values). */
function canonical(value) {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((item) => canonical(item === undefined ? null : item)).join(',')}]`;
  return `{${Object.keys(value)
    .filter((key) => value[key] !== undefined)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`)
    .join(',')}}`;
}

/** An ES256 signature as raw r||s (32 + 32 bytes) to DER: SEQUENCE { INTEGER r, INTEGER s } (RFC 3279 §2.2.3). */
function rawToDer(raw) {
  if (raw.length !== 64) throw new Error(`an ES256 signature is 64 bytes, this one ${raw.length}`);
  const integer = (bytes) => {
    let i = 0;
    while (i < bytes.length - 1 && bytes[i] === 0) i++;
    let body = bytes.subarray(i);
    if (body[0] & 0x80) body = Buffer.concat([Buffer.from([0]), body]);
    return Buffer.concat([Buffer.from([0x02, body.length]), body]);
  };
  const body = Buffer.concat([integer(raw.subarray(0, 32)), integer(raw.subarray(32))]);
  return Buffer.concat([Buffer.from([0x30, body.length]), body]);
}

function fail(message) {
  process.stderr.write(`Refused: ${message}\n`);
  process.exit(1);
}

const [file, dir] = process.argv.slice(2);
if (!file || !dir) fail('usage: node audit-export-offline.js <export.jsonl> <dir>');
const lines = readFileSync(file, 'utf8')
  .split('\n')
  .map((text, i) => ({ text, number: i + 1 }))
  .filter((line) => line.text.trim() !== '');
const header = JSON.parse(lines[0].text);
if (header.format !== 'audit-export/1') fail('line 1 is not the header of an audit-export/1 export');
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'pub.pem'), createPublicKey({ key: header.key, format: 'jwk' }).export({ format: 'pem', type: 'spki' }));

const digests = new Map();
let expectedSeq = header.from;
let expectedPrev = header.from === 1 ? GENESIS : undefined;
// A chain pruned by retention (DECISIONS 11.3): its first event links to the digest of the checkpoint
// signed at the prune point, which the export carries among its checkpoints (its signature is checked
// with openssl like every other).
if (header.pruned) {
  if (header.pruned.through !== header.from - 1) fail('line 1: the prune point is not the position before the first event');
  const anchor = lines.map((line) => JSON.parse(line.text)).find((line) => line.type === 'checkpoint' && line.seq === header.pruned.through);
  if (!anchor) fail(`the checkpoint at the prune point (chain position ${header.pruned.through}) is missing`);
  digests.set(anchor.seq, anchor.digest);
  expectedPrev = anchor.digest;
}
const commands = [];
for (const { text, number } of lines.slice(1)) {
  const line = JSON.parse(text);
  if (line.type === 'event') {
    const id = line.content && line.content.id;
    const digest = createHash('sha256').update(canonical(line.content), 'utf8').digest('hex');
    if (digest !== line.digest || line.content.prev !== line.prev_digest)
      fail(`line ${number}: event ${id} (chain position ${line.chain_seq}) does not match its digest`);
    if (line.chain_seq !== expectedSeq)
      fail(`line ${number}: event ${id} is at chain position ${line.chain_seq}, expected ${expectedSeq} (an event removed or inserted)`);
    if (expectedPrev !== undefined && line.prev_digest !== expectedPrev)
      fail(`line ${number}: event ${id} (chain position ${line.chain_seq}) does not link to the event before it`);
    digests.set(line.chain_seq, line.digest);
    expectedSeq = line.chain_seq + 1;
    expectedPrev = line.digest;
  } else if (line.type === 'checkpoint') {
    const message = canonical({ v: 1, type: 'audit-checkpoint', org: line.org, seq: line.seq, digest: line.digest, signedAt: line.signedAt });
    if (message !== line.message) fail(`line ${number}: the checkpoint of chain position ${line.seq} carries another message than the one it names`);
    if (line.org !== header.org) fail(`line ${number}: the checkpoint of chain position ${line.seq} is of another chain`);
    if (digests.get(line.seq) !== line.digest) fail(`line ${number}: the chain's digest at position ${line.seq} is not the one the checkpoint signed`);
    const msg = join(dir, `checkpoint-${line.seq}.msg`);
    const sig = join(dir, `checkpoint-${line.seq}.sig.der`);
    writeFileSync(msg, message, 'utf8');
    writeFileSync(sig, rawToDer(Buffer.from(line.signature, 'base64url')));
    commands.push(`openssl dgst -sha256 -verify ${join(dir, 'pub.pem')} -signature ${sig} ${msg}`);
  } else fail(`line ${number} is neither an event nor a checkpoint`);
}
const pruned = header.pruned
  ? ` (the ${header.pruned.events} events up to chain position ${header.pruned.through} were removed by retention behind its checkpoint)`
  : '';
process.stdout.write(
  `${digests.size - (header.pruned ? 1 : 0)} events${pruned} and ${commands.length} checkpoints agree; check each signature (each prints "Verified OK"):\n${commands.join('\n')}\n`,
);
