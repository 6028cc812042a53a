/** A real HTTPS server on loopback with the suite's test certificate (see run-tests.ts). */
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import path from 'node:path';

export interface TestHttpsServer {
  url: string;
  port: number;
  /** TCP connections accepted, whether or not a request followed. */
  connections: number;
  requests: { method: string; path: string; headers: IncomingMessage['headers']; body: Buffer; at: number }[];
  close(): Promise<void>;
}

export async function startHttpsServer(
  handler: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void | Promise<void>,
  listen: { host?: string; port?: number } = {},
): Promise<TestHttpsServer> {
  const dir = process.env.TEST_TLS_DIR;
  if (!dir) throw new Error('TEST_TLS_DIR is not set: run the suite with `npm test`');
  const requests: TestHttpsServer['requests'] = [];
  const server = https.createServer({
    key: readFileSync(path.join(dir, 'localhost-key.pem')),
    cert: readFileSync(path.join(dir, 'localhost-cert.pem')),
  }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      requests.push({ method: req.method!, path: req.url!, headers: req.headers, body, at: Date.now() });
      void Promise.resolve(handler(req, res, body)).catch(() => res.destroy());
    });
  });
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(listen.port ?? 0, listen.host ?? '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://localhost:${port}`,
    port,
    get connections() {
      return connections;
    },
    requests,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
