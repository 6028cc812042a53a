/**
 * Slow clients over real sockets against the real API server (`createApiServer`, the server of `npm start`), with
 * its deadlines set short through the same configuration: headers trickled (slowloris), bodies stalled or
 * trickled on every route that takes one, kept-alive connections left idle, and a reader that stops reading a
 * large asset.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { ReadStream } from 'node:fs';
import { routeGroups } from '../../api/app';
import { DASHBOARD_API, dashboardHeaders, signedInUser } from '../support/dashboard-client';
import { MIN_BODY_BYTES_PER_SECOND } from '../../api/middleware/body-pace';
import { connectionsCheckingIntervalMs } from '../../api/server';
import { loadConfig } from '../../src/config';
import { type AssetStore, FileAssetStore } from '../../src/storage/asset-store';
import { apiClient, eventually, newAccount, noiseImage, V1, withEnv } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

/** The deadlines of this suite's server, in seconds (the defaults are 20, 900, 30 and 65). */
const HEADERS = 0.5;
const REQUEST = 3;
const IDLE = 0.5;
const KEEP_ALIVE = 0.5;
/** Node checks the headers and request deadlines this often; its idle kept-alive connections get 1 s of grace. */
const CHECK = connectionsCheckingIntervalMs({ httpHeadersTimeoutSeconds: HEADERS, httpRequestTimeoutSeconds: REQUEST, httpKeepAliveTimeoutSeconds: KEEP_ALIVE }) / 1000;
const NODE_KEEP_ALIVE_GRACE = 1;
/** What a loaded test machine may add to a deadline. */
const SLACK = 1;

/** One TCP connection to the API, as a client that writes what it wants when it wants. */
interface Wire {
  socket: net.Socket;
  /** Everything the server sent so far. */
  received(): Buffer;
  /** Seconds from `since` (the connection's opening unless reset) to the server's closing of the connection. */
  closed: Promise<number>;
  since: number;
}

function connect(baseUrl: string): Promise<Wire> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    const wire: Wire = {
      socket, since: Date.now(), received: () => Buffer.concat(chunks),
      closed: new Promise((done) => socket.on('close', () => done((Date.now() - wire.since) / 1000))),
    };
    socket.on('error', () => undefined); // a reset is one way to be closed
    socket.once('connect', () => {
      wire.since = Date.now();
      resolve(wire);
    });
    socket.once('error', reject);
  });
}

/** Writes `piece()` every `everyMs` until the connection closes (the client an attacker writes). */
function trickle(wire: Wire, everyMs: number, piece: () => string): void {
  const timer = setInterval(() => {
    if (wire.socket.writable) wire.socket.write(piece());
  }, everyMs);
  void wire.closed.then(() => clearInterval(timer));
}

/** The status line and JSON body of the one answer in `raw`, if any. */
function answerIn(raw: Buffer): { status: number; headers: string; json?: any } | undefined {
  const text = raw.toString('latin1');
  const match = /^HTTP\/1\.1 (\d{3})[^\r]*\r\n([\s\S]*?)\r\n\r\n([\s\S]*)$/.exec(text);
  if (!match) return undefined;
  let json: unknown;
  try {
    json = match[3] ? JSON.parse(Buffer.from(match[3], 'latin1').toString('utf8')) : undefined;
  } catch {
    // not JSON
  }
  return { status: Number(match[1]), headers: match[2].toLowerCase(), json };
}

describe('slow clients', function () {
  this.timeout(60_000);
  let stack: Stack;
  /** Every stream the store opened for the API, to see what a slow reader made it read. */
  const opened: ReadStream[] = [];
  let apiKey: string;
  let accountId: number;
  let others: ReturnType<typeof apiClient>;
  const auth = () => `Authorization: Bearer ${apiKey}\r\n`;

  before(async () => {
    const files = new FileAssetStore(path.join(os.tmpdir(), 'imagery-test-assets'));
    const store: AssetStore = {
      put: (key, bytes) => files.put(key, bytes), read: (key) => files.read(key), list: (prefix) => files.list(prefix),
      delete: (key) => files.delete(key),
      open: async (key, range) => {
        const asset = await files.open(key, range);
        if (asset) opened.push(asset.stream as ReadStream);
        return asset;
      },
    };
    stack = await startStack({
      withWorker: false, store,
      http: { httpHeadersTimeoutSeconds: HEADERS, httpRequestTimeoutSeconds: REQUEST, httpIdleTimeoutSeconds: IDLE, httpKeepAliveTimeoutSeconds: KEEP_ALIVE },
    });
    ({ apiKey, accountId } = await newAccount(stack.db, 50));
    others = apiClient(stack.baseUrl, (await newAccount(stack.db, 0)).apiKey);
  });
  after(() => stack.stop());

  it('defaults: four 15 MB images in base64 fit the request deadline at 1 Mbit/s, and the checks run every second', () => {
    const config = loadConfig();
    assert.deepEqual([config.httpHeadersTimeoutSeconds, config.httpRequestTimeoutSeconds, config.httpIdleTimeoutSeconds, config.httpKeepAliveTimeoutSeconds], [20, 900, 30, 65]);
    const fourImages = 4 * Math.ceil((15 * 1024 * 1024) / 3) * 4 + 1024; // and a little JSON around them
    const secondsAt = (bitsPerSecond: number, bytes: number) => (bytes * 8) / bitsPerSecond;
    assert.ok(secondsAt(1_000_000, fourImages) < config.httpRequestTimeoutSeconds * 0.8, `${secondsAt(1_000_000, fourImages)} s`);
    // The minimum rate a body must keep is far below such a link (it cuts tricklers, not slow links).
    assert.ok(MIN_BODY_BYTES_PER_SECOND * 8 <= 1_000_000 / 4);
    assert.equal(connectionsCheckingIntervalMs(config), 1000);
    const configWith = (env: Record<string, string>) => () => withEnv(env, () => loadConfig());
    assert.throws(configWith({ HTTP_HEADERS_TIMEOUT_SECONDS: '30', HTTP_REQUEST_TIMEOUT_SECONDS: '20' }), /must not be over HTTP_REQUEST_TIMEOUT_SECONDS/);
    assert.throws(configWith({ HTTP_IDLE_TIMEOUT_SECONDS: '0' }), /HTTP_IDLE_TIMEOUT_SECONDS must be from 0.01/);
    assert.throws(configWith({ HTTP_KEEP_ALIVE_TIMEOUT_SECONDS: '0' }), /HTTP_KEEP_ALIVE_TIMEOUT_SECONDS must be from 0.01/);
    assert.throws(configWith({ HTTP_KEEP_ALIVE_TIMEOUT_SECONDS: '9999999' }), /HTTP_KEEP_ALIVE_TIMEOUT_SECONDS must be from 0.01 to 2147483/);
  });

  it('cuts a client trickling its headers (slowloris), or sending nothing, at the headers deadline with 408, and serves others meanwhile', async () => {
    const slowloris = await connect(stack.baseUrl);
    slowloris.socket.write(`GET ${V1}/balance HTTP/1.1\r\nHost: api\r\n`);
    trickle(slowloris, 100, () => 'X-Slow: 1\r\n'); // a header line every 100 ms: never idle, never done
    const silent = await connect(stack.baseUrl); // connects and sends nothing at all
    assert.equal((await others('GET', `${V1}/balance`)).status, 200, 'served while both are held');
    for (const [name, wire] of [['slowloris', slowloris], ['silent', silent]] as const) {
      const seconds = await within(wire.closed, HEADERS + CHECK + SLACK + 5, `${name} closed`);
      assert.ok(seconds >= HEADERS - 0.05 && seconds <= HEADERS + CHECK + SLACK, `${name} closed after ${seconds} s`);
      assert.match(wire.received().toString('latin1'), /^HTTP\/1\.1 408 Request Timeout\r\nConnection: close\r\n\r\n$/, name);
    }
    assert.equal((await others('GET', `${V1}/balance`)).status, 200);
  });

  it('cuts a body stalled or trickled on every route that takes one with 408 request_timeout, closes it, holds and charges nothing', async () => {
    const routes = routeGroups(stack.services).flatMap((g) => g.routes.map((r) => ({ ...r, fullPath: `${g.prefix}${r.path}` }))).filter((r) => r.body);
    assert.ok(routes.length >= 17, `${routes.length} routes take a body`);
    // The dashboard's routes with a signed-in owner's session (they take no key), so that their bodies are read too.
    const owner = dashboardHeaders(stack.baseUrl, (await signedInUser(stack.baseUrl, stack.db)).browser);
    const declared = 64 * 1024; // under every route's cap, so each is read (and reserved) rather than refused
    const start = async (route: (typeof routes)[number], how: 'stalled' | 'trickled') => {
      const wire = await connect(stack.baseUrl);
      const requestPath = route.fullPath.replace(/\{\w+\}/g, '1');
      const credentials = requestPath.startsWith(DASHBOARD_API) ? Object.entries(owner).map(([k, v]) => `${k}: ${v}\r\n`).join('') : auth();
      wire.socket.write(`${route.method.toUpperCase()} ${requestPath} HTTP/1.1\r\nHost: api\r\n${credentials}Content-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n{"x": "`);
      if (how === 'stalled') wire.socket.write('a'.repeat(1024)); // then nothing
      else trickle(wire, 100, () => 'a'); // a byte every 100 ms: never idle for IDLE, far below the minimum rate
      return { name: `${how} ${route.method} ${requestPath}`, wire };
    };
    const clients = await Promise.all(routes.flatMap((route) => [start(route, 'stalled'), start(route, 'trickled')]));
    // Held while they arrive: their bytes are reserved, and the process still answers everyone else at once.
    await eventually(async () => stack.services.bodyBytesInFlight.bytes, (bytes) => bytes > 0, 5_000, 10);
    const [balance, project] = await Promise.all([others('GET', `${V1}/balance`), others('POST', `${V1}/projects`, { name: 'meanwhile' })]);
    assert.deepEqual([balance.status, project.status], [200, 201]);

    for (const { name, wire } of clients) {
      const seconds = await within(wire.closed, REQUEST + CHECK + SLACK + 5, `${name} closed`);
      const answer = answerIn(wire.received());
      assert.equal(answer?.status, 408, `${name}: ${wire.received().toString('latin1').slice(0, 200)}`);
      assert.match(answer!.headers, /^connection: close$/m, name);
      assert.equal(answer!.json.detail.error, 'request_timeout', name);
      assert.ok(seconds >= IDLE - 0.05 && seconds < REQUEST, `${name}: closed after ${seconds} s, by the body deadline, before Node's request deadline`);
    }
    assert.equal(stack.services.bodyBytesInFlight.bytes, 0, 'every reserved byte given back');
    const [row] = await stack.db.query(`SELECT a.balance, a.held,
        (SELECT count(*)::int FROM actions WHERE account_id = a.id) AS actions, (SELECT count(*)::int FROM projects WHERE account_id = a.id) AS projects,
        (SELECT count(*)::int FROM spark_holds WHERE account_id = a.id) AS holds
      FROM accounts a WHERE a.id = $1`, [accountId]);
    assert.deepEqual(row, { balance: 50, held: 0, actions: 0, projects: 0, holds: 0 }, 'nothing held, charged or made');
    assert.equal((await others('GET', `${V1}/balance`)).status, 200);
  });

  it('closes, at the same deadline, a connection whose body is trickled after it was answered unread (no key, over the cap, no such route)', async () => {
    const refusals = [
      { name: 'no key', head: `POST ${V1}/projects HTTP/1.1\r\nHost: api\r\n`, status: 401 },
      { name: 'over the cap by Content-Length', head: `POST ${V1}/projects HTTP/1.1\r\nHost: api\r\n${auth()}`, status: 413, length: 1024 * 1024 },
      { name: 'no such route', head: `POST ${V1}/nowhere HTTP/1.1\r\nHost: api\r\n${auth()}`, status: 404 },
    ];
    const clients = await Promise.all(refusals.map(async ({ name, head, status, length }) => {
      const wire = await connect(stack.baseUrl);
      wire.socket.write(`${head}Content-Type: application/json\r\nContent-Length: ${length ?? 64 * 1024}\r\n\r\n{`);
      trickle(wire, 100, () => 'a');
      return { name, status, wire };
    }));
    for (const { name, status, wire } of clients) {
      const seconds = await within(wire.closed, REQUEST + CHECK + SLACK + 5, `${name} closed`);
      assert.equal(answerIn(wire.received())?.status, status, name);
      assert.ok(seconds >= IDLE - 0.05 && seconds < REQUEST, `${name}: closed after ${seconds} s, by the body deadline, before Node's request deadline`);
    }
  });

  it('serves a slow but steady upload that takes several idle periods, and cuts one past the request deadline', async () => {
    const image = (await noiseImage('jpeg', 640, 480)).toString('base64');
    const body = Buffer.from(JSON.stringify({ image: { data: image } }));
    const steady = await connect(stack.baseUrl);
    steady.socket.write(`POST ${V1}/upload HTTP/1.1\r\nHost: api\r\n${auth()}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`);
    // In 36 pieces, one every 50 ms: 1.8 s, several idle periods, at well over the minimum rate and never idle for IDLE.
    const pieces = 36;
    const piece = Math.ceil(body.length / pieces);
    assert.ok(body.length / (pieces * 0.05) > 4 * MIN_BODY_BYTES_PER_SECOND && pieces * 0.05 > 3 * IDLE && pieces * 0.05 < REQUEST * 0.7);
    let sent = 0;
    const sending = setInterval(() => {
      steady.socket.write(body.subarray(sent, sent + piece));
      sent += piece;
      if (sent >= body.length) clearInterval(sending);
    }, 50);
    await within(steady.closed, REQUEST + SLACK + 5, 'the steady upload answered');
    const answer = answerIn(steady.received());
    assert.equal(answer?.status, 201, steady.received().toString('latin1').slice(0, 300));
    assert.match(answer!.json.upload_id, /^upl_/);

    // Fast enough for the body deadline, but the whole request would take longer than REQUEST: Node cuts it.
    const endless = await connect(stack.baseUrl);
    endless.socket.write(`POST ${V1}/upload HTTP/1.1\r\nHost: api\r\n${auth()}Content-Type: application/json\r\nContent-Length: ${20 * 1024 * 1024}\r\n\r\n{"image": {"data": "`);
    trickle(endless, 50, () => 'A'.repeat(4096)); // 80 KiB/s
    const seconds = await within(endless.closed, REQUEST + CHECK + SLACK + 5, 'the endless upload closed');
    assert.ok(seconds >= REQUEST - 0.05 && seconds <= REQUEST + CHECK + SLACK, `closed after ${seconds} s`);
    assert.match(endless.received().toString('latin1'), /^HTTP\/1\.1 408 Request Timeout\r\nConnection: close\r\n\r\n$/);
    await eventually(async () => stack.services.bodyBytesInFlight.bytes, (bytes) => bytes === 0, 5_000, 10);
  });

  it('closes a kept-alive connection left idle after an answer, an asset included', async () => {
    const key = `slow-clients/small-${Date.now()}.jpg`;
    await stack.store.put(key, await noiseImage('jpeg', 64, 64));
    const assetPath = new URL(stack.signer.url(key).url).pathname + new URL(stack.signer.url(key).url).search;
    for (const [name, request] of [
      ['an API answer', `GET ${V1}/balance HTTP/1.1\r\nHost: api\r\n${auth()}\r\n`],
      ['an asset', `GET ${assetPath} HTTP/1.1\r\nHost: api\r\n\r\n`],
    ]) {
      const wire = await connect(stack.baseUrl);
      wire.socket.write(request);
      await eventually(async () => answerIn(wire.received()), (answer) => answer !== undefined && /content-length: (\d+)/.test(answer.headers)
        && wire.received().length >= wire.received().indexOf('\r\n\r\n') + 4 + Number(/content-length: (\d+)/.exec(answer.headers)![1]), 5_000, 10);
      assert.equal(answerIn(wire.received())!.status, 200, name);
      wire.since = Date.now(); // idle from here
      const seconds = await within(wire.closed, KEEP_ALIVE + NODE_KEEP_ALIVE_GRACE + SLACK + 5, `the connection idle after ${name} closed`);
      assert.ok(seconds >= KEEP_ALIVE - 0.05 && seconds <= KEEP_ALIVE + NODE_KEEP_ALIVE_GRACE + SLACK, `${name}: idle connection closed after ${seconds} s`);
    }
  });

  it('drops a reader that stops reading a large asset after the idle deadline, having read little of it, and serves others meanwhile', async () => {
    const size = 48 * 1024 * 1024;
    const key = `slow-clients/large-${Date.now()}.mp4`;
    await stack.store.put(key, randomBytes(size));
    const { url } = stack.signer.url(key);
    const reader = await connect(stack.baseUrl);
    reader.socket.pause(); // reads nothing: the kernel's buffers fill, then the server's
    const before = opened.length;
    reader.socket.write(`GET ${new URL(url).pathname}${new URL(url).search} HTTP/1.1\r\nHost: api\r\n\r\n`);
    const stream = (await eventually(async () => opened.slice(before), (streams) => streams.length === 1, 5_000, 10))[0];
    assert.equal((await others('GET', `${V1}/balance`)).status, 200, 'served while the reader holds its answer');
    await within(new Promise<void>((resolve) => stream.once('close', () => resolve())), IDLE * 2 + SLACK + 5, 'the store\'s stream closed'); // its file too
    assert.ok(stream.bytesRead < size / 4, `read ${stream.bytesRead} of ${size} bytes from the store, the rest never`);
    // The reader, reading again, gets what was in flight and then the end of the connection: a short body, not a hang.
    reader.socket.resume();
    await within(reader.closed, 10, 'the reader\'s connection ended');
    const answer = answerIn(reader.received().subarray(0, 4096));
    assert.equal(answer?.status, 200);
    assert.ok(reader.received().length < size, `${reader.received().length} bytes received`);
  });

});

/** `promise`, or a failure saying what did not happen within `seconds` (a deadline that is not kept must not hang the suite). */
function within<T>(promise: Promise<T>, seconds: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${seconds} s`)), seconds * 1000);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
