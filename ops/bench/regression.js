'use strict';
// The bench's regression guard (issue 35): `npm run bench` writes its figures as JSON (BENCH_JSON,
// default .test-run/bench.json), and test/bench-regression.spec.ts compares the service's CPU per
// request of each workload with ops/bench/baseline.json. Hosts differ in speed by up to five times,
// so neither side is compared in microseconds: each workload's CPU per request is divided by that of
// the same run's bare Nest + Fastify hello-world (`nest-hello`, ops/bench/nest-hello.js), and a ratio
// more than TOLERANCE above the baseline's fails. The yardstick used to be the platform's own
// cheapest route (`hello`), which moves with the platform's request pipeline (a change that slowed
// every route left every ratio where it was) and did not move like the other routes between hosts
// (the same code, token by client_secret: 4.7x `hello` on one VM, 11.2x on a faster one;
// docs/performance.md "Regression guard").
//   node ops/bench/regression.js [FIGURES.json]   compares and exits 1 on a rise
//   node ops/bench/regression.js --baseline FIGURES.json   prints the baseline those figures make
// The committed ratios hold only roughly from one host to another; ops/bench/same-host.js measures the
// baseline's commit again beside the code now, on this host, and compares those (compareRuns).
const { execFileSync } = require('node:child_process');
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

const TOLERANCE = 0.3;
const REFERENCE = 'nest-hello';
const BASELINE_FILE = join(__dirname, 'baseline.json');
const FIGURES_FILE = join(__dirname, '..', '..', '.test-run', 'bench.json');

/**
 * { workload: service CPU per request / the reference's } of one run's figures: the reference measured
 * right after the workload (`referenceUs`) when the bench did, else the run's one measurement of it.
 */
function ratios(figures) {
  const reference = figures.workloads?.[REFERENCE]?.serviceUs;
  if (!(reference > 0)) throw new Error(`the figures have no CPU per request of the reference workload "${REFERENCE}"`);
  const result = {};
  for (const [name, workload] of Object.entries(figures.workloads)) {
    if (name !== REFERENCE && workload.serviceUs > 0) result[name] = workload.serviceUs / (workload.referenceUs > 0 ? workload.referenceUs : reference);
  }
  return result;
}

/**
 * Each workload of the baseline that the figures measured: its ratio then and now, and whether it
 * rose by more than `tolerance`. A workload the run did not measure is not compared (BENCH_WORKLOADS).
 */
function compare(figures, baseline, tolerance = TOLERANCE) {
  const now = ratios(figures);
  return Object.entries(baseline.ratios)
    .filter(([name]) => now[name] !== undefined)
    .map(([name, before]) => ({ name, before, now: now[name], rise: now[name] / before - 1, failed: now[name] > before * (1 + tolerance) }));
}

/**
 * The same comparison made on one host: runs of the code now and of the baseline's commit, taken in
 * turn (ops/bench/same-host.js), paired round by round. Each pair gives a workload's ratio (to its own
 * run's reference) now and then, whose quotient is its rise in that round; the median round's decides,
 * so one noisy round neither fails nor passes it. What one host's ratios are does not matter here:
 * only how the two sides' differ on it (the committed ratios can move 30-45% between VMs of one kind
 * for the cheapest routes, with the code unchanged; docs/performance.md "Regression guard").
 */
function compareRuns(nowRuns, baselineRuns, tolerance = TOLERANCE) {
  if (nowRuns.length === 0 || nowRuns.length !== baselineRuns.length) {
    throw new Error(`runs are compared in pairs: ${nowRuns.length} of the code now, ${baselineRuns.length} of the baseline`);
  }
  const pairs = nowRuns.map((figures, round) => [ratios(figures), ratios(baselineRuns[round])]);
  const names = Object.keys(pairs[0][1]).filter((name) => pairs.every(([now, before]) => now[name] !== undefined && before[name] !== undefined));
  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)];
  return names.map((name) => {
    const rises = pairs.map(([now, before]) => now[name] / before[name]);
    const middle = median(rises);
    const [now, before] = pairs[rises.indexOf(middle)];
    return { name, before: before[name], now: now[name], rise: middle - 1, failed: middle > 1 + tolerance };
  });
}

function describe(rows) {
  return rows
    .map(
      ({ name, before, now, rise, failed }) =>
        `${failed ? 'ROSE' : 'ok  '} ${name.padEnd(16)} ${before.toFixed(2)}x -> ${now.toFixed(2)}x the bare Nest + Fastify hello-world's CPU per request (${rise >= 0 ? '+' : ''}${(rise * 100).toFixed(0)}%)`,
    )
    .join('\n');
}

const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));

if (require.main === module) {
  const args = process.argv.slice(2);
  if (args[0] === '--baseline') {
    const figures = readJson(args[1] ?? FIGURES_FILE);
    const rounded = Object.fromEntries(Object.entries(ratios(figures)).map(([name, ratio]) => [name, Number(ratio.toFixed(3))]));
    // The code measured: take the figures from a clean tree, so that ops/bench/same-host.js measures this commit again.
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: __dirname, encoding: 'utf8' }).trim();
    process.stdout.write(`${JSON.stringify({ machine: figures.machine, date: figures.date, reference: REFERENCE, commit, ratios: rounded }, null, 2)}\n`);
  } else {
    const rows = compare(readJson(args[0] ?? FIGURES_FILE), readJson(BASELINE_FILE));
    process.stdout.write(`${describe(rows)}\n`);
    process.exit(rows.some((row) => row.failed) ? 1 : 0);
  }
}

module.exports = { TOLERANCE, REFERENCE, BASELINE_FILE, FIGURES_FILE, ratios, compare, compareRuns, describe };
