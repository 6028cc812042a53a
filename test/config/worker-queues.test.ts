import assert from 'node:assert/strict';
import { workerQueues } from '../../src/temporal/worker';

describe('WORKER_QUEUES', () => {
  it('serves everything when unset, and exactly what it names otherwise', () => {
    assert.deepEqual(workerQueues(undefined, ['gemini', 'runway']), { main: true, providers: ['gemini', 'runway'] });
    assert.deepEqual(workerQueues(undefined, ['local', 'local']), { main: true, providers: ['local'] });
    assert.deepEqual(workerQueues(['main'], ['gemini', 'runway']), { main: true, providers: [] });
    assert.deepEqual(workerQueues(['runway'], ['gemini', 'runway']), { main: false, providers: ['runway'] });
    assert.deepEqual(workerQueues(['gemini', 'main'], ['gemini', 'runway']), { main: true, providers: ['gemini'] });
  });

  it('refuses a queue of a provider that is not configured, and an empty choice', () => {
    assert.throws(() => workerQueues(['runway'], ['local']), /WORKER_QUEUES may name main, local; got "runway"/);
    assert.throws(() => workerQueues([], ['local']), /WORKER_QUEUES/);
  });
});
