'use strict';
// One autocannon run in a child process (in the bench process it would share a core with the
// bench's own work): answers the average rate, p50/p99 latency and the number of requests; any
// non-2xx answer, error or timeout fails the run.
const { execFile } = require('node:child_process');

function autocannon(url, { method = 'GET', headers = {}, body, seconds, connections }) {
  const args = [require.resolve('autocannon/autocannon.js'), '-m', method, '-c', String(connections), '-d', String(seconds), '-j'];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}=${value}`);
  if (body) args.push('-b', body);
  args.push(url);
  return new Promise((resolve, reject) =>
    execFile(process.execPath, args, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout) => {
      if (error) return reject(error);
      const result = JSON.parse(stdout);
      if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
        return reject(new Error(`${method} ${url}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`));
      }
      resolve({ rate: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, total: result.requests.total });
    }),
  );
}

module.exports = { autocannon };
