/**
 * The process's `GET /metrics`: its own HTTP listener (METRICS_HOST:METRICS_PORT, loopback by default), apart from
 * the API's port, so an integrator never reaches it and it needs no key. In a worker process the Temporal SDK's own
 * exporter (a loopback port of its runtime) is read on each scrape and appended, so one scrape target per process.
 */
import http from 'node:http';
import { log } from '../log';
import { registry } from './registry';

export interface MetricsServer { url: string; close(): Promise<void> }

/** Reads the SDK exporter's text; an unanswered read leaves it out of this scrape (never fails the scrape). */
async function sdkMetrics(url: string | undefined): Promise<string> {
  if (!url) return '';
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return response.ok ? await response.text() : '';
  } catch {
    return '';
  }
}

export async function startMetricsServer(options: { host: string; port: number; sdkMetricsUrl?: string }): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not found: GET /metrics\n');
      return;
    }
    Promise.all([registry.metrics(), sdkMetrics(options.sdkMetricsUrl)]).then(([own, sdk]) => {
      res.writeHead(200, { 'Content-Type': registry.contentType }).end(sdk ? `${own}\n${sdk}` : own);
    }, (err) => {
      log.warn('a metrics scrape failed', { error: String(err) });
      res.writeHead(500, { 'Content-Type': 'text/plain' }).end('metrics failed\n');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as { address: string; port: number };
  const host = address.address.includes(':') ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}/metrics`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections(); // a scraper's kept-alive connection must not hold the shutdown
    }),
  };
}
