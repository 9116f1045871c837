'use strict';
// The bench's yardstick of a host's speed (issue 35): a bare Nest + Fastify application whose one
// route, GET /health/live, answers { status: 'ok' }, with none of the platform's code. Its CPU per
// request tells how fast this host runs the framework the platform is built on, and it does not
// move with the platform's own changes: the regression guard divides every workload by it
// (ops/bench/regression.js), and the targets, set where this route cost about 25 µs, are
// read against it. Run by ops/bench.js in a child process with the service's V8 flags; it answers
// the port it listens on through the IPC channel.
//   node ops/bench/nest-hello.js
require('reflect-metadata');
const { Controller, Get, Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { FastifyAdapter } = require('@nestjs/platform-fastify');

// Plain JavaScript, so the decorators are applied as functions.
class HealthController {
  live() {
    return { status: 'ok' };
  }
}
Reflect.decorate([Get('live')], HealthController.prototype, 'live', Object.getOwnPropertyDescriptor(HealthController.prototype, 'live'));
Reflect.decorate([Controller('health')], HealthController);

class HelloModule {}
Reflect.decorate([Module({ controllers: [HealthController] })], HelloModule);

async function main() {
  const app = await NestFactory.create(HelloModule, new FastifyAdapter(), { logger: false });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address();
  if (process.send) process.send({ port });
  else process.stdout.write(`listening on http://127.0.0.1:${port}/health/live\n`);
  // Ends with the bench: it closes the IPC channel, or sends SIGTERM.
  process.on('disconnect', () => void app.close().then(() => process.exit(0)));
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
}

main().catch((error) => {
  process.stderr.write(`nest-hello failed: ${error.stack ?? error}\n`);
  process.exit(1);
});
