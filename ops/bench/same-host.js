#!/usr/bin/env node
'use strict';
// `npm run bench:same-host`: the regression guard measured on this host alone. The committed
// baseline (ops/bench/baseline.json) holds each workload's CPU per request as a multiple of the bare
// Nest + Fastify hello-world's, on the host it was taken on; those multiples hold only roughly on
// another (the cheapest routes read 30-45% higher on a VM of the same kind, with the code unchanged:
// docs/performance.md "Regression guard"). This checks out the baseline's commit in a temporary
// worktree with its own locked dependencies and builds it, then runs this checkout's `npm run bench`
// against the service built now and against that commit's (BENCH_SERVICE_ROOT), in turn, so that one
// bench loads and measures both, BENCH_ROUNDS (5) times each, and compares them pair by pair
// (regression.js compareRuns): a workload whose median rise is more than 30% fails (exit 1). About 3
// minutes a round for every workload. Five rounds, not three: on a 2-core VM shared with other
// tenants one run's figures move by a quarter (the bare hello-world read 27, 42 and 35 µs in three
// rounds ten minutes apart), and three rounds once read token by client_secret 45% dearer than the
// baseline, then 16% cheaper, with the same code (docs/performance.md "The regression guard on
// another host").
// The bench's own options (BENCH_WORKLOADS, BENCH_DURATION_S, ...) apply to both sides.
const { execFileSync } = require('node:child_process');
const { mkdtempSync, readFileSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { ROOT } = require('../setup');
const { BASELINE_FILE, compareRuns, describe } = require('./regression');

const ROUNDS = Number(process.env.BENCH_ROUNDS || 5);
const progress = (message) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);

const baseline = JSON.parse(readFileSync(BASELINE_FILE, 'utf8'));
if (!baseline.commit) {
  process.stderr.write(`${BASELINE_FILE} names no commit: retake it with node ops/bench/regression.js --baseline (docs/performance.md)\n`);
  process.exit(2);
}

const scratch = mkdtempSync(join(tmpdir(), 'bench-same-host-'));
const worktree = join(scratch, 'baseline');

/** One `npm run bench` of the service built in `serviceRoot`, its figures read back from the JSON it writes. */
function bench(serviceRoot, name) {
  const file = join(scratch, `${name}.json`);
  execFileSync(process.execPath, [join(ROOT, 'ops', 'bench.js')], {
    cwd: ROOT,
    env: { ...process.env, BENCH_JSON: file, BENCH_SERVICE_ROOT: serviceRoot },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return JSON.parse(readFileSync(file, 'utf8'));
}

try {
  progress(`checking out the baseline's commit ${baseline.commit.slice(0, 12)} and installing its locked dependencies...`);
  execFileSync('git', ['worktree', 'add', '--detach', worktree, baseline.commit], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: worktree, stdio: ['ignore', 'ignore', 'inherit'] });
  // The baseline's own build of its own sources (ops/setup.js of that commit).
  execFileSync(process.execPath, ['-e', "require('./ops/setup').build()"], { cwd: worktree, stdio: ['ignore', 'ignore', 'inherit'] });
  const now = [];
  const before = [];
  for (let round = 1; round <= ROUNDS; round++) {
    progress(`round ${round} of ${ROUNDS}: the code now`);
    now.push(bench(ROOT, `now-${round}`));
    progress(`round ${round} of ${ROUNDS}: the baseline's commit`);
    before.push(bench(worktree, `baseline-${round}`));
  }
  const rows = compareRuns(now, before);
  process.stdout.write(`\nService CPU per request, µs, round by round (the code now / the baseline's commit):\n`);
  for (const name of Object.keys(now[0].workloads)) {
    const us = (figures) => figures.workloads[name]?.serviceUs?.toFixed(0) ?? '-';
    const pairs = now.map((figures, round) => `${us(figures)} / ${us(before[round])}`);
    process.stdout.write(`  ${name.padEnd(16)} ${pairs.join('   ')}\n`);
  }
  process.stdout.write(`\nThe code now against ${baseline.commit.slice(0, 12)} on this host, ${ROUNDS} rounds in turn (median round):\n${describe(rows)}\n`);
  process.exitCode = rows.some((row) => row.failed) ? 1 : 0;
} finally {
  // The folder first, then git forgets the worktree whose folder is gone: neither fails when the
  // checkout never happened, so no error of the run is hidden behind one of the clean-up.
  rmSync(scratch, { recursive: true, force: true });
  execFileSync('git', ['worktree', 'prune'], { cwd: ROOT, stdio: 'ignore' });
}
