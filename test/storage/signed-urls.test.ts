import assert from 'node:assert/strict';
import { RESULT_URL_TTL_SECONDS, UrlSigner } from '../../src/storage/signed-urls';

describe('signed asset URLs', () => {
  const signer = new UrlSigner('b7f3c2e1a9d84f6e0c5b2a7d9e1f3c4b', 'http://localhost');
  const now = new Date('2030-01-01T00:00:00Z');
  const verify = (url: string, at = now) => {
    const parsed = new URL(url);
    return signer.verify(parsed.pathname.slice('/assets/'.length), parsed.searchParams.get('expires') ?? undefined, parsed.searchParams.get('signature') ?? undefined, at);
  };

  it('accepts a URL within 30 days, expires it after', () => {
    const { url } = signer.url('results/1.jpg', RESULT_URL_TTL_SECONDS, now);
    assert.equal(verify(url), 'ok');
    assert.equal(verify(url, new Date(now.getTime() + (RESULT_URL_TTL_SECONDS + 1) * 1000)), 'expired');
  });

  it('refuses a validly signed URL that expires more than 30 days (and a few minutes of clock slack) ahead', () => {
    const slightlyAhead = signer.url('results/1.jpg', RESULT_URL_TTL_SECONDS, new Date(now.getTime() + 60_000)).url;
    assert.equal(verify(slightlyAhead), 'ok', 'another API process whose clock is a minute ahead');
    const farAhead = signer.url('results/1.jpg', RESULT_URL_TTL_SECONDS, new Date(now.getTime() + 3600_000)).url;
    assert.equal(verify(farAhead), 'invalid');
    const forever = signer.url('results/1.jpg', RESULT_URL_TTL_SECONDS, new Date('2999-01-01T00:00:00Z')).url;
    assert.equal(verify(forever), 'invalid');
    assert.throws(() => signer.url('results/1.jpg', RESULT_URL_TTL_SECONDS + 1, now), /at most/);
  });
});
