/**
 * The fast local webhook receiver: HTTPS on loopback (webhooks must be https) with a throwaway certificate
 * authority made with openssl, which the service processes trust through NODE_EXTRA_CA_CERTS. Answers 204 at once
 * and counts the POSTs per path.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { AddressInfo } from 'node:net';
import path from 'node:path';
import { track } from './processes';

export interface WebhookReceiver {
  url: string;
  /** The CA file for NODE_EXTRA_CA_CERTS. */
  caFile: string;
  count(path: string): number;
}

function makeCertificates(dir: string): void {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca-key.pem', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=imagery bench CA');
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'localhost-key.pem', '-out', 'localhost.csr', '-subj', '/CN=localhost');
  writeFileSync(path.join(dir, 'san.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n');
  openssl('x509', '-req', '-in', 'localhost.csr', '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-CAcreateserial', '-out', 'localhost-cert.pem', '-days', '2', '-extfile', 'san.ext');
}

export async function startWebhookReceiver(dir: string): Promise<WebhookReceiver> {
  makeCertificates(dir);
  const counts = new Map<string, number>();
  const server = https.createServer({ key: readFileSync(path.join(dir, 'localhost-key.pem')), cert: readFileSync(path.join(dir, 'localhost-cert.pem')) }, (req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'POST') counts.set(req.url!, (counts.get(req.url!) ?? 0) + 1);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  track('webhook receiver', () => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return { url: `https://localhost:${(server.address() as AddressInfo).port}`, caFile: path.join(dir, 'ca.pem'), count: (p) => counts.get(p) ?? 0 };
}
