/**
 * `npm run setup`: provisions what the service needs outside node_modules: the pinned Temporal CLI (found, or
 * built with `go install` into the tools folder) and the database with its migrations. `npm start` and `npm test`
 * do the same on demand; CI runs this first so that the long build is a step of its own.
 */
import { loadConfig } from '../config';
import { openDatabase } from '../db/data-source';
import { ensureTemporalCli, TEMPORAL_CLI_VERSION } from '../temporal/dev-server';

async function main(): Promise<void> {
  const config = loadConfig();
  const cli = await ensureTemporalCli({ cliPath: config.temporalCliPath, toolsDir: config.toolsDir });
  process.stdout.write(`temporal CLI: ${cli} (pinned ${TEMPORAL_CLI_VERSION} when built here)\n`);
  const db = await openDatabase(config.databaseUrl, { migrate: true, poolSize: 2 });
  await db.destroy();
  process.stdout.write(`database ready: ${new URL(config.databaseUrl).pathname.slice(1)}\n`);
}

main().catch((err) => {
  process.stderr.write(`setup failed: ${(err as Error).message}\n`);
  process.exit(1);
});
