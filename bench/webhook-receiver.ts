/**
 * The fast local webhook receiver: the test suite's HTTPS server on loopback (webhooks must be https), answering 204
 * at once. The bench runs under the suite's launcher (`run-tests.js --exec`), which makes its throwaway certificate
 * authority and trusts it through NODE_EXTRA_CA_CERTS, and the service processes inherit that.
 */
import { startHttpsServer } from '../test/support/https-server';
import { track } from './processes';

export interface WebhookReceiver {
  url: string;
  /** POSTs received on `path`. */
  count(path: string): number;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const server = await startHttpsServer((_req, res) => {
    res.writeHead(204).end();
  });
  track('webhook receiver', () => server.close());
  return { url: server.url, count: (p) => server.requests.filter((r) => r.method === 'POST' && r.path === p).length };
}
