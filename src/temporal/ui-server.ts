/**
 * The Temporal Web UI for a Temporal server that is not the dev server (whose UI is built in): the same ui-server
 * program the `temporalio/ui` image runs, built from the Go module proxy at the version the CLI embeds, configured
 * by the project's `deploy/temporal/ui/cluster.yaml` through the environment (loopback only by default).
 */
import { ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import { ensureGoTools, toolEnv } from '../tools/go-tools';
import { TEMPORAL_DEPLOY_DIR } from './server';

export const TEMPORAL_UI_VERSION = 'v2.42.1';
const UI_MODULE = 'github.com/temporalio/ui-server/v2';

export interface UiServer { url: string; child: ChildProcess; stop(): Promise<void> }

export async function startUiServer(options: { toolsDir: string; temporalAddress: string; port: number; namespace: string; logFile: string }): Promise<UiServer> {
  const { server } = await ensureGoTools(options.toolsDir, {
    packages: [`${UI_MODULE}/cmd/server@${TEMPORAL_UI_VERSION}`],
    binaries: { server: `temporal-ui-server-${TEMPORAL_UI_VERSION}` },
  });
  const url = `http://localhost:${options.port}`;
  mkdirSync(path.dirname(options.logFile), { recursive: true });
  const out = openSync(options.logFile, 'a');
  const child = spawn(server, ['--root', TEMPORAL_DEPLOY_DIR, '--config', 'ui', '--env', 'cluster', 'start'], {
    stdio: ['ignore', out, out],
    env: toolEnv({
      TEMPORAL_ADDRESS: options.temporalAddress,
      TEMPORAL_UI_PORT: String(options.port),
      TEMPORAL_DEFAULT_NAMESPACE: options.namespace,
    }),
  });
  let exited = false;
  const exitPromise = new Promise<void>((resolve) => child.once('exit', () => { exited = true; resolve(); }));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited) throw new Error(`the Temporal UI server exited at start; see ${options.logFile}`);
    const answered = await fetch(`${url}/api/v1/settings`).then((r) => r.ok, () => false);
    if (answered) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the Temporal UI server did not answer on ${url} within 30 s; see ${options.logFile}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    url,
    child,
    async stop() {
      if (exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exitPromise;
      clearTimeout(timer);
    },
  };
}
