/**
 * The Temporal Web UI for a Temporal server that is not the dev server (whose UI is built in): the same ui-server
 * program the `temporalio/ui` image runs, built from the Go module proxy at the version the CLI embeds, configured
 * by the project's `deploy/temporal/ui/cluster.yaml` through the environment (loopback only by default).
 */
import type { ChildProcess } from 'node:child_process';
import { ensureGoTools } from './tools/go-tools';
import { httpAnswers, startToolProcess } from './tools/tool-process';
import { TEMPORAL_DEPLOY_DIR } from './temporal-server';

export const TEMPORAL_UI_VERSION = 'v2.42.1';
const UI_MODULE = 'github.com/temporalio/ui-server/v2';

export interface UiServer { url: string; child: ChildProcess; stop(): Promise<void> }

export async function startUiServer(options: { toolsDir: string; temporalAddress: string; port: number; namespace: string; logFile: string }): Promise<UiServer> {
  const { server } = await ensureGoTools(options.toolsDir, {
    packages: [`${UI_MODULE}/cmd/server@${TEMPORAL_UI_VERSION}`],
    binaries: { server: `temporal-ui-server-${TEMPORAL_UI_VERSION}` },
  });
  const url = `http://localhost:${options.port}`;
  const { child, stop } = await startToolProcess({
    name: 'the Temporal UI server',
    binary: server,
    args: ['--root', TEMPORAL_DEPLOY_DIR, '--config', 'ui', '--env', 'cluster', 'start'],
    env: {
      TEMPORAL_ADDRESS: options.temporalAddress,
      TEMPORAL_UI_PORT: String(options.port),
      TEMPORAL_DEFAULT_NAMESPACE: options.namespace,
    },
    logFile: options.logFile,
    answers: () => httpAnswers(`${url}/api/v1/settings`),
    readyTimeoutMs: 30_000,
    pollMs: 250,
  });
  return { url, child, stop };
}
