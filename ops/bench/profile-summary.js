#!/usr/bin/env node
'use strict';
// Summarises a CPU profile as text: the functions with the most self time and the most total time
// (self + callees), or with --by-package the packages whose code the samples ran (native work counted
// to the JavaScript that asked for it: ops/bench/cpuprofile.js samplesByPackage), as shares of the
// busy samples. Reads V8's profile (.cpuprofile, from the service run with
// BENCH_SERVICE_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR") over a window of it
// (ops/bench/cpuprofile.js; ops/bench/flamegraph.js draws the same window), or the text of
// `perf script` with --perf (ops/bench/flamegraph.js perfStacks: CPU time rather than V8's clock
// samples, every thread or --thread TID's).
//   node ops/bench/profile-summary.js FILE.cpuprofile [--last 10] [--skip-end 1] [--top 25] [--by-package]
//   node ops/bench/profile-summary.js --perf PERF-SCRIPT.txt [--thread TID] [--top 25] [--by-package]
const { readFileSync } = require('node:fs');
const { parseWindowArgs, readProfile, samplesInWindow, samplesByPackage } = require('./cpuprofile');
const { perfStacks } = require('./flamegraph');

function summarise({ title, stacks, all }, { top, byPackage }) {
  const busy = stacks.length;
  const pct = (count) => `${((100 * count) / Math.max(busy, 1)).toFixed(1).padStart(5)}%`;
  const rows = (map) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, count]) => `  ${pct(count)}  ${name}`)
      .join('\n');
  const heading = `${title}\n${all === undefined ? `${busy} samples` : `${all} samples, ${busy} busy (${((100 * busy) / Math.max(all, 1)).toFixed(0)}%)`}\n`;
  if (byPackage) return `${heading}by package:\n${rows(samplesByPackage(stacks))}\n`;
  const self = new Map();
  const total = new Map();
  for (const stack of stacks) {
    const running = stack[stack.length - 1];
    self.set(running, (self.get(running) ?? 0) + 1);
    // A recursive function counts once per sample.
    for (const frame of new Set(stack)) total.set(frame, (total.get(frame) ?? 0) + 1);
  }
  return `${heading}self time:\n${rows(self)}\ntotal time (self + callees):\n${rows(total)}\n`;
}

if (require.main === module) {
  const argv = process.argv.slice(2);
  const byPackage = argv.includes('--by-package');
  const { files, window, rest } = parseWindowArgs(
    argv.filter((arg) => arg !== '--by-package'),
    ['--top', '--perf', '--thread'],
  );
  if (files.length !== (rest.perf === undefined ? 1 : 0)) {
    process.stderr.write(
      'usage: profile-summary.js FILE.cpuprofile [--last S] [--skip-end S] [--from S --to S] [--top N] [--by-package]\n' +
        '       profile-summary.js --perf PERF-SCRIPT.txt [--thread TID] [--top N] [--by-package]\n',
    );
    process.exit(2);
  }
  let profile;
  if (rest.perf !== undefined) {
    profile = { title: `${rest.perf}${rest.thread ? `, thread ${rest.thread}` : ''} (perf)`, stacks: perfStacks(readFileSync(rest.perf, 'utf8'), rest.thread) };
  } else {
    const { start, stop, all, stacks } = samplesInWindow(readProfile(files[0]), window);
    profile = { title: `${files[0]}\nwindow ${start.toFixed(1)}-${stop.toFixed(1)} s`, stacks, all };
  }
  process.stdout.write(summarise(profile, { top: Number(rest.top ?? 25), byPackage }));
}

module.exports = { summarise };
