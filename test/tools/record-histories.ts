/**
 * Records workflow histories for the replay suite: `npm run record:histories`. Each scenario runs for real on a
 * fresh dev server and Postgres (the test environment) and writes `test/histories/<workflow>.<scenario>.v<N>.json`.
 * Bump the version in the file name when recording after a workflow change; keep the old files: they prove that
 * histories of workflows started before the change still replay.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { setLogLevel } from '../../src/log';
import { actionWorkflowId } from '../../src/temporal/contract';
import { startActionWorkflow } from '../../src/temporal/start-action';
import { setUpEnvironment, tearDownEnvironment } from '../support/environment';
import { jpegBase64, newAccount, placeAction } from '../support/fixtures';
import { ScriptedProvider } from '../support/providers';
import { ProviderError } from '../../src/providers/provider';
import { Stack, startStack } from '../support/stack';

const OUT = path.resolve(__dirname, '../../../test/histories');
const VERSION = process.env.HISTORY_VERSION ?? 'v1';

async function recordAction(stack: Stack, name: string, input: Buffer): Promise<void> {
  const { accountId } = await newAccount(stack.db, 20);
  const key = `inputs/record-${Date.now()}-${name}.jpg`;
  await stack.store.put(key, input);
  const actionId = await placeAction(stack.db, accountId, { inputs: [key], hold: 5 });
  await startActionWorkflow(stack.temporal, stack.taskQueue, { id: actionId, accountId, type: 'generate', product: 'photo' });
  const handle = stack.temporal.workflow.getHandle(actionWorkflowId(actionId));
  await handle.result();
  const file = path.join(OUT, `action-workflow.${name}.${VERSION}.json`);
  await writeFile(file, historyToJSON(await handle.fetchHistory()));
  process.stdout.write(`recorded ${path.relative(process.cwd(), file)}\n`);
}

async function main(): Promise<void> {
  setLogLevel('error');
  await setUpEnvironment();
  try {
    const image = Buffer.from(await jpegBase64(), 'base64');
    const stack = await startStack();
    await recordAction(stack, 'photo-completed', image);
    await recordAction(stack, 'photo-refused', Buffer.from('not an image'));
    await stack.stop();

    const flaky = await startStack({ provider: new ScriptedProvider([new ProviderError('upstream timeout', 'timeout', true)]) });
    await recordAction(flaky, 'photo-retried', image);
    await flaky.stop();
  } finally {
    await tearDownEnvironment();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
