#!/usr/bin/env node
'use strict';
// Summarises a V8 CPU profile (.cpuprofile, from the service run with
// BENCH_SERVICE_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR") as text: the functions with the most
// self time and the most total time (self + callees), as shares of the busy samples, over a window
// of the profile (ops/bench/cpuprofile.js; ops/bench/flamegraph.js draws the same window).
//   node ops/bench/profile-summary.js FILE.cpuprofile [--last 10] [--skip-end 1] [--top 25]
const { parseWindowArgs, readProfile, samplesInWindow } = require('./cpuprofile');

function summarise(file, window, top) {
  const { start, stop, all, stacks } = samplesInWindow(readProfile(file), window);
  const self = new Map();
  const total = new Map();
  for (const stack of stacks) {
    const running = stack[stack.length - 1];
    self.set(running, (self.get(running) ?? 0) + 1);
    // A recursive function counts once per sample.
    for (const frame of new Set(stack)) total.set(frame, (total.get(frame) ?? 0) + 1);
  }
  const busy = stacks.length;
  const pct = (count) => `${((100 * count) / Math.max(busy, 1)).toFixed(1).padStart(5)}%`;
  const rows = (map) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, count]) => `  ${pct(count)}  ${name}`)
      .join('\n');
  process.stdout.write(
    `${file}\nwindow ${start.toFixed(1)}-${stop.toFixed(1)} s: ${all} samples, ${busy} busy (${((100 * busy) / Math.max(all, 1)).toFixed(0)}%)\n` +
      `self time:\n${rows(self)}\ntotal time (self + callees):\n${rows(total)}\n`,
  );
}

const { files, window, rest } = parseWindowArgs(process.argv.slice(2), ['--top']);
if (files.length !== 1) {
  process.stderr.write('usage: profile-summary.js FILE.cpuprofile [--last S] [--skip-end S] [--from S --to S] [--top N]\n');
  process.exit(2);
}
summarise(files[0], window, Number(rest.top ?? 25));
