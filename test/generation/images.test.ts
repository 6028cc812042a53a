import assert from 'node:assert/strict';
import { holdsInputKey, inputKey } from '../../src/generation/images';
import { noiseImage, truncatedImage } from '../support/fixtures';

/** A render trusts an input decoded on arrival only while its bytes are still the ones stored under its key. */
describe('stored inputs hold their content-addressed keys', () => {
  it('holds the key of its own bytes, not of other bytes, nor another folder\'s', async () => {
    const bytes = await noiseImage('jpeg');
    const key = inputKey({ bytes, format: 'jpeg' });
    assert.equal(holdsInputKey(key, bytes), true);
    assert.equal(holdsInputKey(key, truncatedImage(bytes)), false, 'the file changed since');
    assert.equal(holdsInputKey(inputKey({ bytes: await noiseImage('jpeg', 200, 100), format: 'jpeg' }), bytes), false, 'another image');
    assert.equal(holdsInputKey(key.replace(/^inputs\//, 'results/1/'), bytes), false, 'not an input');
  });
});
