import assert from 'node:assert/strict';
import { logLevel, sdkLogger, setLogLevel } from '../../src/log';

/** The JSON lines written to stderr while `run` runs, at `level`. */
function linesOf(level: 'warn' | 'debug', run: () => void): { level: string; msg: string }[] {
  const lines: string[] = [];
  const [write, before] = [process.stderr.write, logLevel()];
  process.stderr.write = ((chunk: string | Uint8Array) => lines.push(String(chunk)) > 0) as typeof process.stderr.write;
  setLogLevel(level);
  try {
    run();
  } finally {
    process.stderr.write = write;
    setLogLevel(before);
  }
  return lines.map((line) => JSON.parse(line));
}

describe('the Temporal runtime\'s log lines', () => {
  const slowTask = '[TMPRL1104] 01a2:4:1 Workflow task duration exceeded 5 seconds.';

  it('keeps the SDK\'s warnings, but not the slow workflow task of a render held in it (TMPRL1104), which is debug', () => {
    const warned = linesOf('warn', () => {
      sdkLogger().warn('Activity heartbeat failed');
      sdkLogger().log('WARN', slowTask);
    });
    assert.deepEqual(warned.map((line) => [line.level, line.msg]), [['warn', 'Activity heartbeat failed']]);
    const debugged = linesOf('debug', () => sdkLogger().warn(slowTask));
    assert.deepEqual(debugged.map((line) => [line.level, line.msg]), [['debug', slowTask]]);
  });
});
