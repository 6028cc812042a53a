/** The bench runs every service process as `npm start` runs it. */
import assert from 'node:assert/strict';
import { npmStartEnv, serviceEnv } from '../../bench/service';

describe('benchmark service environment', () => {
  it("takes the variables npm start sets (glibc's malloc arenas) from package.json", () => {
    assert.deepEqual(npmStartEnv(), { MALLOC_ARENA_MAX: '2' });
    assert.equal(serviceEnv('/tmp/bench').MALLOC_ARENA_MAX, '2');
  });
});
