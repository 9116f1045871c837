import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { startTracing } from '@app/observability';

/**
 * Imported first by main.ts, before Nest, pg and the HTTP server load: OpenTelemetry's HTTP and pg
 * instrumentations patch those modules as they are required (DECISIONS 13.2). Without
 * OTEL_EXPORTER_OTLP_ENDPOINT nothing of OpenTelemetry is loaded.
 */
function serviceVersion(): string {
  // The repository's package.json, above src/ in the sources and above dist/ once built.
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version ?? 'unknown';
  }
  return 'unknown';
}

// The one read of the environment outside libs/config: it must come before the configuration loads
// (DECISIONS 13.2), and the variables are the OpenTelemetry SDK's own, which it reads itself too.
// eslint-disable-next-line no-restricted-properties
if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT) startTracing(process.env, serviceVersion());
