/** The local renderer's settings: its zero-cost mode is the benchmark's alone. */
import assert from 'node:assert/strict';
import { BENCH_HARNESS_FLAG, loadConfig } from '../../src/config';
import { withEnv } from '../support/fixtures';

describe('local renderer configuration', () => {
  it('renders for real by default and refuses LOCAL_RENDERER_COST=zero outside the benchmark harness', () => {
    assert.equal(withEnv({ LOCAL_RENDERER_COST: '', [BENCH_HARNESS_FLAG]: '' }, () => loadConfig()).localRendererCost, 'normal');
    assert.throws(() => withEnv({ LOCAL_RENDERER_COST: 'zero', [BENCH_HARNESS_FLAG]: '' }, () => loadConfig()),
      /LOCAL_RENDERER_COST=zero is for the benchmark harness only/);
    assert.throws(() => withEnv({ LOCAL_RENDERER_COST: 'zero', [BENCH_HARNESS_FLAG]: 'yes' }, () => loadConfig()), /benchmark harness only/);
    assert.equal(withEnv({ LOCAL_RENDERER_COST: 'zero', [BENCH_HARNESS_FLAG]: '1' }, () => loadConfig()).localRendererCost, 'zero');
  });
});
