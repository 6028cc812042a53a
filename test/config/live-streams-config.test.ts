/** The live-progress stream limits: the defaults of docs/configuration.md, each variable read, and nonsense stopping the process. */
import assert from 'node:assert/strict';
import { DEFAULT_LIVE_STREAM_LIMITS, loadConfig } from '../../src/config';
import { withEnv } from '../support/fixtures';

const UNSET = { LIVE_HEARTBEAT_SECONDS: '', LIVE_STREAMS_PER_KEY: '', LIVE_STREAMS_PER_PROCESS: '', LIVE_STREAM_MAX_SECONDS: '' };
const configWith = (env: Record<string, string>) => withEnv({ ...UNSET, ...env }, () => loadConfig());

describe('live-progress stream configuration', () => {
  it('defaults to a 15 s heartbeat, 100 streams per key, 10,000 per process and an hour per stream', () => {
    assert.deepEqual(configWith({}).liveStreams, { heartbeatSeconds: 15, perKey: 100, perProcess: 10_000, maxSeconds: 3600 });
    assert.deepEqual(DEFAULT_LIVE_STREAM_LIMITS, configWith({}).liveStreams);
  });

  it('reads each LIVE_* variable', () => {
    const limits = configWith({ LIVE_HEARTBEAT_SECONDS: '5', LIVE_STREAMS_PER_KEY: '3', LIVE_STREAMS_PER_PROCESS: '50', LIVE_STREAM_MAX_SECONDS: '0.5' }).liveStreams;
    assert.deepEqual(limits, { heartbeatSeconds: 5, perKey: 3, perProcess: 50, maxSeconds: 0.5 });
  });

  it('stops the process on a limit that would refuse every stream, or a heartbeat or lifetime of nothing or past a timer\'s range', () => {
    assert.throws(() => configWith({ LIVE_STREAMS_PER_KEY: '0' }), /LIVE_STREAMS_PER_KEY must be at least 1/);
    assert.throws(() => configWith({ LIVE_STREAMS_PER_PROCESS: '0' }), /LIVE_STREAMS_PER_PROCESS must be at least 1/);
    assert.throws(() => configWith({ LIVE_STREAMS_PER_KEY: '2.5' }), /LIVE_STREAMS_PER_KEY must be a non-negative integer/);
    assert.throws(() => configWith({ LIVE_HEARTBEAT_SECONDS: '0' }), /LIVE_HEARTBEAT_SECONDS must be from 0.01 to 2147483 \(seconds\), got 0/);
    // Node fires a timer of more than 2^31 - 1 ms after 1 ms: the heartbeat would flood every stream, the lifetime end it at once.
    assert.throws(() => configWith({ LIVE_HEARTBEAT_SECONDS: '2147484' }), /LIVE_HEARTBEAT_SECONDS must be from 0.01 to 2147483/);
    assert.throws(() => configWith({ LIVE_STREAM_MAX_SECONDS: '3000000' }), /LIVE_STREAM_MAX_SECONDS must be from 0.01 to 2147483/);
    assert.equal(configWith({ LIVE_STREAM_MAX_SECONDS: '2147483' }).liveStreams.maxSeconds, 2_147_483);
    assert.throws(() => configWith({ LIVE_STREAM_MAX_SECONDS: 'soon' }), /LIVE_STREAM_MAX_SECONDS must be a non-negative number/);
  });
});
