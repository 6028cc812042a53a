/**
 * Outbound HTTP that cannot be pointed at us: HTTPS only; every address a host resolves to is checked against
 * the private, loopback, link-local and other internal ranges inside the socket's own DNS lookup, so the address
 * checked is the address connected to (a DNS answer cannot swap it afterwards); redirects are followed by hand and
 * checked again; every exchange has one deadline from connect to the last body byte, and bodies are read to a cap,
 * then the connection is dropped.
 * `OUTBOUND_ALLOW_CIDRS` lets an operator allow chosen ranges (tests use it for loopback).
 * A literal address skips the socket's lookup: `request` refuses an internal one itself, before connecting (a stored
 * webhook URL under a stricter policy), and checks the address connected to once more before the request is sent.
 */
import dns from 'node:dns';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { inSpan, SpanKind, tracingOn } from '../telemetry/spans';

const BLOCKED_V4 = [
  '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.0.0.0/24',
  '192.0.2.0/24', '192.88.99.0/24', '192.168.0.0/16', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24',
  '224.0.0.0/4', '240.0.0.0/4',
];
/** IPv6 ranges of the IANA special-purpose registry that are not global, forms that embed an IPv4 address, and site-local. */
const BLOCKED_V6 = [
  '::/96', // unspecified, loopback and the deprecated IPv4-compatible form (::127.0.0.1)
  '::ffff:0:0:0/96', // IPv4-translated (SIIT); IPv4-mapped ::ffff:0:0/96 is judged by its IPv4 address
  '64:ff9b::/96', '64:ff9b:1::/48', // NAT64: well-known and local-use prefixes
  '100::/64', '100:0:0:1::/64', // discard-only, dummy prefix
  '2001::/23', // IETF protocol assignments, Teredo (2001::/32) included
  '2001:db8::/32', '3fff::/20', // documentation
  '2002::/16', // 6to4
  '5f00::/16', // segment routing SIDs
  'fc00::/7', 'fe80::/10', 'fec0::/10', 'ff00::/8', // unique-local, link-local, site-local (deprecated), multicast
];

function blockList(cidrs: string[]): net.BlockList {
  const list = new net.BlockList();
  for (const cidr of cidrs) {
    const [address, bits] = cidr.trim().split('/');
    const family = net.isIPv6(address) ? 'ipv6' : 'ipv4';
    if (!net.isIP(address)) throw new Error(`not a CIDR: ${cidr}`);
    list.addSubnet(address, Number(bits ?? (family === 'ipv6' ? 128 : 32)), family);
  }
  return list;
}

export class OutboundRefused extends Error {
  readonly name = 'OutboundRefused';
}
export class OutboundFailed extends Error {
  readonly name = 'OutboundFailed';
  constructor(message: string, readonly status?: number) {
    super(message);
  }
}
export class OutboundTooLarge extends Error {
  readonly name = 'OutboundTooLarge';
}

/** An answer read under the policy; the connection is already closed. */
export interface OutboundInit { method: string; headers?: Record<string, string>; body?: Buffer; timeoutMs: number; maxBodyBytes: number }

export interface OutboundResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body of a 2xx answer, up to the cap (other answers' bodies are not read). */
  body: Buffer;
  /** The 2xx body was longer than the cap: `body` holds its start, the rest was never read. */
  truncated: boolean;
  remoteAddress: string;
}

/** Every address of a host name. */
export type ResolveHost = (hostname: string) => Promise<dns.LookupAddress[]>;

/** The system's resolver (`/etc/hosts`, then DNS), as Node's sockets use it by default. */
const systemResolve: ResolveHost = (hostname) => dns.promises.lookup(hostname, { all: true });

export class OutboundPolicy {
  private readonly blocked = blockList([...BLOCKED_V4, ...BLOCKED_V6]);
  private readonly allowed: net.BlockList;
  /**
   * One TLS context for every exchange (the system's trust store, as each connection would build it anew), and an
   * agent that keeps TLS sessions, never sockets: each exchange is a new TCP connection, looked up and checked as
   * above, whose handshake resumes the host's last session when the server allows it (no certificate or key
   * exchange of the full handshake again; the certificate was verified when the session was made, for the same
   * host name). Without keep-alive and with no cap on sockets, the agent queues no request, so no socket serves two.
   */
  private readonly secureContext = tls.createSecureContext();
  private readonly agent = new https.Agent({ keepAlive: false, maxCachedSessions: 1000 });

  /** `resolveHost` is the system's resolver; tests point it at a DNS server of their own. */
  constructor(allowCidrs: string[] = [], private readonly resolveHost: ResolveHost = systemResolve) {
    this.allowed = blockList(allowCidrs);
  }

  /** Whether we may connect to this IP address. IPv4-mapped IPv6 addresses are judged as IPv4. */
  permits(address: string): boolean {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
    const ip = mapped ?? address;
    const family = net.isIPv6(ip) ? 'ipv6' : 'ipv4';
    return this.allowed.check(ip, family) || !this.blocked.check(ip, family);
  }

  /** Checks a URL's form: HTTPS, a host, no credentials. Throws OutboundRefused with the rule that failed. */
  checkUrl(raw: string): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new OutboundRefused('is not a valid URL');
    }
    if (url.protocol !== 'https:') throw new OutboundRefused('must use HTTPS');
    if (url.username || url.password) throw new OutboundRefused('must not carry credentials');
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (net.isIP(host) && !this.permits(host)) throw new OutboundRefused('points to a private or local address');
    return url;
  }

  /** Resolves the host and checks every address (registration-time check; sending re-checks on connect). */
  async checkResolves(url: URL): Promise<void> {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (net.isIP(host)) return;
    let addresses: dns.LookupAddress[];
    try {
      addresses = await this.resolveHost(host);
    } catch {
      throw new OutboundRefused('has a host that does not resolve');
    }
    if (addresses.length === 0) throw new OutboundRefused('has a host that does not resolve');
    if (addresses.some((a) => !this.permits(a.address))) throw new OutboundRefused('points to a private or local address');
  }

  /** The socket lookup: resolve, refuse if any answer is internal, connect to what was checked. */
  private readonly lookup: net.LookupFunction = (hostname, options, callback) => {
    const { family, all } = options as { family?: number; all?: boolean };
    this.resolveHost(hostname).then((addresses) => {
      const list = family === 4 || family === 6 ? addresses.filter((a) => a.family === family) : addresses;
      if (list.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 4);
      if (list.some((a) => !this.permits(a.address))) {
        return callback(Object.assign(new OutboundRefused('points to a private or local address'), { code: 'EOUTBOUNDREFUSED' }), '', 4);
      }
      if (all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
      return callback(null, list[0].address, list[0].family);
    }, (err: NodeJS.ErrnoException) => callback(err, '', 4));
  };

  /**
   * One HTTPS exchange under the policy, within one deadline for all of it (connect, headers, body), so a server
   * that trickles bytes cannot hold it open. The body of a 2xx answer is read up to `maxBodyBytes`; past that, and
   * for any other status, the connection is dropped rather than drained. `body` is sent as is.
   */
  request(url: URL, init: OutboundInit): Promise<OutboundResponse> {
    if (!tracingOn()) return this.exchange(url, init);
    // A client span per exchange: the host, never the URL (a webhook's URL may hold a token). No trace context is
    // sent to the receiver: our trace ids stay ours.
    return inSpan(init.method, {
      kind: SpanKind.CLIENT,
      attributes: { 'http.request.method': init.method, 'server.address': url.hostname, 'url.scheme': url.protocol.replace(':', '') },
    }, async (span) => {
      const response = await this.exchange(url, init);
      span?.setAttribute('http.response.status_code', response.status);
      return response;
    });
  }

  private exchange(url: URL, init: OutboundInit): Promise<OutboundResponse> {
    return new Promise((resolve, reject) => {
      this.checkUrl(url.href); // a literal address skips the socket's lookup: refused here, before any connection
      let received: IncomingMessage | undefined;
      // The agent hands the request's options on to tls.connect, which takes the context (its types omit it).
      const options: https.RequestOptions & Pick<tls.ConnectionOptions, 'secureContext'> = {
        method: init.method, headers: init.headers, lookup: this.lookup, agent: this.agent, secureContext: this.secureContext,
      };
      const req = https.request(url, options, (response) => {
        received = response;
        const remoteAddress = response.socket.remoteAddress ?? '';
        const status = response.statusCode ?? 0;
        const answer = (body: Buffer, truncated: boolean) => {
          finish();
          resolve({ status, headers: response.headers, body, truncated, remoteAddress });
        };
        const ok = status >= 200 && status < 300;
        if (!ok || Number(response.headers['content-length'] ?? 0) > init.maxBodyBytes) return answer(Buffer.alloc(0), ok);
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          if (size + chunk.length > init.maxBodyBytes) return answer(Buffer.concat([...chunks, chunk.subarray(0, init.maxBodyBytes - size)]), true);
          chunks.push(chunk);
          size += chunk.length;
        });
        response.on('end', () => answer(Buffer.concat(chunks), false));
        response.on('error', fail);
      });
      const deadline = setTimeout(() => fail(new OutboundFailed(`timed out after ${init.timeoutMs} ms`)), init.timeoutMs);
      /** Stops the clock and drops the connection (nothing more is read; a no-op once the exchange is over). */
      const finish = () => {
        clearTimeout(deadline);
        req.destroy();
      };
      const fail = (err: Error) => {
        finish();
        reject(err instanceof OutboundRefused || err instanceof OutboundFailed ? err
          : (err as { code?: string }).code === 'EOUTBOUNDREFUSED' ? new OutboundRefused('points to a private or local address')
            : new OutboundFailed(err.message));
      };
      req.on('error', (err) => {
        // An answer complete by its Content-Length and followed by more bytes: the parser takes the excess for a
        // next answer and fails on it. The body is whole as declared; it ends as usual, the excess is never read.
        if (!received?.complete) fail(err);
      });
      // The address connected to, checked again once the TCP connection is up, before the request is sent.
      req.on('socket', (socket) => socket.once('connect', () => {
        const address = socket.remoteAddress;
        if (!address || !this.permits(address)) fail(new OutboundRefused('points to a private or local address'));
      }));
      req.end(init.body);
    });
  }

  /** GET with redirects (each re-checked), a size cap and one deadline for all hops; answers the body and its content type. */
  async fetchBytes(raw: string, options: { maxBytes: number; timeoutMs: number; maxRedirects?: number; accept?: string }): Promise<{ bytes: Buffer; contentType: string | undefined }> {
    let url = this.checkUrl(raw);
    const deadline = Date.now() + options.timeoutMs;
    for (let hop = 0; hop <= (options.maxRedirects ?? 3); hop++) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new OutboundFailed(`timed out after ${options.timeoutMs} ms`);
      const response = await this.request(url, { method: 'GET', headers: { Accept: options.accept ?? 'image/*' }, timeoutMs: remaining, maxBodyBytes: options.maxBytes });
      const { status, headers } = response;
      if (status >= 300 && status < 400 && headers.location) {
        url = this.checkUrl(new URL(headers.location, url).toString());
        continue;
      }
      if (status !== 200) throw new OutboundFailed(`answered HTTP ${status}`, status);
      if (response.truncated) {
        const declared = Number(headers['content-length'] ?? 0);
        throw new OutboundTooLarge(declared > options.maxBytes ? `is ${declared} bytes; the limit is ${options.maxBytes}` : `is over ${options.maxBytes} bytes`);
      }
      return { bytes: response.body, contentType: headers['content-type'] };
    }
    throw new OutboundFailed('redirected too many times');
  }
}
