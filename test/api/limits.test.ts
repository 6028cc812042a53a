import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { routeGroups } from '../../api/app';
import { ValidationFailed } from '../../src/errors';
import { findUnstorable, MAX_JSON_DEPTH, MAX_JSON_VALUES } from '../../api/middleware/json-body';
import { bodyLimit, DEFAULT_BODY_LIMIT_BYTES, type JsonSchema, type Route } from '../../api/route';
import { SHARED_SCHEMAS } from '../../api/schemas/shared';
import { compileValidator } from '../../api/validation';
import { apiClient, type ApiResponse, clearOfRateWindowEdge, eventually, jpegBase64, newAccount, noiseImage, V1 } from '../support/fixtures';
import { DASHBOARD_API, dashboardHeaders, signedInUser } from '../support/dashboard-client';
import { rawRequest, RawRequest } from '../support/raw-http';
import { Stack, startApiPair, startStack } from '../support/stack';
import { testEnvironment } from '../support/environment';
import { startServiceProcess } from '../../ops/cluster/service-process';
import { freePort } from '../../ops/dev-server';

const V2 = '/api/v2';
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

/** The string and array schemas of a body, with where they are, refs followed. */
function sizedSchemas(schema: JsonSchema, where: string, found: { where: string; schema: JsonSchema }[] = []) {
  const resolved = (typeof schema.$ref === 'string' ? SHARED_SCHEMAS[schema.$ref as keyof typeof SHARED_SCHEMAS] : schema) as JsonSchema;
  if (resolved.type === 'string' || resolved.type === 'array') found.push({ where, schema: resolved });
  for (const [name, property] of Object.entries((resolved.properties ?? {}) as Record<string, JsonSchema>)) sizedSchemas(property, `${where}.${name}`, found);
  if (resolved.items) sizedSchemas(resolved.items as JsonSchema, `${where}[]`, found);
  return found;
}

describe('request limits', function () {
  this.timeout(60_000);
  let stack: Stack;
  let routes: (Route & { fullPath: string })[];
  let send: (request: RawRequest) => ReturnType<typeof rawRequest>;
  before(async () => {
    stack = await startStack({ withWorker: false });
    routes = routeGroups(stack.services).flatMap((g) => g.routes.map((r) => ({ ...r, fullPath: `${g.prefix}${r.path}` })));
    const { apiKey } = await newAccount(stack.db, 0);
    // The dashboard's routes with a signed-in owner's session (they take no key), so that their bodies are read too.
    const owner = dashboardHeaders(stack.baseUrl, (await signedInUser(stack.baseUrl, stack.db)).browser);
    send = (request) => rawRequest(stack.baseUrl, {
      ...request,
      headers: { ...(request.path.startsWith(DASHBOARD_API) ? owner : { Authorization: `Bearer ${apiKey}` }), 'Content-Type': 'application/json', ...request.headers },
    });
  });
  after(() => stack.stop());

  describe('body size', () => {
    it('caps each body at what its route can carry: n images of 15 MB in base64 plus 1 MB, else 128 KiB', () => {
      const caps = Object.fromEntries(routes.filter((r) => r.body).map((r) => [`${r.method} ${r.fullPath}`, bodyLimit(r)]));
      const image = Math.ceil((15 * 1024 * 1024) / 3) * 4;
      const images = (n: number) => ({ bytes: n * image + 1024 * 1024, code: 'image_too_large' });
      const plain = { bytes: DEFAULT_BODY_LIMIT_BYTES, code: 'request_too_large' };
      assert.deepEqual(caps, {
        [`post ${V1}/projects`]: plain, [`patch ${V1}/projects/{project_id}`]: plain, [`patch ${V1}/cards/{card_id}`]: plain,
        [`post ${V1}/upload`]: images(1),
        [`post ${V1}/generate/photo`]: images(5), [`post ${V1}/generate/card`]: images(6), [`post ${V1}/generate/video`]: images(2),
        [`post ${V1}/edit/{action_id}`]: plain, [`post ${V1}/webhooks`]: plain,
        [`post ${V1}/analyze`]: images(1), [`post ${V1}/wishes/suggest`]: images(5), [`post ${V1}/video/suggest-scenario`]: images(1),
        [`post ${V1}/quote`]: images(6), // the body of any request it prices, images included (not read)
        [`post ${V2}/jobs/generate`]: images(5), [`post ${V2}/jobs/edit`]: plain,
        [`post ${V2}/batches`]: { bytes: 64 * 1024 * 1024, code: 'request_too_large' }, // a whole catalogue; each item is held to its own route's limit
        [`post ${V1}/funnels`]: images(5), [`post ${V1}/funnels/{funnel_id}/setup`]: images(3), [`post ${V1}/funnels/{funnel_id}/generate`]: plain,
        ...Object.fromEntries(['post /sign-in', 'post /password', 'post /links/redeem', 'post /password-reset', 'post /sign-up', 'post /keys',
          'patch /keys/{key_id}', 'post /keys/{key_id}/spend-limit', 'post /members', 'patch /members/{user_id}', 'post /webhooks', 'patch /webhooks/{webhook_id}',
        ].map((route) => [route.replace(' ', ` ${DASHBOARD_API}`), plain])),
        [`post ${DASHBOARD_API}/try/photo`]: images(5), [`post ${DASHBOARD_API}/try/card`]: images(6), [`post ${DASHBOARD_API}/try/video`]: images(2),
      });
    });

    it('answers 413 past the cap, by Content-Length before reading and while streaming, and keeps serving', async () => {
      for (const route of routes.filter((r) => r.body)) {
        const { bytes, code } = bodyLimit(route);
        const path = route.fullPath.replace(/\{\w+\}/g, '1');
        const declared = await send({ method: route.method.toUpperCase(), path, headers: { 'Content-Length': bytes + 1 } });
        assert.deepEqual([declared.status, declared.json?.detail?.error], [413, code], `${route.method} ${path}`);
      }
      // The longest legal body without images, every emoji written as an escaped surrogate pair (Python's default).
      const longest = JSON.stringify({ name: '😀'.repeat(200), product_name: '😀'.repeat(200), concept_id: '😀'.repeat(100), comment: '😀'.repeat(5000) })
        .replace(/[\ud800-\udfff]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
      assert.ok(longest.length > 64 * 1024);
      const escaped = await send({ method: 'POST', path: `${V1}/projects`, body: longest });
      assert.deepEqual([escaped.status, escaped.json.comment], [201, '😀'.repeat(5000)]);
      const padded = (size: number) => JSON.stringify({ name: 'padded', padding: 'x'.repeat(size - 30) });
      assert.equal(padded(DEFAULT_BODY_LIMIT_BYTES).length, DEFAULT_BODY_LIMIT_BYTES);
      const fits = await send({ method: 'POST', path: `${V1}/projects`, body: padded(DEFAULT_BODY_LIMIT_BYTES) });
      assert.equal(fits.status, 201, fits.text);
      const over = await send({ method: 'POST', path: `${V1}/projects`, body: padded(DEFAULT_BODY_LIMIT_BYTES + 1) });
      assert.deepEqual([over.status, over.json.detail.error], [413, 'request_too_large']);
      // Chunked, with no Content-Length, and endless: refused once the cap is crossed, the rest dropped unread.
      const megabyte = Buffer.alloc(1024 * 1024, 'A');
      const endless = Readable.from((function* () {
        yield Buffer.from('{"image": {"data": "');
        for (;;) yield megabyte;
      })());
      const streamed = await send({ method: 'POST', path: `${V1}/upload`, body: endless });
      assert.deepEqual([streamed.status, streamed.json.detail.error], [413, 'image_too_large']);
      assert.equal((await send({ method: 'GET', path: `${V1}/balance` })).status, 200);
    });
  });

  describe('JSON shape', () => {
    it(`refuses nesting deeper than ${MAX_JSON_DEPTH} levels with 422 before any walk, even 100,000 deep`, async () => {
      const at = (depth: number) => send({ method: 'POST', path: `${V1}/projects`, body: `{"name": ${nested(depth - 1)}}` });
      const deepest = await at(MAX_JSON_DEPTH);
      assert.deepEqual([deepest.status, deepest.json.detail[0].loc, deepest.json.detail[0].type], [422, ['body', 'name'], 'type'], 'read, then validated');
      const tooDeep = await at(MAX_JSON_DEPTH + 1);
      assert.deepEqual([tooDeep.status, tooDeep.json.detail], [422, [{ loc: ['body'], msg: `must not be nested more than ${MAX_JSON_DEPTH} levels deep`, type: 'maxDepth' }]]);
      // Nesting hidden in strings is text, not depth.
      assert.equal((await send({ method: 'POST', path: `${V1}/projects`, body: JSON.stringify({ name: nested(50), comment: '"\\[x\\' }) })).status, 201);
      // Far deeper than the stack of any recursive walk, on a route whose cap lets it in.
      const hostile = await send({ method: 'POST', path: `${V1}/generate/photo`, body: `{"images": ${nested(100_000)}}` });
      assert.deepEqual([hostile.status, hostile.json.detail[0].type], [422, 'maxDepth']);
    });

    it(`refuses more than ${MAX_JSON_VALUES} values with 422, so a million-element array is never built`, async () => {
      const million = await send({ method: 'POST', path: `${V1}/generate/photo`, body: `{"images": [${'1,'.repeat(999_999)}1]}` });
      assert.deepEqual([million.status, million.json.detail], [422, [{ loc: ['body'], msg: `must not hold more than ${MAX_JSON_VALUES} values`, type: 'maxValues' }]]);
      const members = Object.fromEntries(Array.from({ length: MAX_JSON_VALUES }, (_, i) => [`k${i}`, i]));
      const wide = await send({ method: 'POST', path: `${V1}/generate/photo`, body: JSON.stringify({ ...members, images: [] }) });
      assert.deepEqual([wide.status, wide.json.detail[0].type], [422, 'maxValues']);
      const fits = await send({ method: 'POST', path: `${V1}/projects`, body: JSON.stringify(Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, [i]]))) });
      assert.equal(fits.status, 201, 'unknown fields are still ignored');
    });

    it('finds a NUL at any depth without recursion', () => {
      let value: unknown = 'a\u0000';
      for (let i = 0; i < 100_000; i++) value = [value];
      assert.equal(findUnstorable(value, ['body'])!.loc.length, 100_001);
      assert.deepEqual(findUnstorable({ a: ['x', { 'b\u0000': 1 }], c: 'y\u0000' }, ['body'])!.loc, ['body', 'a', 1, 'b\u0000']);
      assert.equal(findUnstorable({ a: [1, 'x', { b: null }] }, ['body']), undefined);
    });
  });

  describe('query', () => {
    it('reads a query of thousands of repeated names in one pass, shaped as before', async () => {
      // Koa's ctx.query calls getAll once per name: quadratic, up to a second of CPU within the 16 KB header limit.
      const getAll = URLSearchParams.prototype.getAll;
      let calls = 0;
      URLSearchParams.prototype.getAll = function (this: URLSearchParams, name: string) {
        calls++;
        return getAll.call(this, name);
      };
      try {
        const repeated = await send({ method: 'GET', path: `${V1}/results?client_group_id=a&${'client_group_id=a&x=1&'.repeat(600)}` });
        assert.deepEqual([repeated.status, repeated.json.detail[0].loc, repeated.json.detail[0].type], [422, ['query', 'client_group_id'], 'type']);
        const asset = await send({ method: 'GET', path: `/assets/inputs/${'0'.repeat(64)}.jpg?${'expires=1&x=1&'.repeat(1000)}` });
        assert.deepEqual([asset.status, asset.json.detail.error], [403, 'forbidden']);
      } finally {
        URLSearchParams.prototype.getAll = getAll;
      }
      assert.equal(calls, 0);
      const proto = await send({ method: 'GET', path: `${V1}/projects?__proto__=1&__proto__=2&limit=3&constructor=x` });
      assert.deepEqual([proto.status, proto.json.limit], [200, 3]);
    });
  });

  describe('validation', () => {
    it('stops a body at its first problem, and checks maxItems before items: a million wrong elements give one issue', () => {
      const issuesOf = (schema: JsonSchema, value: unknown) => {
        try {
          compileValidator('body', schema)(value);
          return [];
        } catch (err) {
          assert.ok(err instanceof ValidationFailed);
          return err.issues;
        }
      };
      const million = new Array(1_000_000).fill(7);
      let arrays = 0;
      for (const route of routes.filter((r) => r.body)) {
        assert.ok(issuesOf(route.body!, million).length === 1, route.operationId);
        for (const { where, schema } of sizedSchemas(route.body!, 'body').filter((s) => s.schema.type === 'array')) {
          arrays++;
          assert.deepEqual(issuesOf(schema, million).map((i) => i.type), ['maxItems'], `${route.operationId} ${where}`);
          const body = { [where.split('.')[1]]: million };
          assert.ok(issuesOf(route.body!, body).length <= 3, `${route.operationId} ${where}`);
        }
      }
      assert.ok(arrays >= 4, 'photo, card and v2 images, webhook events');
    });

    it('bounds every string and array of every body (only base64 image data is left to the body cap)', () => {
      const unbounded = routes.filter((r) => r.body).flatMap((route) => sizedSchemas(route.body!, `${route.operationId}:body`)
        .filter(({ schema }) => (schema.type === 'array' ? schema.maxItems === undefined : schema.maxLength === undefined && !schema.enum))
        .map(({ where }) => where));
      assert.deepEqual([...new Set(unbounded.map((w) => w.replace(/^\w+:/, '')))].sort(), [
        'body.design_reference_image.data', 'body.environment_reference_image.data', 'body.final_frame.data', 'body.image.data',
        'body.images[].data', 'body.model_reference_image.data',
        // The dashboard's Try it carries a generate body whole under `request`.
        'body.request.design_reference_image.data', 'body.request.final_frame.data', 'body.request.image.data', 'body.request.images[].data',
      ]);
    });
  });
});

/** A request whose body is sent in part and then held open: it keeps what the server reserved for it. */
function heldBody(baseUrl: string, headers: Record<string, string>, path: string, body: string) {
  const { hostname, port } = new URL(baseUrl);
  const req = http.request({ host: hostname, port, method: 'POST', path, agent: false,
    headers: { ...headers, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } });
  const answered = new Promise<{ status: number; json: any }>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk)).on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(Buffer.concat(chunks).toString()) }));
    });
  });
  req.write(body.slice(0, 1024));
  return { answered, finish: () => req.end(body.slice(1024)), abort: () => req.destroy() };
}

describe('request bodies in flight', function () {
  this.timeout(60_000);
  const MiB = 1024 * 1024;
  let stack: Stack;
  let headers: Record<string, string>;
  let send: (request: RawRequest) => ReturnType<typeof rawRequest>;
  const inFlight = () => stack.services.bodyBytesInFlight.bytes;
  before(async () => {
    stack = await startStack({ withWorker: false, maxBodyBytesInFlight: 4 * MiB });
    headers = { Authorization: `Bearer ${(await newAccount(stack.db, 0)).apiKey}` };
    send = (request) => rawRequest(stack.baseUrl, { ...request, headers: { ...headers, 'Content-Type': 'application/json', ...request.headers } });
  });
  after(() => stack.stop());

  it('refuses bodies past MAX_BODY_BYTES_IN_FLIGHT with 503 and Retry-After, unread, keeps serving, and gives every byte back', async () => {
    // 3 MiB reserved by its Content-Length while the body is still arriving.
    const held = heldBody(stack.baseUrl, headers, `${V1}/upload`, JSON.stringify({ image: { data: `!${'A'.repeat(3 * MiB)}` } }));
    await eventually(async () => inFlight(), (bytes) => bytes > 3 * MiB);

    const declared = await send({ method: 'POST', path: `${V1}/generate/card`, body: JSON.stringify({ padding: 'x'.repeat(2 * MiB) }) });
    assert.deepEqual([declared.status, declared.headers['retry-after']], [503, '5']);
    assert.deepEqual(declared.json, { detail: {
      error: 'generation_unavailable', message: 'The server is receiving as many large request bodies as it can hold at once; try again shortly',
    } });
    // Chunked, without a Content-Length: refused once it outgrows the room left, the rest dropped unread.
    const megabyte = Buffer.alloc(MiB, 'A');
    const endless = Readable.from((function* () {
      yield Buffer.from('{"image": {"data": "');
      for (;;) yield megabyte;
    })());
    const streamed = await send({ method: 'POST', path: `${V1}/upload`, body: endless });
    assert.deepEqual([streamed.status, streamed.json.detail.error], [503, 'generation_unavailable']);
    // Small bodies still fit, and requests without one never wait.
    assert.equal((await send({ method: 'POST', path: `${V1}/projects`, body: JSON.stringify({ name: 'small' }) })).status, 201);
    assert.equal((await send({ method: 'GET', path: `${V1}/balance` })).status, 200);

    held.finish();
    const failed = await held.answered;
    assert.deepEqual([failed.status, failed.json.detail.error], [400, 'invalid_request']);
    assert.equal(inFlight(), 0, 'released before the answer was sent');

    // A client that goes away mid-body releases its bytes too.
    const abandoned = heldBody(stack.baseUrl, headers, `${V1}/upload`, JSON.stringify({ image: { data: 'A'.repeat(2 * MiB) } }));
    abandoned.answered.catch(() => undefined);
    await eventually(async () => inFlight(), (bytes) => bytes > 2 * MiB);
    abandoned.abort();
    await eventually(async () => inFlight(), (bytes) => bytes === 0);
  });

  it('serves a legal body larger than the whole limit when it is alone', async () => {
    const image = await noiseImage('png', 1600, 1200);
    assert.ok(image.length > 4 * MiB);
    const res = await send({ method: 'POST', path: `${V1}/upload`, body: JSON.stringify({ image: { data: image.toString('base64') } }) });
    assert.equal(res.status, 201, res.text);
    assert.equal(inFlight(), 0);
  });
});

describe('rate limit across two API processes sharing one database', function () {
  this.timeout(60_000);
  const LIMIT = 20;
  let first: Stack;
  let second: Stack;
  before(async () => {
    [first, second] = await startApiPair(LIMIT);
  });
  after(async () => {
    await first.stop();
    await second.stop();
  });

  it('accepts exactly the limit of 3x the limit sent at once through both, refuses the rest with the 429 of the contract, and refused requests do nothing', async () => {
    const { accountId, apiKey, keyId } = await newAccount(first.db, 1000);
    const image = await jpegBase64();
    const viaFirst = apiClient(first.baseUrl, apiKey);
    const viaSecond = apiClient(second.baseUrl, apiKey);
    // Reads, writes and generations (a spark hold and a workflow each), every kind through both processes.
    const kinds: ((call: typeof viaFirst) => Promise<ApiResponse>)[] = [
      (call) => call('GET', `${V1}/balance`),
      (call) => call('POST', `${V1}/projects`, { name: 'burst' }),
      (call) => call('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Lamp', category_id: 'home' }),
    ];
    await clearOfRateWindowEdge(15); // the whole burst in one window
    const answers = await Promise.all(Array.from({ length: 3 * LIMIT }, (_, i) => kinds[i % 3](i % 2 ? viaSecond : viaFirst).then((res) => ({ kind: i % 3, res }))));

    const accepted = answers.filter(({ res }) => res.status < 300);
    const refused = answers.filter(({ res }) => res.status === 429);
    assert.deepEqual([accepted.length, refused.length], [LIMIT, 2 * LIMIT], JSON.stringify(answers.filter(({ res }) => res.status >= 300 && res.status !== 429).map(({ res }) => res.body)));
    assert.deepEqual(accepted.map(({ res }) => Number(res.headers.get('x-ratelimit-remaining'))).sort((a, b) => a - b), Array.from({ length: LIMIT }, (_, i) => i),
      'each number of the window given once');
    const resets = new Set(answers.map(({ res }) => res.headers.get('x-ratelimit-reset')));
    assert.equal(resets.size, 1, 'one window');
    const reset = Number([...resets][0]);
    assert.equal(reset % 60, 0);
    for (const { res } of refused) {
      assert.deepEqual(res.body, { detail: {
        error: 'rate_limit_exceeded', message: `Rate limit of ${LIMIT} requests per minute exceeded`,
        details: { limit: LIMIT, reset_at: new Date(reset * 1000).toISOString() },
      } });
      assert.deepEqual([res.headers.get('x-ratelimit-limit'), res.headers.get('x-ratelimit-remaining')], [String(LIMIT), '0']);
      const retryAfter = Number(res.headers.get('retry-after'));
      const left = reset - Date.now() / 1000;
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60 && Math.abs(retryAfter - left) <= 2, `Retry-After ${retryAfter}, ${left} s left`);
    }
    for (const { res } of accepted) assert.equal(res.headers.get('x-ratelimit-limit'), String(LIMIT));

    // Only the accepted requests did anything: one project each (a generation makes its own), one hold per generation.
    const acceptedOf = (kind: number) => accepted.filter((a) => a.kind === kind).length;
    const [row] = await first.db.query(`SELECT
        (SELECT count(*)::int FROM projects WHERE account_id = $1 AND name = 'burst') AS projects,
        (SELECT count(*)::int FROM actions WHERE account_id = $1) AS actions,
        (SELECT count(*)::int FROM spark_holds WHERE account_id = $1) AS holds,
        (SELECT sum(count)::int FROM rate_limit_windows WHERE key_id = $2) AS counted`, [accountId, keyId]);
    assert.deepEqual(row, { projects: acceptedOf(1), actions: acceptedOf(2), holds: acceptedOf(2), counted: 3 * LIMIT }, 'every request counted once, refused ones did nothing');
    assert.deepEqual([first.services.bodyBytesInFlight.bytes, second.services.bodyBytesInFlight.bytes], [0, 0]);
  });

  it('stays exact with an API process whose clock is a minute ahead: the window is the database\'s', async () => {
    // A host's clock off by a minute is extreme; by s seconds, its requests fall into the neighbouring window for s
    // seconds of every minute, and a burst then is allowed up to twice. A minute makes that every time.
    const { apiKey, keyId } = await newAccount(first.db, 0);
    const env = testEnvironment();
    const port = await freePort();
    const ahead = await startServiceProcess('api', {
      DATABASE_URL: env.databaseUrl, TEMPORAL_ADDRESS: env.temporalAddress, TEMPORAL_TASK_QUEUE: `ahead-${randomUUID()}`,
      DATA_DIR: path.join(os.tmpdir(), `imagery-clock-ahead-${randomUUID()}`), PORT: String(port), RATE_LIMIT_PER_MINUTE: String(LIMIT),
      NODE_OPTIONS: `--require ${path.resolve(__dirname, '../support/clock-ahead.js')}`, CLOCK_AHEAD_MS: '60000',
    });
    try {
      const viaFirst = apiClient(first.baseUrl, apiKey);
      const viaAhead = apiClient(`http://127.0.0.1:${port}`, apiKey);
      await clearOfRateWindowEdge(15);
      const answers = await Promise.all(Array.from({ length: 3 * LIMIT }, (_, i) => (i % 2 ? viaAhead : viaFirst)('GET', `${V1}/balance`)));
      assert.deepEqual([answers.filter((r) => r.status === 200).length, answers.filter((r) => r.status === 429).length], [LIMIT, 2 * LIMIT]);
      assert.equal(new Set(answers.map((r) => r.headers.get('x-ratelimit-reset'))).size, 1, 'both name the same window');
      const windows = await first.db.query('SELECT window_start::int AS window, count FROM rate_limit_windows WHERE key_id = $1', [keyId]);
      assert.equal(windows.length, 1, JSON.stringify(windows));
      assert.equal(windows[0].count, 3 * LIMIT);
    } finally {
      await ahead.stop();
    }
  });
});
