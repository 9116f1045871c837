#!/usr/bin/env node
'use strict';
// The container's HEALTHCHECK (Dockerfile): exits 0 when the service in this container answers
// /health/ready with 200, else 1, using Node's own HTTP client (the image has no curl). It finds the
// service through the service's own variables: PORT, HOST, and TLS_CERT_FILE (then HTTPS, without
// verifying the certificate: the peer is this container's own listener).
const http = require('node:http');
const https = require('node:https');

const TIMEOUT_MS = 4000;
const { PORT, HOST, TLS_CERT_FILE } = process.env;
const port = Number(PORT || 8080);
const host = !HOST || HOST === '0.0.0.0' || HOST === '::' ? '127.0.0.1' : HOST;
const client = TLS_CERT_FILE ? https : http;

const request = client.get({ host, port, path: '/health/ready', timeout: TIMEOUT_MS, rejectUnauthorized: false }, (response) => {
  response.resume();
  if (response.statusCode !== 200) process.stderr.write(`/health/ready answered ${response.statusCode}\n`);
  process.exit(response.statusCode === 200 ? 0 : 1);
});
request.on('timeout', () => request.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
request.on('error', (error) => {
  process.stderr.write(`health check failed: ${error.message}\n`);
  process.exit(1);
});
