import assert from 'node:assert/strict';
import os from 'node:os';
import sharp from 'sharp';
import { loadConfig } from '../../src/config';
import { OutboundPolicy } from '../../src/net/outbound';
import { createProviders, UnconfiguredProvider } from '../../src/providers';
import { ProviderError, VideoJob } from '../../src/providers/provider';
import { RunwayOptions, RunwayProvider } from '../../src/providers/runway';
import { eventually, noiseImage, truncatedImage } from '../support/fixtures';
import { lavfiMp4, RUNWAY_VERSION, RunwayServer, sampleMp4, startRunwayServer } from '../support/runway-server';

const LOOPBACK = new OutboundPolicy(['127.0.0.0/8', '::1/128']);

async function rejectsWith(promise: Promise<unknown>, code: string, retryable: boolean): Promise<ProviderError> {
  const err = await promise.then(() => assert.fail(`expected a ProviderError ${code}`), (e: unknown) => e);
  assert.ok(err instanceof ProviderError, `expected a ProviderError, got ${String(err)}`);
  assert.deepEqual([err.code, err.retryable], [code, retryable], err.message);
  return err;
}

describe('Runway adapter (against a local Runway wire-format server)', function () {
  this.timeout(30_000);
  let server: RunwayServer;
  let image: Buffer;
  const runway = (options: Partial<RunwayOptions> = {}) => new RunwayProvider({
    apiKey: server.apiKey, baseUrl: server.url, model: 'gen4_turbo', pollIntervalSeconds: 0, timeoutMs: 5_000, outbound: LOOPBACK, ...options,
  });
  const job = (overrides: Partial<VideoJob> = {}): VideoJob => ({
    image, scenario: 'The mug turns slowly on the table', durationSec: 5, loopMode: false, cardMode: false, aspectRatio: '3:4', ...overrides,
  });
  const submits = () => server.requests.filter((r) => r.method === 'POST' && r.path === '/v1/image_to_video');
  const sentBody = (index = 0) => JSON.parse(submits()[index].body.toString('utf8'));

  before(async () => {
    image = await noiseImage('jpeg', 480, 360);
  });
  beforeEach(async () => {
    server = await startRunwayServer();
  });
  afterEach(() => server.close());

  describe('submit', () => {
    it('sends POST /v1/image_to_video once with the key, the API version, the model, the image as a data URI, the prompt, ratio and duration', async () => {
      const started = await runway().startVideo(job({ durationSec: 10 }));
      assert.equal(submits().length, 1);
      const [request] = submits();
      assert.equal(request.headers.authorization, `Bearer ${server.apiKey}`);
      assert.equal(request.headers['x-runway-version'], RUNWAY_VERSION);
      assert.deepEqual(sentBody(), {
        model: 'gen4_turbo',
        promptImage: `data:image/jpeg;base64,${image.toString('base64')}`,
        promptText: 'The mug turns slowly on the table',
        ratio: '832:1104',
        duration: 10,
      });
      assert.deepEqual(started, { state: 'running', taskId: server.tasks[0].id });
    });

    it('maps each of the five aspect ratios onto its Runway ratio', async () => {
      const expected = { '9:16': '720:1280', '4:3': '1104:832', '1:1': '960:960', '16:9': '1280:720', '3:4': '832:1104' };
      for (const [aspectRatio, ratio] of Object.entries(expected)) {
        await runway().startVideo(job({ aspectRatio, durationSec: 5 }));
        const body = sentBody(submits().length - 1);
        assert.deepEqual([aspectRatio, body.ratio, body.duration], [aspectRatio, ratio, 5]);
      }
    });

    it('words card mode (static camera, picture and text kept) and loop mode (ends where it starts) into the prompt', async () => {
      await runway().startVideo(job({ cardMode: true, loopMode: true }));
      const { promptText } = sentBody();
      assert.match(promptText, /^The mug turns slowly on the table /);
      assert.match(promptText, /Static camera, no camera movement\. Keep the picture and all of its text exactly as they are/);
      assert.match(promptText, /the video ends exactly where it starts/);
    });

    it('sends a default prompt for an empty scenario, and cuts a long one to 1000 characters keeping the mode wording', async () => {
      await runway().startVideo(job({ scenario: '  ' }));
      assert.match(sentBody(0).promptText, /^A short product video/);
      await runway().startVideo(job({ scenario: 'a'.repeat(1500), loopMode: true }));
      const { promptText } = sentBody(1);
      assert.equal(promptText.length, 1000);
      assert.match(promptText, /the video ends exactly where it starts\.$/);
    });

    it('with gen4_turbo (first frame only) sends neither the final frame nor a last frame in loop mode', async () => {
      const finalFrame = await noiseImage('png', 400, 300);
      await runway().startVideo(job({ finalFrame }));
      await runway().startVideo(job({ loopMode: true }));
      assert.equal(typeof sentBody(0).promptImage, 'string');
      assert.equal(typeof sentBody(1).promptImage, 'string');
    });

    it('with a model that takes a last frame, sends the final frame as last, and the first frame again in loop mode', async () => {
      const finalFrame = await noiseImage('png', 400, 300);
      const omni = runway({ model: 'gemini_omni_flash_1.1' });
      await omni.startVideo(job({ finalFrame, aspectRatio: '16:9' }));
      await omni.startVideo(job({ finalFrame, loopMode: true, aspectRatio: '9:16' }));
      const first = `data:image/jpeg;base64,${image.toString('base64')}`;
      assert.deepEqual(sentBody(0).promptImage, [{ uri: first, position: 'first' }, { uri: `data:image/png;base64,${finalFrame.toString('base64')}`, position: 'last' }]);
      assert.deepEqual([sentBody(0).model, sentBody(0).ratio], ['gemini_omni_flash_1.1', '1280:720']);
      assert.deepEqual(sentBody(1).promptImage, [{ uri: first, position: 'first' }, { uri: first, position: 'last' }]);
    });

    it('refuses an aspect ratio the model cannot render, before sending anything', async () => {
      const err = await rejectsWith(runway({ model: 'gemini_omni_flash_1.1' }).startVideo(job({ aspectRatio: '1:1' })), 'unsupported_ratio', false);
      assert.match(err.message, /does not render 1:1 videos/);
      assert.equal(server.requests.length, 0);
    });

    it('re-encodes an image too large for a data URI as a JPEG under 5 MB', async () => {
      const large = await sharp({ create: { width: 2600, height: 2600, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } } }).png().toBuffer();
      assert.ok(large.length * 4 / 3 > 5_000_000, `the input is ${large.length} bytes`);
      await runway().startVideo(job({ image: large }));
      const { promptImage } = sentBody();
      assert.ok(promptImage.length <= 5_000_000, `the data URI is ${promptImage.length} characters`);
      const sent = Buffer.from(promptImage.replace(/^data:image\/jpeg;base64,/, ''), 'base64');
      assert.equal((await sharp(sent).metadata()).format, 'jpeg');
    });

    it('refuses an image that cannot be decoded, before sending anything', async () => {
      await rejectsWith(runway().startVideo(job({ image: Buffer.from('not an image') })), 'invalid_image', false);
      assert.equal(server.requests.length, 0);
    });

    it('refuses an image damaged behind an intact header (the API reads a video\'s image by its header only), before sending anything', async () => {
      const damaged = truncatedImage(await noiseImage('jpeg'));
      assert.equal((await sharp(damaged).metadata()).format, 'jpeg', 'the header is intact');
      const err = await rejectsWith(runway().startVideo(job({ image: damaged })), 'invalid_image', false);
      assert.match(err.message, /^The image cannot be decoded/);
      assert.equal(server.requests.length, 0);
    });
  });

  describe('polling', () => {
    it('reports PENDING, THROTTLED and RUNNING (with progress) as running, then downloads the MP4 of SUCCEEDED', async () => {
      server.nextTask({ status: 'PENDING' }, { status: 'THROTTLED' }, { status: 'RUNNING', progress: 0.4 }, { status: 'SUCCEEDED' });
      const provider = runway();
      const started = await provider.startVideo(job());
      assert.equal(started.state, 'running');
      const taskId = (started as { taskId: string }).taskId;
      assert.deepEqual(await provider.checkVideo(taskId), { state: 'running', taskId });
      assert.deepEqual(await provider.checkVideo(taskId), { state: 'running', taskId });
      assert.deepEqual(await provider.checkVideo(taskId), { state: 'running', taskId, progress: 0.4 });
      const done = await provider.checkVideo(taskId);
      assert.deepEqual(done, { state: 'done', asset: { bytes: await sampleMp4(), extension: 'mp4' } });
      const polls = server.requests.filter((r) => r.method === 'GET' && r.path === `/v1/tasks/${taskId}`);
      assert.equal(polls.length, 4);
      assert.ok(polls.every((r) => r.headers.authorization === `Bearer ${server.apiKey}` && r.headers['x-runway-version'] === RUNWAY_VERSION));
      assert.equal(server.requests.filter((r) => r.path.startsWith(`/outputs/${taskId}.mp4`)).length, 1);
      assert.equal(submits().length, 1);
    });

    it('takes its poll interval from the configuration', () => {
      assert.equal(runway({ pollIntervalSeconds: 6 }).pollIntervalSeconds, 6);
    });

    const failures: [string, string, boolean][] = [
      ['SAFETY.INPUT.IMAGE', 'safety', false],
      ['SAFETY.OUTPUT.VIDEO', 'safety', false],
      ['INPUT_PREPROCESSING.SAFETY.TEXT', 'safety', false],
      ['INPUT_PREPROCESSING.INTERNAL', 'task_failed', true],
      ['INTERNAL.BAD_OUTPUT.CODE01', 'bad_output', true],
      ['ASSET.INVALID', 'task_failed', false],
    ];
    for (const [failureCode, code, retryable] of failures) {
      it(`maps a FAILED task with ${failureCode} to ${code} (${retryable ? 'retryable' : 'permanent'}), with Runway's code in the message`, async () => {
        server.nextTask({ status: 'FAILED', failureCode, failure: 'Runway says no' });
        const provider = runway();
        const { taskId } = await provider.startVideo(job()) as { taskId: string };
        const err = await rejectsWith(provider.checkVideo(taskId), code, retryable);
        assert.equal(err.message, `Runway could not render the video (${failureCode}): Runway says no`);
      });
    }

    it('maps a CANCELLED task to a permanent cancelled', async () => {
      server.nextTask({ status: 'CANCELLED' });
      const provider = runway();
      const { taskId } = await provider.startVideo(job()) as { taskId: string };
      await rejectsWith(provider.checkVideo(taskId), 'cancelled', false);
    });

    it('refuses an output that is not an MP4, and one over the size cap', async () => {
      server.nextTask({ status: 'SUCCEEDED', output: Buffer.from('<html>Access denied</html>') });
      const provider = runway({ download: { maxBytes: 1_000 } });
      const { taskId: html } = await provider.startVideo(job()) as { taskId: string };
      await rejectsWith(provider.checkVideo(html), 'bad_output', true);
      server.nextTask({ status: 'SUCCEEDED' });
      const { taskId: large } = await provider.startVideo(job()) as { taskId: string };
      await rejectsWith(provider.checkVideo(large), 'output_too_large', false);
    });

    it('checks the MP4 with ffmpeg before it is stored: truncated, undecodable, without video or over 4K is bad_output (a new task)', async () => {
      const sample = await sampleMp4();
      const mdat = sample.indexOf('mdat', 0, 'latin1');
      const damaged = Buffer.from(sample);
      damaged.fill(0x55, mdat + 4, mdat + 4 + 64); // the first frame's NAL unit sizes and data
      const outputs: [string, Buffer, RegExp][] = [
        ['truncated', sample.subarray(0, Math.floor(sample.length * 0.6)), /^Runway's output is not usable: the video cannot be decoded \(/],
        ['damaged', damaged, /^Runway's output is not usable: the video cannot be decoded \(/],
        ['audio only', await lavfiMp4('sine=duration=1', ['-c:a', 'aac']), /^Runway's output is not usable: the video has no video stream$/],
        ['over 4K', await lavfiMp4('testsrc=size=4096x2176:rate=1:duration=1'),
          /^Runway's output is not usable: the video is 4096x2176 pixels a frame; the limit is 8294400 pixels$/],
      ];
      const provider = runway();
      for (const [what, output, message] of outputs) {
        assert.equal(output.toString('latin1', 4, 8), 'ftyp', `${what}: starts as an MP4`);
        server.nextTask({ status: 'SUCCEEDED', output });
        const { taskId } = await provider.startVideo(job()) as { taskId: string };
        const err = await rejectsWith(provider.checkVideo(taskId), 'bad_output', true);
        assert.match(err.message, message, what);
        assert.equal(err.taskEnded, true, `${what}: the task is forgotten, a retry submits a new one`);
        assert.ok(!err.message.includes(os.tmpdir()), `${what}: no local path in the message`);
      }
    });

    it('the check has a deadline: one that runs out is retryable on the same task (the next poll downloads and checks again)', async () => {
      server.nextTask({ status: 'SUCCEEDED' });
      const { taskId } = await runway().startVideo(job()) as { taskId: string };
      const err = await rejectsWith(runway({ download: { checkTimeoutMs: 1 } }).checkVideo(taskId), 'output_check_failed', true);
      assert.match(err.message, /^Runway's output could not be checked: the check of the video did not finish within 1 ms$/);
      assert.equal(err.taskEnded, false);
      assert.deepEqual(await runway().checkVideo(taskId), { state: 'done', asset: { bytes: await sampleMp4(), extension: 'mp4' } });
      assert.equal(submits().length, 1);
    });

    it('retries a failed or stalled download (the next poll downloads again)', async () => {
      server.nextTask({ status: 'SUCCEEDED' });
      const provider = runway({ download: { timeoutMs: 300 } });
      const { taskId } = await provider.startVideo(job()) as { taskId: string };
      server.failNext('output', { status: 403, error: 'expired' }, 'hang');
      await rejectsWith(provider.checkVideo(taskId), 'download_failed', true);
      const stalled = await rejectsWith(provider.checkVideo(taskId), 'download_failed', true);
      assert.match(stalled.message, /timed out after 300 ms/);
      assert.equal((await provider.checkVideo(taskId)).state, 'done');
    });

    it('a lying Content-Length on the output: the declared MP4 when more follows, output_too_large from the header, download_failed when fewer bytes come', async () => {
      const mp4 = await sampleMp4();
      server.nextTask({ status: 'SUCCEEDED' });
      const provider = runway({ download: { timeoutMs: 1_000 } });
      const { taskId } = await provider.startVideo(job()) as { taskId: string };
      server.failNext('output', { lying: { declared: mp4.length, then: 'endless' } });
      assert.deepEqual(await provider.checkVideo(taskId), { state: 'done', asset: { bytes: mp4, extension: 'mp4' } }, 'the declared bytes, the rest never read');

      const started = Date.now();
      server.failNext('output', { lying: { declared: 1e12, then: 'stall' } });
      const huge = await rejectsWith(runway({ download: { timeoutMs: 5_000 } }).checkVideo(taskId), 'output_too_large', false);
      assert.match(huge.message, /is 1000000000000 bytes; the limit is 209715200/);
      assert.ok(Date.now() - started < 5_000, 'refused from the header, not at the deadline');

      server.failNext('output', { lying: { declared: mp4.length + 1000, then: 'close' } });
      const closed = await rejectsWith(provider.checkVideo(taskId), 'download_failed', true);
      assert.doesNotMatch(closed.message, /timed out/);
      server.failNext('output', { lying: { declared: mp4.length + 1000, then: 'stall' } });
      const stalled = await rejectsWith(provider.checkVideo(taskId), 'download_failed', true);
      assert.match(stalled.message, /timed out after 1000 ms/);
      assert.equal(server.requests.filter((r) => r.path.startsWith(`/outputs/${taskId}.mp4`)).length, 4);
    });

    it('refuses an output URL that points to a private address (outside OUTBOUND_ALLOW_CIDRS)', async () => {
      server.nextTask({ status: 'SUCCEEDED' });
      const { taskId } = await runway().startVideo(job()) as { taskId: string };
      await rejectsWith(runway({ outbound: new OutboundPolicy() }).checkVideo(taskId), 'download_refused', false);
    });
  });

  describe('HTTP failures', () => {
    const statuses: [number, string, boolean][] = [
      [400, 'refused', false], [401, 'unauthorized', false], [403, 'unauthorized', false], [404, 'not_found', false],
      [405, 'refused', false], [429, 'rate_limited', true], [500, 'unavailable', true], [502, 'unavailable', true],
      [503, 'unavailable', true], [504, 'unavailable', true],
    ];
    for (const [status, code, retryable] of statuses) {
      it(`maps HTTP ${status} on submit to ${code} (${retryable ? 'retryable' : 'permanent'}), the submit sent once`, async () => {
        server.failNext('submit', { status, error: `Runway answer ${status}` });
        const err = await rejectsWith(runway().startVideo(job()), code, retryable);
        assert.equal(err.message, `Runway submit answered HTTP ${status}: Runway answer ${status}`);
        assert.equal(submits().length, 1, 'the SDK did not retry');
        assert.equal(server.tasks.length, 0);
      });
    }

    it('a 429 then success: the second submit (a new attempt of the workflow) starts the task', async () => {
      server.failNext('submit', { status: 429, error: 'Too many requests' });
      const provider = runway();
      await rejectsWith(provider.startVideo(job()), 'rate_limited', true);
      const started = await provider.startVideo(job());
      assert.deepEqual(started, { state: 'running', taskId: server.tasks[0].id });
      assert.equal(submits().length, 2);
      assert.equal(server.tasks.length, 1);
    });

    it('refuses a wrong key (401 from the server)', async () => {
      const err = await rejectsWith(runway({ apiKey: 'key_wrong' }).startVideo(job()), 'unauthorized', false);
      assert.match(err.message, /Invalid API key/);
    });

    it('maps an unanswered submit and poll to a retryable timeout, each sent once', async () => {
      const provider = runway({ timeoutMs: 300 });
      server.failNext('submit', 'hang');
      await rejectsWith(provider.startVideo(job()), 'timeout', true);
      assert.equal(submits().length, 1);
      const { taskId } = await provider.startVideo(job()) as { taskId: string };
      server.failNext('poll', 'hang');
      await rejectsWith(provider.checkVideo(taskId), 'timeout', true);
      assert.equal(server.requests.filter((r) => r.method === 'GET').length, 1);
    });

    it('maps a server that cannot be reached to a retryable unavailable', async () => {
      const url = server.url;
      await server.close();
      await rejectsWith(runway({ baseUrl: url }).startVideo(job()), 'unavailable', true);
    });

    it('maps errors while polling like errors on submit', async () => {
      const provider = runway();
      const { taskId } = await provider.startVideo(job()) as { taskId: string };
      server.failNext('poll', { status: 503, error: 'busy' });
      await rejectsWith(provider.checkVideo(taskId), 'unavailable', true);
      await rejectsWith(provider.checkVideo('00000000-0000-4000-8000-000000000000'), 'not_found', false);
    });

    it('leaves an abort by the caller (a cancelled activity) as the abort, not a provider failure', async () => {
      const provider = runway();
      const { taskId } = await provider.startVideo(job()) as { taskId: string };
      server.failNext('poll', 'hang');
      const controller = new AbortController();
      const polling = provider.checkVideo(taskId, controller.signal);
      await eventually(async () => server.requests.some((r) => r.method === 'GET'), Boolean);
      const reason = new Error('activity cancelled');
      controller.abort(reason);
      await assert.rejects(polling, (err) => err === reason);
    });
  });

  describe('cancel', () => {
    it('sends DELETE /v1/tasks/{id}; the task then polls as CANCELLED', async () => {
      server.nextTask({ status: 'RUNNING', progress: 0.1 });
      const provider = runway();
      const { taskId } = await provider.startVideo(job()) as { taskId: string };
      await provider.cancelVideo(taskId);
      const deletes = server.requests.filter((r) => r.method === 'DELETE');
      assert.deepEqual(deletes.map((r) => [r.path, r.headers.authorization, r.headers['x-runway-version']]),
        [[`/v1/tasks/${taskId}`, `Bearer ${server.apiKey}`, RUNWAY_VERSION]]);
      await rejectsWith(provider.checkVideo(taskId), 'cancelled', false);
    });

    it('ignores a task Runway does not know (404), and reports an outage', async () => {
      await runway().cancelVideo('00000000-0000-4000-8000-000000000000');
      server.failNext('cancel', { status: 502, error: 'Bad gateway' });
      await rejectsWith(runway().cancelVideo('00000000-0000-4000-8000-000000000000'), 'unavailable', true);
    });
  });

  describe('configuration', () => {
    const base = { ...loadConfig(), imageProvider: 'local', textProvider: 'local', localRendererDelayMs: 0, ffmpegPath: undefined, runwayApiKey: undefined } as const;

    it('VIDEO_PROVIDER=runway with a key selects the adapter, configured as given', async () => {
      const providers = createProviders({
        ...base, videoProvider: 'runway', runwayApiKey: server.apiKey, runwayBaseUrl: server.url, runwayVideoModel: 'gen4.5',
        runwayPollIntervalSeconds: 7, runwayTimeoutMs: 5_000, outboundAllowCidrs: ['127.0.0.0/8'],
      });
      assert.ok(providers.video instanceof RunwayProvider);
      assert.deepEqual([providers.video.name, providers.video.pollIntervalSeconds, providers.unavailable], ['runway', 7, {}]);
      await providers.video.startVideo(job());
      assert.equal(sentBody().model, 'gen4.5');
    });

    it('reads the RUNWAY_* variables with their defaults, and stops on a model it does not know or a deadline out of range', () => {
      const names = ['RUNWAY_API_KEY', 'RUNWAY_BASE_URL', 'RUNWAY_VIDEO_MODEL', 'RUNWAY_POLL_INTERVAL_SECONDS', 'RUNWAY_TIMEOUT_MS'];
      const saved = names.map((name) => process.env[name]);
      const runwayConfig = () => {
        const c = loadConfig();
        return [c.runwayApiKey, c.runwayBaseUrl, c.runwayVideoModel, c.runwayPollIntervalSeconds, c.runwayTimeoutMs];
      };
      try {
        names.forEach((name) => delete process.env[name]);
        assert.deepEqual(runwayConfig(), [undefined, 'https://api.dev.runwayml.com', 'gen4_turbo', 6, 30_000]);
        Object.assign(process.env, { RUNWAY_API_KEY: ' key_abc ', RUNWAY_BASE_URL: 'https://runway.test/', RUNWAY_VIDEO_MODEL: 'gen4.5', RUNWAY_POLL_INTERVAL_SECONDS: '0.5', RUNWAY_TIMEOUT_MS: '1000' });
        assert.deepEqual(runwayConfig(), ['key_abc', 'https://runway.test', 'gen4.5', 0.5, 1000]);
        process.env.RUNWAY_VIDEO_MODEL = 'veo3.1';
        assert.throws(() => loadConfig(), /RUNWAY_VIDEO_MODEL must be one of gen4_turbo, gen4.5, gemini_omni_flash_1.1/);
        process.env.RUNWAY_VIDEO_MODEL = 'gen4.5';
        // 0 would time every request out at once, and so would a deadline past Node's timer range (2^31 - 1 ms).
        for (const timeout of ['0', '2147483648']) {
          process.env.RUNWAY_TIMEOUT_MS = timeout;
          assert.throws(() => loadConfig(), new RegExp(`RUNWAY_TIMEOUT_MS must be from 1 to 2147483647 \\(milliseconds\\), got ${timeout}`));
        }
      } finally {
        names.forEach((name, i) => (saved[i] === undefined ? delete process.env[name] : (process.env[name] = saved[i])));
      }
    });

    it('without RUNWAY_API_KEY the video provider is not configured, and the others stay local', () => {
      const providers = createProviders({ ...base, videoProvider: 'runway' });
      assert.ok(providers.video instanceof UnconfiguredProvider);
      assert.deepEqual(providers.unavailable, { video: 'RUNWAY_API_KEY is not set' });
      assert.equal(providers.image.name, 'local');
    });
  });
});
