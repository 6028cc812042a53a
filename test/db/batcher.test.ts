import assert from 'node:assert/strict';
import { Batcher } from '../../src/db/batcher';

/** A fetch that records each batch's calls and answers when `release` is called. */
function gated() {
  const batches: [string, number][][] = [];
  const releases: (() => void)[] = [];
  const fetch = (calls: ReadonlyMap<string, number>) => {
    batches.push([...calls]);
    return new Promise<(key: string, i: number) => string>((resolve) => releases.push(() => resolve((key, i) => `${key}#${i}`)));
  };
  return { batches, releases, fetch };
}

/** Once the promise jobs queued now have run (a batch's end starts the next one in a job of its own). */
const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('Batcher: calls gathered by key, answered in batches', () => {
  it('starts the first two batches at once and gathers the calls that arrive meanwhile, numbered per key in arrival order', async () => {
    const { batches, releases, fetch } = gated();
    const batcher = new Batcher(fetch);
    const answers = ['a', 'b', 'a', 'c', 'a', 'c'].map((key) => batcher.call(key));
    assert.deepEqual(batches, [[['a', 1]], [['b', 1]]]);
    releases[0]();
    await answers[0];
    await settled();
    assert.deepEqual(batches[2], [['a', 2], ['c', 2]]);
    releases[1]();
    releases[2]();
    assert.deepEqual(await Promise.all(answers), ['a#0', 'b#0', 'a#0', 'c#0', 'a#1', 'c#1']);
  });

  it('never puts a call in a batch that started before it', async () => {
    const { batches, releases, fetch } = gated();
    const batcher = new Batcher(fetch, 1);
    const first = batcher.call('a');
    const second = batcher.call('a'); // arrives while the first batch runs: waits for the next
    assert.deepEqual(batches, [[['a', 1]]]);
    releases[0]();
    assert.equal(await first, 'a#0');
    await settled();
    assert.deepEqual(batches[1], [['a', 1]]);
    releases[1]();
    assert.equal(await second, 'a#0');
  });

  it('a failed batch fails its own calls only, whether its fetch rejects or throws; an answer that throws fails its call only', async () => {
    let n = 0;
    const batcher = new Batcher<string, string>((calls) => {
      n++;
      if (n === 1) throw new Error('thrown');
      if (n === 2) return Promise.reject(new Error('rejected'));
      return Promise.resolve((key) => {
        if (key === 'bad') throw new Error('bad key');
        return key;
      });
    }, 1);
    await assert.rejects(batcher.call('x'), /thrown/);
    await assert.rejects(batcher.call('y'), /rejected/);
    const answers = await Promise.allSettled(['z', 'bad', 'z'].map((key) => batcher.call(key)));
    assert.deepEqual(answers.map((a) => (a.status === 'fulfilled' ? a.value : (a.reason as Error).message)), ['z', 'bad key', 'z']);
    assert.equal(await batcher.call('after'), 'after');
  });

  it('refuses fewer than one batch in flight', () => {
    assert.throws(() => new Batcher(async () => () => 0, 0), /at least one batch in flight/);
  });
});
