export { createLogger, createLoggers, isoTimeOncePerMillisecond, LinesOfATurn, LOGGER, type Logger, type Loggers, PinoNestLogger, serviceLog } from './logger';
export { listenClusterMetrics, Metrics } from './metrics';
export { ObservabilityModule } from './observability.module';
export { annotateCorrelation, annotateRequest, CORRELATION_ID_ATTRIBUTE, redactAttributes, startTracing, traced, tracingEnabled } from './tracing';
