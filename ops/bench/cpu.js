'use strict';
// CPU time spent by the service per request: a steadier figure than req/s on a shared 2-core
// machine, where the service, its PostgreSQL and the load generator compete for the same cores
// and throughput swings by ±15% from run to run. Read from /proc (Linux): user + system time of
// the service's process tree, split into the Node processes and the embedded PostgreSQL ones.
const { readdirSync, readFileSync } = require('node:fs');

const TICKS_PER_SECOND = 100; // USER_HZ, 100 on every Linux architecture Node supports

function readStat(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // comm is in parentheses and may contain spaces; the fields after it are space-separated.
    const close = text.lastIndexOf(')');
    const comm = text.slice(text.indexOf('(') + 1, close);
    const fields = text.slice(close + 2).split(' ');
    // utime + stime, plus cutime + cstime: the time of children that ended and were waited for
    // (PostgreSQL's short-lived workers), which otherwise leaves the tree with them.
    const ticks = [11, 12, 13, 14].reduce((sum, index) => sum + Number(fields[index]), 0);
    return { pid, comm, ppid: Number(fields[1]), ticks };
  } catch {
    return undefined; // the process ended between listing and reading
  }
}

/** { node, postgres } CPU seconds of `rootPid` and all its descendants; undefined off Linux. */
function processTreeCpu(rootPid) {
  let pids;
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  const stats = pids.map((name) => readStat(Number(name))).filter(Boolean);
  const children = new Map();
  for (const stat of stats) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), stat]);
  const root = stats.find((stat) => stat.pid === rootPid);
  if (!root) return undefined;
  const totals = { node: 0, postgres: 0 };
  for (const queue = [root]; queue.length > 0;) {
    const stat = queue.pop();
    totals[stat.comm.startsWith('postgres') ? 'postgres' : 'node'] += stat.ticks / TICKS_PER_SECOND;
    queue.push(...(children.get(stat.pid) ?? []));
  }
  return totals;
}

/** Starts a measurement; the returned function answers CPU µs per request for `requests` requests. */
function startCpuMeasurement(rootPid) {
  const before = processTreeCpu(rootPid);
  const generatorBefore = process.cpuUsage();
  return (requests) => {
    const after = processTreeCpu(rootPid);
    const generator = process.cpuUsage(generatorBefore);
    const perRequest = (seconds) => (requests > 0 ? (seconds * 1e6) / requests : undefined);
    return {
      serviceUs: before && after ? perRequest(after.node - before.node) : undefined,
      // Zero when the database is not the embedded one (DATABASE_URL): not ours to measure.
      databaseUs: before && after && after.postgres > 0 ? perRequest(after.postgres - before.postgres) : undefined,
      generatorUs: perRequest((generator.user + generator.system) / 1e6),
    };
  };
}

module.exports = { startCpuMeasurement };
