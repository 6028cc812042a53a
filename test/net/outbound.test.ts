import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { OutboundFailed, OutboundPolicy, OutboundRefused, OutboundTooLarge } from '../../src/net/outbound';
import { startHttpsServer, TestHttpsServer } from '../support/https-server';
import { INTERNAL_URLS } from '../support/internal-urls';
import { LyingAnswer, sendLyingAnswer } from '../support/lying-answer';
import { ALLOW_CIDRS, ALLOWED_ADDRESS, REFUSED_ADDRESS, RebindingStage, startRebindingStage } from '../support/rebinding';

describe('outbound address ranges', () => {
  const policy = new OutboundPolicy();

  it('refuses every internal IPv4 and IPv6 range, including the forms that embed an IPv4 address', () => {
    const refused = [
      '0.0.0.0', '10.0.0.1', '100.64.0.1', '127.0.0.1', '169.254.169.254', '172.31.255.255', '192.0.0.8', '192.0.2.1',
      '192.88.99.1', '192.168.0.1', '198.18.0.1', '198.51.100.1', '203.0.113.1', '224.0.0.1', '240.0.0.1', '255.255.255.255',
      '::', '::1', // unspecified, loopback
      '::7f00:1', '::a00:1', '::a9fe:a9fe', // IPv4-compatible ::127.0.0.1, ::10.0.0.1, ::169.254.169.254
      '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:a9fe:a9fe', // IPv4-mapped internal addresses, either notation
      '::ffff:0:7f00:1', // IPv4-translated
      '64:ff9b::7f00:1', '64:ff9b:1::a00:1', // NAT64, well-known and local-use
      '100::1', '100:0:0:1::1', // discard-only, dummy
      '2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001:2::1', '2001:db8::1', '3fff::1', // IETF, Teredo, benchmarking, documentation
      '2002:7f00:1::1', '2002:c000:0204::1', // 6to4
      '5f00::1', // segment routing
      'fc00::1', 'fd12:3456::1', 'fe80::1', 'febf::1', 'fec0::1', 'feff::1', 'ff02::1', // ULA, link-local, site-local, multicast
    ];
    for (const ip of refused) assert.equal(policy.permits(ip), false, `${ip} must be refused`);
  });

  it('permits public addresses, IPv4-mapped public ones too', () => {
    for (const ip of ['93.184.216.34', '8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8', '::ffff:808:808']) {
      assert.equal(policy.permits(ip), true, `${ip} must be permitted`);
    }
  });

  it('refuses URLs with an internal literal address in any IPv6 notation', () => {
    for (const url of ['https://[::127.0.0.1]/', 'https://[::ffff:127.0.0.1]/', 'https://[::ffff:0:127.0.0.1]/', 'https://[2002:7f00:1::1]/',
      'https://[64:ff9b:1::10.0.0.1]/', 'https://[fec0::1]/', 'https://0x7f000001/', 'https://127.1/']) {
      assert.throws(() => policy.checkUrl(url), /private or local/, url);
    }
  });

  it('refuses URLs with an internal literal address in any IPv4 spelling (decimal, octal, hex, short forms)', () => {
    for (const url of INTERNAL_URLS) assert.throws(() => policy.checkUrl(url), /private or local/, url);
  });

  it('request() (a webhook send) refuses every one of those forms before connecting (a connection would end at the deadline)', async () => {
    for (const url of INTERNAL_URLS) {
      await assert.rejects(policy.request(new URL(url), { method: 'POST', timeoutMs: 2_000, maxBodyBytes: 1024 }),
        (err: Error) => err instanceof OutboundRefused && /private or local/.test(err.message), url);
    }
  });
});

/** Each starts with 16 bytes of body. */
const LIES: Record<string, Omit<LyingAnswer, 'body'>> = {
  '/lying-short': { declared: 16, then: 'endless' },
  '/lying-huge': { declared: 1e12, then: 'stall' },
  '/lying-long-close': { declared: 1000, then: 'close' },
  '/lying-long-stall': { declared: 1000, then: 'stall' },
};

describe('outbound deadlines and body caps', function () {
  this.timeout(20_000); // every exchange below ends within its own 0.5-5 s deadline; hanging means the bound is missing
  const policy = new OutboundPolicy(['127.0.0.0/8', '::1/128']);
  let server: TestHttpsServer;
  /** Resolves when the server sees the connection of the request to `path` closed. */
  const closed = new Map<string, Promise<void>>();

  /** Writes `next()` to the socket every 50 ms until the connection closes. */
  function trickle(socket: Socket, next: () => string) {
    const timer = setInterval(() => socket.write(next()), 50);
    socket.once('close', () => clearInterval(timer));
  }

  before(async () => {
    server = await startHttpsServer((req, res) => {
      const socket = res.socket as Socket;
      const path = req.url!.split('?')[0];
      closed.set(req.url!, new Promise((resolve) => socket.once('close', () => resolve())));
      if (path === '/trickled-headers') {
        socket.write('HTTP/1.1 200 OK\r\n');
        return trickle(socket, () => 'X-Trickle: 1\r\n');
      }
      if (path === '/trickled-body') {
        res.writeHead(200, { 'Content-Type': 'image/jpeg' });
        res.flushHeaders();
        return trickle(socket, () => {
          res.write('x');
          return '';
        });
      }
      const lie = LIES[path];
      if (lie) return sendLyingAnswer(res, { ...lie, body: Buffer.from('a'.repeat(16)) });
      if (path === '/endless' || path === '/endless-error') {
        res.writeHead(path === '/endless' ? 200 : 500, { 'Content-Type': 'application/octet-stream' });
        const chunk = Buffer.alloc(16 * 1024, 7);
        const pump = () => {
          while (!res.destroyed && res.write(chunk));
        };
        res.on('drain', pump);
        return pump();
      }
      res.writeHead(404).end();
    });
  });
  after(() => server.close());

  const url = (path: string, tag: string) => new URL(`${server.url}${path}?${tag}`);
  async function connectionClosed(pathAndTag: string) {
    const seen = closed.get(pathAndTag);
    assert.ok(seen, `the server got ${pathAndTag}`);
    await seen;
  }

  it('a server that trickles its headers: the request fails at its deadline and the connection is dropped', async () => {
    await assert.rejects(policy.request(url('/trickled-headers', 'a'), { method: 'POST', timeoutMs: 500, maxBodyBytes: 1024 }), /timed out after 500 ms/);
    await connectionClosed('/trickled-headers?a');
    await assert.rejects(policy.fetchBytes(url('/trickled-headers', 'b').toString(), { maxBytes: 1024, timeoutMs: 500 }), /timed out/);
    await connectionClosed('/trickled-headers?b');
  });

  it('a server that trickles its body: the request fails at its deadline', async () => {
    await assert.rejects(policy.request(url('/trickled-body', 'a'), { method: 'POST', timeoutMs: 500, maxBodyBytes: 1024 }), /timed out after 500 ms/);
    await connectionClosed('/trickled-body?a');
    await assert.rejects(policy.fetchBytes(url('/trickled-body', 'b').toString(), { maxBytes: 1024, timeoutMs: 500 }), /timed out/);
    await connectionClosed('/trickled-body?b');
  });

  it('an endless body is read to the cap, then the connection is dropped', async () => {
    const answer = await policy.request(url('/endless', 'a'), { method: 'POST', timeoutMs: 5_000, maxBodyBytes: 64 * 1024 });
    assert.deepEqual([answer.status, answer.truncated, answer.body.length], [200, true, 64 * 1024]);
    await connectionClosed('/endless?a');
    await assert.rejects(policy.fetchBytes(url('/endless', 'b').toString(), { maxBytes: 100_000, timeoutMs: 5_000 }),
      (err: Error) => err instanceof OutboundTooLarge && /over 100000 bytes/.test(err.message));
    await connectionClosed('/endless?b');
  });

  describe('a lying Content-Length', () => {
    it('declaring less than it sends (then sending without end): the declared bytes, the rest never read, the connection dropped', async () => {
      const answer = await policy.request(url('/lying-short', 'a'), { method: 'GET', timeoutMs: 5_000, maxBodyBytes: 1024 });
      assert.deepEqual([answer.status, answer.truncated, answer.body.toString()], [200, false, 'a'.repeat(16)]);
      await connectionClosed('/lying-short?a');
      const fetched = await policy.fetchBytes(url('/lying-short', 'b').toString(), { maxBytes: 1024, timeoutMs: 5_000 });
      assert.equal(fetched.bytes.toString(), 'a'.repeat(16));
      await connectionClosed('/lying-short?b');
    });

    it('declaring more than the cap: refused from the header, before reading (no wait for the deadline)', async () => {
      const started = Date.now();
      const answer = await policy.request(url('/lying-huge', 'a'), { method: 'GET', timeoutMs: 5_000, maxBodyBytes: 1024 });
      assert.deepEqual([answer.status, answer.truncated, answer.body.length], [200, true, 0]);
      await connectionClosed('/lying-huge?a');
      await assert.rejects(policy.fetchBytes(url('/lying-huge', 'b').toString(), { maxBytes: 1024, timeoutMs: 5_000 }),
        (err: Error) => err instanceof OutboundTooLarge && err.message === 'is 1000000000000 bytes; the limit is 1024');
      await connectionClosed('/lying-huge?b');
      assert.ok(Date.now() - started < 5_000, 'answered before any deadline');
    });

    it('declaring more than it sends, then closing: a failure at once, never the short body', async () => {
      const started = Date.now();
      await assert.rejects(policy.request(url('/lying-long-close', 'a'), { method: 'GET', timeoutMs: 5_000, maxBodyBytes: 4096 }),
        (err: Error) => err instanceof OutboundFailed && !/timed out/.test(err.message));
      await assert.rejects(policy.fetchBytes(url('/lying-long-close', 'b').toString(), { maxBytes: 4096, timeoutMs: 5_000 }),
        (err: Error) => err instanceof OutboundFailed && !/timed out/.test(err.message));
      assert.ok(Date.now() - started < 5_000, 'failed before the deadline');
    });

    it('declaring more than it sends, then stalling: a failure at the deadline, the connection dropped', async () => {
      await assert.rejects(policy.request(url('/lying-long-stall', 'a'), { method: 'GET', timeoutMs: 500, maxBodyBytes: 4096 }), /timed out after 500 ms/);
      await connectionClosed('/lying-long-stall?a');
      await assert.rejects(policy.fetchBytes(url('/lying-long-stall', 'b').toString(), { maxBytes: 4096, timeoutMs: 500 }), /timed out after 500 ms/);
      await connectionClosed('/lying-long-stall?b');
    });
  });

  it('an error answer with an endless body: the status, no body, the connection dropped', async () => {
    const answer = await policy.request(url('/endless-error', 'a'), { method: 'POST', timeoutMs: 5_000, maxBodyBytes: 64 * 1024 });
    assert.deepEqual([answer.status, answer.truncated, answer.body.length], [500, false, 0]);
    await connectionClosed('/endless-error?a');
  });
});

describe('outbound connections: a new one per exchange, TLS sessions resumed', function () {
  this.timeout(20_000);
  const policy = new OutboundPolicy(['127.0.0.0/8', '::1/128']);
  let server: TestHttpsServer;
  /** Per request: whether its TLS session was resumed, and the client's port (one port, one TCP connection). */
  const seen: { resumed: boolean; port: number }[] = [];
  before(async () => {
    server = await startHttpsServer((req, res) => {
      const socket = req.socket as TLSSocket;
      seen.push({ resumed: socket.isSessionReused(), port: socket.remotePort! });
      res.writeHead(204).end();
    });
  });
  after(() => server.close());
  const post = () => policy.request(new URL(`${server.url}/hook`), { method: 'POST', timeoutMs: 5_000, maxBodyBytes: 1024 });

  it('sequential exchanges each connect anew, and the later ones resume the first TLS session', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await post()).status, 204);
    assert.equal(server.connections, 3);
    assert.deepEqual(seen.map((s) => s.resumed), [false, true, true]);
  });

  it('concurrent exchanges never share a socket', async () => {
    const before = server.connections;
    seen.length = 0;
    await Promise.all(Array.from({ length: 8 }, post));
    assert.equal(server.connections - before, 8);
    assert.equal(new Set(seen.map((s) => s.port)).size, 8);
  });
});

describe('outbound DNS rebinding (a DNS server of the test whose answer changes)', function () {
  this.timeout(20_000);
  let stage: RebindingStage;
  let policy: OutboundPolicy;
  before(async () => {
    stage = await startRebindingStage((req, res) => {
      const to = new URL(req.url!, 'https://x').searchParams.get('to');
      if (to) return void res.writeHead(302, { Location: to }).end();
      res.writeHead(200, { 'Content-Type': 'image/jpeg' }).end('allowed');
    });
    policy = new OutboundPolicy(ALLOW_CIDRS, (hostname) => stage.dns.resolveHost(hostname));
  });
  after(() => stage.close());
  const request = (raw: string) => policy.request(new URL(raw), { method: 'POST', timeoutMs: 5_000, maxBodyBytes: 1024 });
  /** No TCP connection ever reached the refused server. */
  const refusedUntouched = () => assert.equal(stage.refused.connections, 0, `${REFUSED_ADDRESS} got a connection`);
  afterEach(refusedUntouched);

  it('allowed when checked, refused when connected to: refused in the socket\'s own lookup, nothing connects', async () => {
    const url = stage.url('check-then-swap', '/hook', [ALLOWED_ADDRESS], [REFUSED_ADDRESS]);
    const before = stage.allowed.connections;
    await policy.checkResolves(new URL(url)); // what registering a webhook does
    await assert.rejects(request(url), (err: Error) => err instanceof OutboundRefused && /private or local/.test(err.message));
    assert.equal(stage.dns.queries('check-then-swap.rebind.test'), 2, 'the connect asked DNS again and judged that answer');
    assert.equal(stage.allowed.connections, before);
  });

  it('refused when checked, allowed afterwards: refused at the check', async () => {
    const url = stage.url('swap-back', '/hook', [REFUSED_ADDRESS], [ALLOWED_ADDRESS]);
    await assert.rejects(policy.checkResolves(new URL(url)), /private or local/);
  });

  it('one connection, one answer: the address judged is the address connected to, and the next answer is judged anew', async () => {
    const url = stage.url('one-answer', '/image.jpg', [ALLOWED_ADDRESS], [REFUSED_ADDRESS]);
    const fetched = await policy.fetchBytes(url, { maxBytes: 1024, timeoutMs: 5_000 });
    assert.equal(fetched.bytes.toString(), 'allowed');
    assert.equal(stage.dns.queries('one-answer.rebind.test'), 1, 'resolved once for the check and the connect together');
    await assert.rejects(policy.fetchBytes(url, { maxBytes: 1024, timeoutMs: 5_000 }), (err: Error) => err instanceof OutboundRefused);
  });

  it('an answer with an allowed and a refused address is refused whole, whichever comes first', async () => {
    for (const [name, answer] of [['mixed-a', [ALLOWED_ADDRESS, REFUSED_ADDRESS]], ['mixed-b', [REFUSED_ADDRESS, ALLOWED_ADDRESS]]] as const) {
      const url = stage.url(name, '/hook', [...answer]);
      await assert.rejects(policy.checkResolves(new URL(url)), /private or local/, name);
      await assert.rejects(request(url), (err: Error) => err instanceof OutboundRefused, name);
    }
  });

  it('a redirect to a name that answers a refused address, or to a refused literal in any spelling: refused, nothing connects', async () => {
    const port = stage.allowed.port;
    const target = stage.url('redirect-target', '/image.jpg', [REFUSED_ADDRESS]);
    for (const to of [target, `https://${REFUSED_ADDRESS}:${port}/`, `https://2130706433:${port}/`, `https://0x7f.1:${port}/`,
      `https://0177.0.0.1:${port}/`, `https://[::ffff:127.0.0.1]:${port}/`, `https://[::ffff:7f00:1]:${port}/`]) {
      const url = stage.url('redirector', `/moved?to=${encodeURIComponent(to)}`, [ALLOWED_ADDRESS]);
      await assert.rejects(policy.fetchBytes(url, { maxBytes: 1024, timeoutMs: 5_000 }), (err: Error) => err instanceof OutboundRefused, to);
    }
  });

  it('a literal refused address given to request() directly (as a stored webhook URL is): refused before connecting', async () => {
    const port = stage.allowed.port;
    for (const raw of [`https://${REFUSED_ADDRESS}:${port}/hook`, `https://2130706433:${port}/hook`, `https://[::ffff:127.0.0.1]:${port}/hook`]) {
      await assert.rejects(request(raw), (err: Error) => err instanceof OutboundRefused, raw);
    }
  });
});
