/**
 * `npm run setup`: provisions what the service needs outside node_modules: the pinned Temporal CLI (found, or
 * built with `go install` into the tools folder) and the database with its migrations; with `--cluster`, also the
 * Temporal server, its SQL tool and the S3 gateway of the production topology; with `--node24`, also the pinned
 * Node 24 that CI runs the suite on a second time (`docs/runtime.md`), printed as `node <version>: <path of bin/node>`;
 * and always Debian's Chromium for the dashboard's browser tests when it is missing (ops/tools/chromium.ts).
 * `npm start`, `npm test` and `npm run cluster` do the same on demand (Node 24 aside); CI runs this first so that the
 * long builds are a step of their own. Flags combine: `npm run setup -- --cluster --node24`.
 */
import { loadConfig } from '../../src/config';
import { openDatabase } from '../../src/db/data-source';
import { ensureS3Gateway, VERSITYGW_VERSION } from '../../ops/s3-gateway';
import { ensureTemporalCli, TEMPORAL_CLI_VERSION } from '../../ops/dev-server';
import { ensureTemporalServer, TEMPORAL_SERVER_VERSION } from '../../ops/temporal-server';
import { ensureNode24, NODE24_VERSION } from '../../ops/tools/node';
import { ensureChromium } from '../../ops/tools/chromium';

async function main(): Promise<void> {
  const config = loadConfig();
  const cli = await ensureTemporalCli({ cliPath: config.temporalCliPath, toolsDir: config.toolsDir });
  process.stdout.write(`temporal CLI: ${cli} (pinned ${TEMPORAL_CLI_VERSION} when built here)\n`);
  if (process.argv.includes('--cluster')) {
    const { server, sqlTool } = await ensureTemporalServer(config.toolsDir);
    process.stdout.write(`temporal server ${TEMPORAL_SERVER_VERSION}: ${server}\ntemporal SQL tool: ${sqlTool}\n`);
    process.stdout.write(`S3 gateway ${VERSITYGW_VERSION}: ${await ensureS3Gateway(config.toolsDir)}\n`);
  }
  if (process.argv.includes('--node24')) {
    process.stdout.write(`node ${NODE24_VERSION}: ${await ensureNode24(config.toolsDir)}\n`);
  }
  // The browser tests' only: a machine that cannot install it (not root, not Debian) serves and builds without it.
  const browser = await ensureChromium().catch((err: Error) => `not installed (${err.message}); the browser tests need it`);
  process.stdout.write(`chromium (browser tests): ${browser}\n`);
  const db = await openDatabase(config.databaseUrl, { migrate: true, poolSize: 2 });
  await db.destroy();
  process.stdout.write(`database ready: ${new URL(config.databaseUrl).pathname.slice(1)}\n`);
}

main().catch((err) => {
  process.stderr.write(`setup failed: ${(err as Error).message}\n`);
  process.exit(1);
});
