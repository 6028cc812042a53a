import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { heicConverter, heicToJpeg } from '../../src/generation/heic-converter';
import { inputKey } from '../../src/generation/images';
import { OutboundPolicy } from '../../src/net/outbound';
import { actionWorkflowId, jobWorkflowId } from '../../src/temporal/contract';
import { apiClient, assertMoneyConsistent, jpegBase64, newAccount, noiseImage, truncatedImage, V1 } from '../support/fixtures';
import { stepsOf } from '../support/history';
import { largeHeic } from '../support/heic';
import { animated, animatedPng, apngFrameHashes, centreSrgb, manyFrameWebp, meanSrgb, near, Rgb } from '../support/image-kinds';
import { startHttpsServer, TestHttpsServer } from '../support/https-server';
import { INTERNAL_URLS } from '../support/internal-urls';
import { LyingAnswer, sendLyingAnswer } from '../support/lying-answer';
import { ALLOW_CIDRS, ALLOWED_ADDRESS, REFUSED_ADDRESS, RebindingStage, startRebindingStage } from '../support/rebinding';
import { Stack, startStack } from '../support/stack';

const FIXTURES = path.resolve(__dirname, '../../../test/fixtures');

describe('outbound address policy', () => {
  const policy = new OutboundPolicy();
  it('refuses private, loopback, link-local and other internal addresses, IPv4 and IPv6', () => {
    for (const ip of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '224.0.0.1']) {
      assert.equal(policy.permits(ip), false, ip);
    }
    for (const ip of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8']) assert.equal(policy.permits(ip), true, ip);
  });

  it('lets OUTBOUND_ALLOW_CIDRS open chosen ranges only', () => {
    const loopback = new OutboundPolicy(['127.0.0.0/8']);
    assert.equal(loopback.permits('127.0.0.1'), true);
    assert.equal(loopback.permits('10.0.0.1'), false);
  });

  it('checks URLs: HTTPS only, no credentials, no internal literal addresses, hosts that resolve', async () => {
    assert.throws(() => policy.checkUrl('http://example.com/a.jpg'), /HTTPS/);
    assert.throws(() => policy.checkUrl('https://user:pw@example.com/a.jpg'), /credentials/);
    assert.throws(() => policy.checkUrl('https://[::1]/a.jpg'), /private or local/);
    assert.throws(() => policy.checkUrl('https://10.0.0.1/a.jpg'), /private or local/);
    await assert.rejects(policy.checkResolves(new URL('https://localhost/a.jpg')), /private or local/);
    await assert.rejects(policy.checkResolves(new URL('https://no-such-host.invalid/a.jpg')), /does not resolve/);
  });
});

describe('image inputs over HTTP', function () {
  this.timeout(60_000);
  let stack: Stack;
  let images: TestHttpsServer;
  let jpeg: Buffer;
  /** Answers whose Content-Length lies about the JPEG they send (declared lengths set once the JPEG is made). */
  const lies: Record<string, Omit<LyingAnswer, 'body'>> = {};
  const lyingClosed = new Map<string, Promise<void>>();
  before(async () => {
    stack = await startStack();
    jpeg = Buffer.from(await jpegBase64(320, 400, '#a05020'), 'base64');
    const png = await sharp(jpeg).png().toBuffer();
    Object.assign(lies, {
      '/lying-short': { declared: jpeg.length, then: 'endless' }, // the JPEG, then bytes without end
      '/lying-huge': { declared: 1e12, then: 'stall' },
      '/lying-long-close': { declared: jpeg.length + 1000, then: 'close' },
      '/lying-long-stall': { declared: jpeg.length + 1000, then: 'stall' },
    });
    images = await startHttpsServer((req, res) => {
      if (req.url === '/product.jpg') return void res.writeHead(200, { 'Content-Type': 'image/jpeg' }).end(jpeg);
      if (req.url === '/mislabelled') return void res.writeHead(200, { 'Content-Type': 'text/plain' }).end(png);
      if (req.url === '/moved') return void res.writeHead(302, { Location: '/product.jpg' }).end();
      if (req.url === '/to-http') return void res.writeHead(302, { Location: 'http://localhost/product.jpg' }).end();
      const lie = lies[req.url!];
      if (lie) {
        lyingClosed.set(req.url!, new Promise((resolve) => res.socket!.once('close', () => resolve())));
        return sendLyingAnswer(res, { ...lie, body: jpeg, contentType: 'image/jpeg' });
      }
      if (req.url === '/huge') {
        res.writeHead(200, { 'Content-Type': 'image/jpeg' });
        const chunk = Buffer.alloc(1024 * 1024, 7);
        for (let i = 0; i < 16; i++) res.write(chunk);
        return void res.end();
      }
      res.writeHead(404).end();
    });
  });
  after(async () => {
    await images.close();
    await stack.stop();
  });

  async function generate(call: ReturnType<typeof apiClient>, image: Record<string, string>) {
    return call('POST', `${V1}/generate/photo`, { images: [image], product_name: 'Bag', category_id: 'wearables' });
  }

  it('fetches an HTTPS URL (after a redirect too) and sniffs the real format', async () => {
    const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
    for (const file of ['/product.jpg', '/moved', '/mislabelled']) {
      const res = await generate(call, { url: `${images.url}${file}` });
      assert.equal(res.status, 200, `${file}: ${JSON.stringify(res.body)}`);
      assert.equal((await stack.temporal.workflow.getHandle(actionWorkflowId(res.body.action_id)).result()).status, 'completed');
    }
  });

  it('refuses URLs that are not HTTPS (422), redirect to HTTP, fail, or are too large', async () => {
    const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
    assert.equal((await generate(call, { url: 'http://localhost/product.jpg' })).status, 422);
    const downgraded = await generate(call, { url: `${images.url}/to-http` });
    assert.deepEqual([downgraded.status, downgraded.body.detail.error], [400, 'invalid_request']);
    const missing = await generate(call, { url: `${images.url}/nothing-here` });
    assert.deepEqual([missing.status, missing.body.detail.error], [400, 'invalid_request']);
    assert.match(missing.body.detail.message, /HTTP 404/);
    const huge = await generate(call, { url: `${images.url}/huge` });
    assert.deepEqual([huge.status, huge.body.detail.error], [413, 'image_too_large']);
  });

  it('a lying Content-Length: the declared bytes when more follow, 413 from the header when over 15 MB, 400 when fewer come (closed, or stalled to the 15 s deadline)', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 50);
    const call = apiClient(stack.baseUrl, apiKey);
    const started = Date.now();
    const [short, huge, closed, stalled] = await Promise.all(Object.keys(lies).map((path) => generate(call, { url: `${images.url}${path}` })));
    assert.equal(short.status, 200, JSON.stringify(short.body));
    await lyingClosed.get('/lying-short'); // the excess was never read: the service let go of an endless answer
    assert.deepEqual([huge.status, huge.body.detail.error, huge.body.detail.message],
      [413, 'image_too_large', 'images[0]: the image is 1000000000000 bytes; the limit is 15728640']);
    assert.deepEqual([closed.status, closed.body.detail.error], [400, 'invalid_request'], JSON.stringify(closed.body));
    assert.match(closed.body.detail.message, /^images\[0\]: the image could not be fetched \((?!timed out)/);
    assert.deepEqual([stalled.status, stalled.body.detail.error], [400, 'invalid_request'], JSON.stringify(stalled.body));
    assert.match(stalled.body.detail.message, /^images\[0\]: the image could not be fetched \(timed out after 15000 ms\)$/);
    await lyingClosed.get('/lying-long-stall');
    assert.ok(Date.now() - started < 20_000, 'nothing waited past the deadline');
    const [{ n }] = await stack.db.query('SELECT count(*)::int AS n FROM actions WHERE account_id = $1', [accountId]);
    assert.equal(n, 1, 'only the good image was taken');
  });

  it('refuses loopback when OUTBOUND_ALLOW_CIDRS does not allow it, checked on the connected address', async () => {
    const strict = await startStack({ withWorker: false, outboundAllowCidrs: [] });
    try {
      const call = apiClient(strict.baseUrl, (await newAccount(strict.db, 50)).apiKey);
      const res = await generate(call, { url: `${images.url}/product.jpg` });
      assert.deepEqual([res.status, res.body.detail.error], [400, 'invalid_request']);
      assert.match(res.body.detail.message, /private or local/);
      assert.equal(images.requests.filter((r) => r.path === '/product.jpg').length, 2, 'the refused fetch never reached the server');
    } finally {
      await strict.stop();
    }
  });

  it('converts HEIC on arrival', async () => {
    const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
    const heic = readFileSync(path.join(FIXTURES, 'sample.heic')).toString('base64');
    const res = await generate(call, { data: heic, media_type: 'image/heic' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const [action] = await stack.db.query('SELECT params FROM actions WHERE id = $1', [res.body.action_id]);
    assert.match(action.params.inputs[0], /\.jpg$/);
    assert.equal((await sharp(await stack.store.read(action.params.inputs[0])).metadata()).format, 'jpeg');
    assert.equal((await stack.temporal.workflow.getHandle(actionWorkflowId(res.body.action_id)).result()).status, 'completed');
  });

  it('converts a large HEIC off the event loop: the API answers /healthz while the conversion runs', async () => {
    const heic = largeHeic(15, 15); // 4800x4800
    let converted = false;
    const conversion = heicToJpeg(heic, 4800 * 4800).finally(() => {
      converted = true;
    });
    const health = await fetch(`${stack.baseUrl}/healthz`);
    assert.equal(health.status, 200);
    assert.equal(converted, false, '/healthz was answered before the conversion ended');
    const meta = await sharp(await conversion).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['jpeg', 4800, 4800]);

    const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
    const upload = await call('POST', `${V1}/upload`, { image: { data: heic.toString('base64') } });
    assert.equal(upload.status, 201, JSON.stringify(upload.body));
  });

  it('refuses an image over 50 megapixels from its header, HEIC included: 413 image_too_large, nothing held', async () => {
    const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
    const jpeg = await sharp({ create: { width: 7100, height: 7100, channels: 3, background: '#808080' } }).jpeg().toBuffer();
    for (const [bytes, size] of [[jpeg, '7100x7100'], [largeHeic(23, 23), '7360x7360']] as const) {
      const data = bytes.toString('base64');
      for (const res of [await generate(call, { data }), await call('POST', `${V1}/upload`, { image: { data } })]) {
        assert.deepEqual([res.status, res.body.detail?.error], [413, 'image_too_large'], JSON.stringify(res.body));
        assert.match(res.body.detail.message, new RegExp(`is ${size} pixels; the limit is 50000000 pixels`));
      }
    }
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 50, available: 50, holds: 0 });
  });

  it('refuses an image over 20,000 pixels a side from its header (413), however few pixels it has in all', async () => {
    const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
    for (const [width, height] of [[20_001, 1], [1, 20_001]]) {
      const data = (await sharp({ create: { width, height, channels: 3, background: '#808080' } }).png().toBuffer()).toString('base64');
      for (const res of [await generate(call, { data }), await call('POST', `${V1}/upload`, { image: { data } })]) {
        assert.deepEqual([res.status, res.body.detail?.error], [413, 'image_too_large'], JSON.stringify(res.body));
        assert.match(res.body.detail.message, new RegExp(`is ${width}x${height} pixels; the limit is 20000 pixels a side`));
      }
    }
    const edge = (await sharp({ create: { width: 20_000, height: 8, channels: 3, background: '#808080' } }).png().toBuffer()).toString('base64');
    assert.equal((await call('POST', `${V1}/upload`, { image: { data: edge } })).status, 201, 'exactly the limit is taken');
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 50, available: 50, holds: 0 });
  });

  it('refuses a HEIC over 25 megapixels from its header (413), before converting it: HEIC costs twice as much to decode', async () => {
    const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
    const threads = heicConverter.threadCount;
    const res = await call('POST', `${V1}/upload`, { image: { data: largeHeic(16, 16).toString('base64') } });
    assert.deepEqual([res.status, res.body.detail?.error], [413, 'image_too_large'], JSON.stringify(res.body));
    assert.match(res.body.detail.message, /is 5120x5120 pixels; the limit is 25000000 pixels for HEIC \(send larger photos as JPEG\)/);
    assert.equal(heicConverter.threadCount, threads, 'nothing was converted');
  });

  it('answers 503 generation_unavailable with Retry-After at once when the HEIC converter queue is full', async () => {
    const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
    const data = readFileSync(path.join(FIXTURES, 'sample.heic')).toString('base64');
    const big = largeHeic(12, 12);
    const queued = Array.from({ length: heicConverter.limits.maxPending }, () => heicToJpeg(big, 3840 * 3840));
    try {
      const res = await call('POST', `${V1}/upload`, { image: { data } });
      assert.deepEqual([res.status, res.body.detail.error, res.headers.get('retry-after')], [503, 'generation_unavailable', '5'], JSON.stringify(res.body));
      assert.match(res.body.detail.message, /^image: the HEIC converter is busy with other requests; try again shortly, or send the image as JPEG$/);
      assert.equal(heicConverter.pendingConversions, heicConverter.limits.maxPending, 'the refused image was never queued');
    } finally {
      await Promise.all(queued);
    }
    assert.equal(heicConverter.pendingConversions, 0);
    const accepted = await call('POST', `${V1}/upload`, { image: { data } });
    assert.equal(accepted.status, 201, JSON.stringify(accepted.body));
  });

  it('accepts PNG and WebP whatever media_type says', async () => {
    const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
    for (const bytes of [await sharp(jpeg).png().toBuffer(), await sharp(jpeg).webp().toBuffer()]) {
      const res = await generate(call, { data: bytes.toString('base64'), media_type: 'image/gif' });
      assert.equal(res.status, 200);
    }
  });

  describe('animated, CMYK, 16-bit, greyscale and palette images', () => {
    const RED: Rgb = [192, 32, 16];
    const GREY: Rgb = [120, 120, 120];
    const refusedBeforeAnything = async (accountId: number, call: ReturnType<typeof apiClient>) => {
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 50, available: 50, holds: 0 });
      const [{ n }] = await stack.db.query('SELECT count(*)::int AS n FROM actions WHERE account_id = $1', [accountId]);
      assert.equal(n, 0, 'no action was placed');
    };
    /** The stored bytes of an upload. */
    const storedUpload = async (uploadId: string) => {
      const [{ input_key: key }] = await stack.db.query('SELECT input_key FROM uploads WHERE id = $1', [uploadId]);
      return stack.store.read(key);
    };
    const analysedName = async (call: ReturnType<typeof apiClient>, data: string) => {
      const res = await call('POST', `${V1}/analyze`, { image: { data }, locale: 'en' });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.product_name;
    };

    it('refuses animations (400 before anything is held or stored): a GIF as not a format taken, a WebP or APNG of several frames with a request for one frame', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 50);
      const call = apiClient(stack.baseUrl, apiKey);
      const frames: Rgb[] = [RED, [30, 40, 200], [40, 160, Math.floor(Math.random() * 256)]]; // new bytes each run: the store outlives it
      const gif = await animated('gif', frames);
      const webp = await animated('webp', frames);
      const apng = await animatedPng(RED, frames[2]);
      assert.deepEqual([(await sharp(gif).metadata()).pages, (await sharp(webp).metadata()).pages], [3, 3], 'the fixtures are animations');
      assert.equal((await apngFrameHashes(apng)).length, 2, 'the APNG has two different frames');
      for (const [bytes, format, message] of [
        [gif, 'png', /^images\[0\] is not a JPEG, PNG, WebP or HEIC image$/],
        [webp, 'webp', /^images\[0\] is an animated WebP \(3 frames\); send one frame as a still image$/],
        [apng, 'png', /^images\[0\] is an animated PNG \(2 frames\); send one frame as a still image$/],
      ] as const) {
        const data = bytes.toString('base64');
        const res = await generate(call, { data, media_type: 'image/webp' });
        assert.deepEqual([res.status, res.body.detail?.error], [400, 'invalid_request'], JSON.stringify(res.body));
        assert.match(res.body.detail.message, message);
        const upload = await call('POST', `${V1}/upload`, { image: { data } });
        assert.deepEqual([upload.status, upload.body.detail?.error], [400, 'invalid_request'], JSON.stringify(upload.body));
        const stored = await stack.store.open(inputKey({ bytes, format }));
        stored?.stream.destroy();
        assert.equal(stored, undefined, 'nothing was stored');
      }
      await refusedBeforeAnything(accountId, call);

      const firstFrame = await sharp(webp).webp({ lossless: true }).toBuffer();
      assert.equal((await sharp(firstFrame).metadata()).pages, undefined, 'a still WebP');
      const still = await generate(call, { data: firstFrame.toString('base64') });
      assert.equal(still.status, 200, 'one frame sent as a still image is taken');
      assert.equal((await stack.temporal.workflow.getHandle(actionWorkflowId(still.body.action_id)).result()).status, 'completed');
    });

    it('refuses a 100 KB WebP of 2000 frames of 2000x2000 (8 gigapixels in all) from its header: no frame is decoded, memory stays flat', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 50);
      const call = apiClient(stack.baseUrl, apiKey);
      const bomb = await manyFrameWebp(2000, 2000);
      assert.ok(bomb.length < 200_000, `${bomb.length} bytes`);
      const data = bomb.toString('base64');
      const before = process.memoryUsage.rss();
      let peak = before;
      const sampler = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage.rss());
      }, 2);
      const res = await generate(call, { data }).finally(() => clearInterval(sampler));
      assert.deepEqual([res.status, res.body.detail?.error], [400, 'invalid_request'], JSON.stringify(res.body));
      assert.match(res.body.detail.message, /^images\[0\] is an animated WebP \(2000 frames\); send one frame as a still image$/);
      // One frame decoded is 16 MB of RGBA, all of them 32 GB: the answer came from the header alone (the bound
      // leaves room for the V8 heap, which may grow its young generation meanwhile).
      assert.ok(peak - before < 64 * 1024 * 1024, `RSS grew by ${Math.round((peak - before) / 1024 / 1024)} MB while the request ran`);
      await refusedBeforeAnything(accountId, call);
    });

    it('takes a CMYK JPEG converted to sRGB: stored, analysed and rendered in its real colours, not inverted', async () => {
      const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
      const cmyk = await sharp({ create: { width: 320, height: 400, channels: 3, background: { r: RED[0], g: RED[1], b: RED[2] } } })
        .toColourspace('cmyk').jpeg().toBuffer();
      assert.equal((await sharp(cmyk).metadata()).space, 'cmyk', 'the fixture is CMYK');
      const data = cmyk.toString('base64');
      assert.equal(await analysedName(call, data), 'Red product');

      const res = await generate(call, { data });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const [action] = await stack.db.query('SELECT params FROM actions WHERE id = $1', [res.body.action_id]);
      const stored = await stack.store.read(action.params.inputs[0]);
      const meta = await sharp(stored).metadata();
      assert.deepEqual([meta.format, meta.space, meta.channels, meta.depth], ['jpeg', 'srgb', 3, 'uchar'], 'stored as an sRGB JPEG');
      assert.match(action.params.inputs[0], /\.jpg$/);
      const storedColour = await meanSrgb(stored);
      assert.ok(near(storedColour, RED), `stored colour ${storedColour}`);

      assert.equal((await stack.temporal.workflow.getHandle(actionWorkflowId(res.body.action_id)).result()).status, 'completed');
      const status = (await call('GET', res.body.poll_url)).body;
      const product = await centreSrgb(Buffer.from(await (await fetch(status.result_url)).arrayBuffer()));
      assert.ok(near(product, RED, 24), `the product in the photo is ${product}`);
    });

    it('takes 16-bit PNGs, with and without alpha, as 8-bit PNGs in their colours (alpha kept); refuses one over 25 megapixels (413)', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 50);
      const call = apiClient(stack.baseUrl, apiKey);
      const [r, g, b] = RED;
      for (const alpha of [1, 0.5]) {
        const deep = await sharp({ create: { width: 320, height: 400, channels: alpha === 1 ? 3 : 4, background: { r, g, b, alpha } } })
          .toColourspace('rgb16').png().toBuffer();
        const sent = await sharp(deep).metadata();
        assert.deepEqual([sent.depth, sent.hasAlpha], ['ushort', alpha < 1], 'the fixture is 16-bit');
        const data = deep.toString('base64');
        assert.equal(await analysedName(call, data), 'Red product', `alpha ${alpha}`);
        const upload = await call('POST', `${V1}/upload`, { image: { data } });
        assert.equal(upload.status, 201, JSON.stringify(upload.body));
        const stored = await storedUpload(upload.body.upload_id);
        const meta = await sharp(stored).metadata();
        assert.deepEqual([meta.format, meta.depth, meta.hasAlpha], ['png', 'uchar', alpha < 1], `alpha ${alpha}: stored as an 8-bit PNG`);
        assert.ok(near(await meanSrgb(stored), RED, 2), `alpha ${alpha}: stored colour`);
        const res = await generate(call, { data: upload.body.upload_id });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.equal((await stack.temporal.workflow.getHandle(actionWorkflowId(res.body.action_id)).result()).status, 'completed');
      }
      const over = await sharp({ create: { width: 5001, height: 5000, channels: 3, background: '#808080' } }).toColourspace('rgb16').png().toBuffer();
      const res = await call('POST', `${V1}/upload`, { image: { data: over.toString('base64') } });
      assert.deepEqual([res.status, res.body.detail?.error], [413, 'image_too_large'], JSON.stringify(res.body));
      assert.match(res.body.detail.message, /^image is 5001x5000 pixels of 16 bits a channel; the limit is 25000000 pixels for 16-bit images \(send larger ones as 8-bit\)$/);
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 40, available: 40, holds: 0 }, 'the two renders were charged, the refusal was not');
      await assertMoneyConsistent(stack.db, accountId);
    });

    it('takes greyscale, greyscale with alpha and palette PNGs as they are: stored unchanged, a grey product named grey', async () => {
      const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
      const create = (channels: 3 | 4, [r, g, b]: Rgb) => sharp({ create: { width: 320, height: 400, channels, background: { r, g, b, alpha: 1 } } });
      const kinds = [
        { name: 'greyscale', bytes: await create(3, GREY).toColourspace('b-w').png().toBuffer(), channels: 1, colour: 'Grey product' },
        { name: 'greyscale with alpha', bytes: await create(4, GREY).toColourspace('b-w').png().toBuffer(), channels: 2, colour: 'Grey product' },
        { name: 'palette', bytes: await create(3, RED).png({ palette: true }).toBuffer(), channels: 3, colour: 'Red product' },
      ];
      for (const { name, bytes, channels, colour } of kinds) {
        const meta = await sharp(bytes).metadata();
        assert.equal(meta.channels, channels, `${name}: the fixture`);
        if (name === 'palette') assert.equal(meta.isPalette, true);
        const data = bytes.toString('base64');
        assert.equal(await analysedName(call, data), colour, name);
        const upload = await call('POST', `${V1}/upload`, { image: { data } });
        assert.equal(upload.status, 201, JSON.stringify(upload.body));
        assert.ok((await storedUpload(upload.body.upload_id)).equals(bytes), `${name}: stored as sent`);
        const res = await generate(call, { data: upload.body.upload_id });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.equal((await stack.temporal.workflow.getHandle(actionWorkflowId(res.body.action_id)).result()).status, 'completed', name);
      }
    });
  });

  describe('truncated images', () => {
    it('are 400 invalid_request before anything is held when the request is analysed, or uploaded', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 50);
      const call = apiClient(stack.baseUrl, apiKey);
      for (const format of ['jpeg', 'png', 'webp'] as const) {
        const data = truncatedImage(await noiseImage(format)).toString('base64');
        for (const body of [{ images: [{ data }] }, { images: [{ data }], category_id: 'wearables' }]) {
          const res = await call('POST', `${V1}/generate/photo`, body);
          assert.deepEqual([res.status, res.body.detail?.error], [400, 'invalid_request'], `${format}: ${JSON.stringify(res.body)}`);
          assert.match(res.body.detail.message, new RegExp(`^images\\[0\\] cannot be decoded as ${format.toUpperCase()}`));
        }
        const upload = await call('POST', `${V1}/upload`, { image: { data } });
        assert.deepEqual([upload.status, upload.body.detail?.error], [400, 'invalid_request'], format);
      }
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 50, available: 50, holds: 0 });
      const [{ n }] = await stack.db.query('SELECT count(*)::int AS n FROM actions WHERE account_id = $1', [accountId]);
      assert.equal(n, 0);
    });

    it('are read by their header when nothing is analysed: accepted, then the worker fails the action once, nothing charged', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 200);
      const call = apiClient(stack.baseUrl, apiKey);
      const good = (await noiseImage('jpeg')).toString('base64');
      const damaged = async (format: 'jpeg' | 'png' = 'jpeg') => truncatedImage(await noiseImage(format)).toString('base64');
      const failsOnce = async (res: { status: number; body: { action_id: number } }, what: string, step = 'generateAsset') => {
        assert.equal(res.status, 200, `${what}: ${JSON.stringify(res.body)}`);
        const handle = stack.temporal.workflow.getHandle(actionWorkflowId(res.body.action_id));
        const outcome = await handle.result();
        assert.equal(outcome.status, 'failed', what);
        assert.match((outcome as { error: string }).error, /^The image cannot be decoded/, what);
        const renders = stepsOf((await handle.fetchHistory()).events!).filter(({ type }) => type === step);
        assert.deepEqual(renders.map(({ attempt }) => attempt), [1], `${what}: tried once`);
      };
      const named = { product_name: 'Bag', category_id: 'wearables' };

      // (A truncated WebP's header often gives the truncation away at arrival: test/generation/image-limits.test.ts.)
      for (const format of ['jpeg', 'png'] as const) {
        const data = await damaged(format);
        // The damaged image first (the one the local renderer shows), then second (one it only proves whole).
        for (const images of [[{ data }], [{ data: good }, { data }]]) {
          await failsOnce(await call('POST', `${V1}/generate/photo`, { images, ...named }), `photo, ${format}, ${images.length} images`);
        }
      }
      const card = { ...named, user_text: 'Soft leather' };
      await failsOnce(await call('POST', `${V1}/generate/card`, { ...card, images: [{ data: good }, { data: await damaged() }] }), 'card, second photo');
      await failsOnce(await call('POST', `${V1}/generate/card`, { ...card, images: [{ data: good }], design_reference_image: { data: await damaged() } }),
        'card, design reference');
      await failsOnce(await call('POST', `${V1}/generate/video`, { image: { data: await damaged() }, scenario: 'slow turn' }), 'video', 'advanceVideoRender');

      const job = await call('POST', '/api/v2/jobs/generate', { images: [{ data: await damaged() }], ...named });
      assert.equal(job.status, 202, JSON.stringify(job.body));
      assert.equal((await stack.temporal.workflow.getHandle(jobWorkflowId(job.body.job_id)).result()).status, 'failed');
      const done = (await call('GET', job.body.status_url)).body;
      assert.deepEqual([done.status, done.retryable, done.error_code], ['failed', false, 'invalid_image']);

      // Decoded on arrival: a card whose qualities are detected, and a video's final frame (a provider may not read it).
      for (const [path, body, field] of [
        ['generate/card', { ...named, images: [{ data: await damaged() }] }, 'images[0]'],
        ['generate/video', { image: { data: good }, final_frame: { data: await damaged() }, scenario: 'slow turn' }, 'final_frame'],
      ] as const) {
        const res = await call('POST', `${V1}/${path}`, body);
        assert.deepEqual([res.status, res.body.detail?.error], [400, 'invalid_request'], `${path}: ${JSON.stringify(res.body)}`);
        assert.match(res.body.detail.message, new RegExp(`^${field.replace(/[[\]]/g, '\\$&')} cannot be decoded as JPEG`));
      }

      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 200, available: 200, holds: 0 });
      await assertMoneyConsistent(stack.db, accountId);
    });

    /** An upload whose stored file is damaged afterwards, behind the API's back: only the worker can find out. */
    async function damagedUpload(call: ReturnType<typeof apiClient>): Promise<string> {
      const good = await noiseImage('jpeg');
      const { upload_id: uploadId } = (await call('POST', `${V1}/upload`, { image: { data: good.toString('base64') } })).body;
      const [{ input_key: key }] = await stack.db.query('SELECT input_key FROM uploads WHERE id = $1', [uploadId]);
      await stack.store.put(key, truncatedImage(good));
      return uploadId;
    }

    it('a damaged stored input is a permanent failure: a v1 action fails after one attempt, a v2 job ends failed, not retryable', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 50);
      const call = apiClient(stack.baseUrl, apiKey);

      const action = await generate(call, { data: await damagedUpload(call) });
      assert.equal(action.status, 200, JSON.stringify(action.body));
      const handle = stack.temporal.workflow.getHandle(actionWorkflowId(action.body.action_id));
      const outcome = await handle.result();
      assert.equal(outcome.status, 'failed');
      assert.match((outcome as { error: string }).error, /^The image cannot be decoded/);
      const renders = stepsOf((await handle.fetchHistory()).events!).filter((step) => step.type === 'generateAsset');
      assert.deepEqual(renders.map((step) => step.attempt), [1], 'tried once');

      // An upload is listed whole in its params (decoded on arrival), but its stored bytes no longer hash to its
      // key: decoded again, found damaged, even as a photo the local renderer only carries (it decodes the one it shows).
      const carried = (await call('POST', `${V1}/generate/photo`, {
        images: [{ data: (await noiseImage('jpeg')).toString('base64') }, { data: await damagedUpload(call) }], product_name: 'Bag', category_id: 'wearables',
      })).body;
      const carriedOutcome = await stack.temporal.workflow.getHandle(actionWorkflowId(carried.action_id)).result();
      assert.equal(carriedOutcome.status, 'failed', 'a changed upload carried as the second photo');
      assert.match((carriedOutcome as { error: string }).error, /^The image cannot be decoded/);

      const job = (await call('POST', '/api/v2/jobs/generate', { images: [{ data: await damagedUpload(call) }], product_name: 'Bag', category_id: 'wearables' })).body;
      assert.equal((await stack.temporal.workflow.getHandle(jobWorkflowId(job.job_id)).result()).status, 'failed');
      const done = (await call('GET', job.status_url)).body;
      assert.deepEqual([done.status, done.retryable, done.error_code], ['failed', false, 'invalid_image']);
      assert.match(done.error_message, /^The image cannot be decoded/);

      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 50, available: 50, holds: 0 });
      await assertMoneyConsistent(stack.db, accountId);
    });
  });

  it('an upload, decoded on arrival, is listed whole in its action\'s params (the worker does not decode it again); an image read by its header is not', async () => {
    const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
    const uploaded = await noiseImage('jpeg');
    const { upload_id: uploadId } = (await call('POST', `${V1}/upload`, { image: { data: uploaded.toString('base64') } })).body;
    const sent = await noiseImage('jpeg');
    const named = { product_name: 'Bag', category_id: 'wearables' };
    const photo = await call('POST', `${V1}/generate/photo`, { images: [{ data: uploadId }, { data: sent.toString('base64') }], ...named });
    const card = await call('POST', `${V1}/generate/card`, { images: [{ data: sent.toString('base64') }], design_reference_image: { data: uploadId }, ...named, user_text: 'Soft' });
    const video = await call('POST', `${V1}/generate/video`, { image: { data: uploadId }, scenario: 'slow turn' });
    const params = async (res: { status: number; body: { action_id: number } }) => {
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return (await stack.db.query('SELECT params FROM actions WHERE id = $1', [res.body.action_id]))[0].params as { wholeInputs?: string[] };
    };
    const key = inputKey({ bytes: uploaded, format: 'jpeg' });
    assert.deepEqual((await params(photo)).wholeInputs, [key]);
    assert.deepEqual((await params(card)).wholeInputs, [key]);
    assert.deepEqual((await params(video)).wholeInputs, [key]);
    const plain = await call('POST', `${V1}/generate/photo`, { images: [{ data: sent.toString('base64') }], ...named });
    assert.equal((await params(plain)).wholeInputs, undefined);
    for (const res of [photo, card, video, plain]) {
      assert.equal((await stack.temporal.workflow.getHandle(actionWorkflowId(res.body.action_id)).result()).status, 'completed');
    }
  });

  describe('storing inputs', () => {
    const stored = async (bytes: Buffer) => (await stack.store.open(inputKey({ bytes, format: 'jpeg' }))) !== undefined;

    it('a request refused for want of sparks (402) stores none of its images, v1 and v2 alike', async () => {
      const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 0)).apiKey);
      const images = await Promise.all([1, 2, 3, 4, 5, 6, 7].map(() => noiseImage('jpeg', 400, 400)));
      const data = images.map((bytes) => ({ data: bytes.toString('base64') }));
      const refused = [
        await call('POST', `${V1}/generate/photo`, { images: [data[0]], product_name: 'Bag', category_id: 'wearables' }),
        await call('POST', '/api/v2/jobs/generate', { images: [data[1]], product_name: 'Bag', category_id: 'wearables' }),
        await call('POST', `${V1}/generate/card`, { images: [data[2]], design_reference_image: data[3], product_name: 'Bag', category_id: 'wearables' }),
        await call('POST', `${V1}/generate/video`, { image: data[4], final_frame: data[5] }),
        await call('POST', `${V1}/generate/photo`, { images: [data[6]] }),
      ];
      for (const res of refused) assert.deepEqual([res.status, res.body.detail?.error], [402, 'insufficient_tokens'], JSON.stringify(res.body));
      for (const [i, bytes] of images.entries()) assert.equal(await stored(bytes), false, `image ${i} was not stored`);
    });

    it('an accepted request stores its images before its workflow starts', async () => {
      const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
      const [photo, final] = [await noiseImage('jpeg', 400, 400), await noiseImage('jpeg', 400, 400)];
      const res = await call('POST', `${V1}/generate/video`, { image: { data: photo.toString('base64') }, final_frame: { data: final.toString('base64') } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual([await stored(photo), await stored(final)], [true, true]);
      assert.equal((await stack.temporal.workflow.getHandle(actionWorkflowId(res.body.action_id)).result()).status, 'completed');
    });

    it('when the images cannot be stored, the request is refused like a failed start: 503, hold released, action failed', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 50);
      const call = apiClient(stack.baseUrl, apiKey);
      const put = stack.store.put;
      stack.store.put = async () => {
        throw new Error('no space left on device');
      };
      try {
        const res = await generate(call, { data: (await noiseImage('jpeg', 400, 400)).toString('base64') });
        assert.deepEqual([res.status, res.body.detail?.error], [503, 'generation_unavailable'], JSON.stringify(res.body));
      } finally {
        stack.store.put = put;
      }
      const [action] = await stack.db.query('SELECT status FROM actions WHERE account_id = $1', [accountId]);
      assert.equal(action.status, 'failed');
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 50, available: 50, holds: 0 });
      await assertMoneyConsistent(stack.db, accountId);
    });
  });

  describe('uploads', () => {
    it('POST /upload gives an upl_ id for an hour that generation accepts in `data`', async () => {
      const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
      const upload = await call('POST', `${V1}/upload`, { image: { data: jpeg.toString('base64'), media_type: 'image/jpeg' } });
      assert.equal(upload.status, 201);
      assert.match(upload.body.upload_id, /^upl_[A-Za-z0-9_-]{20,}$/);
      assert.equal(upload.body.expires_in, 3600);
      const res = await generate(call, { data: upload.body.upload_id });
      assert.equal(res.status, 200);
      assert.equal((await stack.temporal.workflow.getHandle(actionWorkflowId(res.body.action_id)).result()).status, 'completed');
    });

    it('refuses unknown, foreign and expired upload ids with their own codes', async () => {
      const owner = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
      const stranger = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
      const upload = (await owner('POST', `${V1}/upload`, { image: { data: jpeg.toString('base64') } })).body;
      const unknown = await generate(owner, { data: 'upl_doesnotexist' });
      assert.deepEqual([unknown.status, unknown.body.detail.error], [400, 'upload_not_found']);
      const foreign = await generate(stranger, { data: upload.upload_id });
      assert.deepEqual([foreign.status, foreign.body.detail.error], [400, 'upload_not_found']);
      await stack.db.query(`UPDATE uploads SET expires_at = now() - interval '1 second' WHERE id = $1`, [upload.upload_id]);
      const expired = await generate(owner, { data: upload.upload_id });
      assert.deepEqual([expired.status, expired.body.detail.error], [400, 'upload_expired']);
    });

    it('allows 20 active uploads per account, then 429 upload_limit_exceeded', async () => {
      const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
      const data = jpeg.toString('base64');
      const answers = await Promise.all(Array.from({ length: 22 }, () => call('POST', `${V1}/upload`, { image: { data } })));
      assert.equal(answers.filter((a) => a.status === 201).length, 20);
      const refused = answers.filter((a) => a.status === 429);
      assert.equal(refused.length, 2);
      assert.equal(refused[0].body.detail.error, 'upload_limit_exceeded');
      assert.equal(refused[0].body.detail.details.limit, 20);
      assert.ok(Number(refused[0].headers.get('retry-after')) > 3500);

      const extra = await noiseImage('jpeg', 400, 400);
      const over = await call('POST', `${V1}/upload`, { image: { data: extra.toString('base64') } });
      assert.equal(over.status, 429);
      assert.equal(await stack.store.open(inputKey({ bytes: extra, format: 'jpeg' })), undefined, 'a refused upload stores nothing');
    });

    it('refuses what is not an image (400) and what is too large (413)', async () => {
      const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 50)).apiKey);
      const notImage = await call('POST', `${V1}/upload`, { image: { data: Buffer.from('plain text').toString('base64') } });
      assert.deepEqual([notImage.status, notImage.body.detail.error], [400, 'invalid_request']);
      const big = await call('POST', `${V1}/upload`, { image: { data: Buffer.alloc(15 * 1024 * 1024 + 10).toString('base64') } });
      assert.deepEqual([big.status, big.body.detail.error], [413, 'image_too_large']);
    });
  });
});

describe('image URLs under the outbound policy (a DNS server of the test, 127.0.0.2 allowed, loopback refused)', function () {
  this.timeout(60_000);
  let stage: RebindingStage;
  let stack: Stack;
  let call: ReturnType<typeof apiClient>;
  before(async () => {
    const jpeg = Buffer.from(await jpegBase64(320, 400, '#3070a0'), 'base64');
    stage = await startRebindingStage((req, res) => {
      const to = new URL(req.url!, 'https://x').searchParams.get('to');
      if (to) return void res.writeHead(302, { Location: to }).end();
      res.writeHead(200, { 'Content-Type': 'image/jpeg' }).end(jpeg);
    });
    stack = await startStack({ withWorker: false, outboundAllowCidrs: ALLOW_CIDRS, outboundResolveHost: (host) => stage.dns.resolveHost(host) });
    call = apiClient(stack.baseUrl, (await newAccount(stack.db, 1000)).apiKey);
  });
  after(async () => {
    await stack.stop();
    await stage.close();
  });
  afterEach(() => assert.equal(stage.refused.connections, 0, `${REFUSED_ADDRESS} got a connection`));

  const generate = (url: string) => call('POST', `${V1}/generate/photo`, { images: [{ url }], product_name: 'Bag', category_id: 'wearables' });
  function assertRefused(res: Awaited<ReturnType<typeof generate>>, url: string) {
    assert.deepEqual([res.status, res.body.detail?.error], [400, 'invalid_request'], `${url}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.detail.message, 'images[0]: the URL points to a private or local address', url);
  }

  it('refuses every internal address form, literal or answered by DNS: 400 invalid_request, nothing held', async () => {
    for (const url of INTERNAL_URLS) assertRefused(await generate(url), url);
    for (const address of [REFUSED_ADDRESS, '10.0.0.1', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0']) {
      const url = stage.url(`answers-${address.replace(/\./g, '-')}`, '/product.jpg', [address]);
      assertRefused(await generate(url), url);
    }
    assert.equal((await call('GET', `${V1}/balance`)).body.holds, 0);
    assert.equal(stage.allowed.connections, 0);
  });

  it('follows a redirect to an allowed address, refuses one to an internal address (a name, or a literal in any spelling)', async () => {
    const allowedTarget = stage.url('redirect-ok', '/product.jpg', [ALLOWED_ADDRESS]);
    const ok = await generate(stage.url('redirector', `/moved?to=${encodeURIComponent(allowedTarget)}`, [ALLOWED_ADDRESS]));
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    const port = stage.allowed.port;
    for (const to of [stage.url('redirect-refused', '/product.jpg', [REFUSED_ADDRESS]), `https://${REFUSED_ADDRESS}:${port}/product.jpg`,
      `https://2130706433:${port}/`, `https://0x7f.1:${port}/`, `https://0177.0.0.1:${port}/`, `https://[::ffff:127.0.0.1]:${port}/`,
      `https://[::ffff:7f00:1]:${port}/`, 'https://169.254.169.254/latest/meta-data/', 'https://[fd00::1]/', 'https://100.64.0.1/']) {
      assertRefused(await generate(stage.url('redirector', `/moved?to=${encodeURIComponent(to)}`, [ALLOWED_ADDRESS])), to);
    }
  });

  it('DNS rebinding: the image comes from the address the check saw; when the name then answers a refused address, 400 and nothing connects', async () => {
    const url = stage.url('rebinding-image', '/product.jpg', [ALLOWED_ADDRESS], [REFUSED_ADDRESS]);
    const fetched = await generate(url);
    assert.equal(fetched.status, 200, JSON.stringify(fetched.body));
    assert.equal(stage.dns.queries('rebinding-image.rebind.test'), 1, 'one answer, checked and connected to');
    assertRefused(await generate(url), url);
    assert.equal(stage.dns.queries('rebinding-image.rebind.test'), 2);
  });
});
