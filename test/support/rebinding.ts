/**
 * The stage of a DNS rebinding test: the suite's DNS server, and two HTTPS servers on one port, one on an address
 * the policy under test allows (127.0.0.2, `ALLOW_CIDRS`) and one on an address it refuses (127.0.0.1, loopback).
 * A name under `rebind.test` (in the suite's certificate) is scripted to answer one, then the other; the refused
 * server counts every TCP connection, so a test can show that none was made.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startDnsServer, TestDnsServer } from './dns-server';
import { startHttpsServer, TestHttpsServer } from './https-server';

export const ALLOWED_ADDRESS = '127.0.0.2';
export const REFUSED_ADDRESS = '127.0.0.1';
/** The outbound allow-list of a rebinding test: the allowed server's address only. */
export const ALLOW_CIDRS = [`${ALLOWED_ADDRESS}/32`];

export interface RebindingStage {
  dns: TestDnsServer;
  allowed: TestHttpsServer;
  refused: TestHttpsServer;
  /** `https://<name>.rebind.test:<port><path>`, the name answering `answers` (one list per query, the last repeating). */
  url(name: string, path: string, ...answers: string[][]): string;
  close(): Promise<void>;
}

export async function startRebindingStage(
  handler: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void | Promise<void> = (req, res) => void res.writeHead(200).end('allowed'),
): Promise<RebindingStage> {
  const dns = await startDnsServer();
  const allowed = await startHttpsServer(handler, { host: ALLOWED_ADDRESS });
  const refused = await startHttpsServer((req, res) => void res.writeHead(200).end('refused'), { host: REFUSED_ADDRESS, port: allowed.port });
  return {
    dns, allowed, refused,
    url(name, path, ...answers) {
      dns.script(`${name}.rebind.test`, ...answers);
      return `https://${name}.rebind.test:${allowed.port}${path}`;
    },
    async close() {
      await Promise.all([allowed.close(), refused.close(), dns.close()]);
    },
  };
}
