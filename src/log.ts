/**
 * A tiny structured logger: one JSON line per event on stderr. With tracing on, a line written inside a span carries
 * its `trace_id`, `span_id` and the API's `requestId` of the action (from the trace's baggage).
 */
import { activeTraceFields } from './telemetry/spans';

type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };
let threshold: Level = (process.env.LOG_LEVEL as Level) in ORDER ? (process.env.LOG_LEVEL as Level) : 'info';

export function setLogLevel(level: Level): void { threshold = level; }
export function logLevel(): Level { return threshold; }

function write(level: Level, msg: string, fields?: Record<string, unknown>): void {
  if (ORDER[level] < ORDER[threshold]) return;
  process.stderr.write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...activeTraceFields(), ...fields }) + '\n');
}

export const log = {
  debug: (msg: string, fields?: Record<string, unknown>) => write('debug', msg, fields),
  info: (msg: string, fields?: Record<string, unknown>) => write('info', msg, fields),
  warn: (msg: string, fields?: Record<string, unknown>) => write('warn', msg, fields),
  error: (msg: string, fields?: Record<string, unknown>) => write('error', msg, fields),
};

type SdkLevel = 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
const FROM_SDK: Record<SdkLevel, Level> = { TRACE: 'debug', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' };

/**
 * The Temporal runtime's logger (the SDK's own lines, and those of workflows and activities through `log` and
 * `Context.log`) as our JSON lines: warnings and errors at the default levels, everything at `debug`, errors only
 * at `error`. An activity's line gets the trace fields of its span.
 */
export function sdkLogger() {
  const emit = (sdkLevel: SdkLevel, message: string, meta?: Record<string | symbol, unknown>) => {
    // A workflow task holds its local activities, the local renderer's renders among them (seconds each, longer
    // while they wait their turn): the core's "task duration exceeded 5 seconds" is expected there, not a warning.
    const level: SdkLevel = sdkLevel === 'WARN' && message.includes('[TMPRL1104]') ? 'DEBUG' : sdkLevel;
    const minimum: Level = threshold === 'debug' ? 'debug' : threshold === 'error' ? 'error' : 'warn';
    if (ORDER[FROM_SDK[level]] >= ORDER[minimum]) write(FROM_SDK[level], message, meta as Record<string, unknown> | undefined);
  };
  return {
    log: emit,
    trace: (message: string, meta?: Record<string | symbol, unknown>) => emit('TRACE', message, meta),
    debug: (message: string, meta?: Record<string | symbol, unknown>) => emit('DEBUG', message, meta),
    info: (message: string, meta?: Record<string | symbol, unknown>) => emit('INFO', message, meta),
    warn: (message: string, meta?: Record<string | symbol, unknown>) => emit('WARN', message, meta),
    error: (message: string, meta?: Record<string | symbol, unknown>) => emit('ERROR', message, meta),
  };
}
