#!/usr/bin/env node
'use strict';
// autocannon through its API, in a process of its own, for bodies its command line cannot send: it
// reads `-i FILE` as UTF-8, so a binary body (a DER OCSP request) arrives with every byte above 0x7f
// replaced by U+FFFD. Options as JSON in argv[2]: { url, method, headers, bodyBase64, connections,
// seconds }; prints autocannon's result as JSON on stdout, as `autocannon -j` does.
const { Buffer } = require('node:buffer');
const autocannon = require('autocannon');

const { url, method = 'GET', headers = {}, bodyBase64, connections, seconds } = JSON.parse(process.argv[2]);
autocannon(
  { url, method, headers, body: bodyBase64 === undefined ? undefined : Buffer.from(bodyBase64, 'base64'), connections, duration: seconds },
  (error, result) => {
    if (error) {
      console.error(error);
      process.exit(1);
    }
    process.stdout.write(JSON.stringify(result));
  },
);
