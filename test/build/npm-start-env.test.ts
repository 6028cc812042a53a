/** npm start and the processes the harnesses start (cluster, benchmark, faults) run the service alike. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { BATCH_WORKER_NODE_FLAGS, NPM_START_ENV } from '../../ops/cluster/service-process';

const ROOT = path.resolve(__dirname, '../../..');

describe("npm start's variables", () => {
  const scripts: Record<string, string> = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts;
  const assignments = Object.entries(NPM_START_ENV).map(([key, value]) => `${key}=\${${key}:-${value}} `).join('');

  it('are set by every npm script that runs the service, overridable, with the values the harnesses give their processes', () => {
    assert.deepEqual(NPM_START_ENV, { MALLOC_ARENA_MAX: '2' });
    for (const [name, mode] of [['start', 'all'], ['start:api', 'api'], ['start:worker', 'worker']]) {
      assert.ok(scripts[name].endsWith(`&& ${assignments}node dist/app/main.js ${mode}`), `${name}: ${scripts[name]}`);
    }
  });

  it("start a batch worker with the batch worker's heap limits, as the benchmark starts it, and V8 takes them", () => {
    const expected = `&& ${assignments}WORKER_QUEUES=\${WORKER_QUEUES:-batch} node ${BATCH_WORKER_NODE_FLAGS.join(' ')} dist/app/main.js worker`;
    assert.ok(scripts['start:batch-worker'].endsWith(expected), scripts['start:batch-worker']);
    // V8's heap limit is the old generation's plus three semi-spaces (the young generation at its largest).
    const limits: { main: number; thread: number } = JSON.parse(execFileSync(process.execPath, [...BATCH_WORKER_NODE_FLAGS, '-e', `
      const { heap_size_limit: main } = require('node:v8').getHeapStatistics();
      new (require('node:worker_threads').Worker)("require('node:worker_threads').parentPort.postMessage(require('node:v8').getHeapStatistics().heap_size_limit)", { eval: true })
        .once('message', (thread) => process.stdout.write(JSON.stringify({ main, thread })));
    `], { encoding: 'utf8', timeout: 30_000 }));
    const MiB = 1024 * 1024;
    assert.deepEqual(limits, { main: (512 + 3 * 4) * MiB, thread: (512 + 3 * 4) * MiB }, 'in the workflow thread too');
  });
});
