/**
 * A child process of the benchmark: one worker with default options on a bench task queue, running the floors'
 * workflow types. `node floor-worker.js <temporal address> <task queue>`; prints `ready` once polling.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { installRuntime } from '../app/worker';
import * as activities from './floor-activities';

async function main(address: string, taskQueue: string): Promise<void> {
  installRuntime();
  const connection = await NativeConnection.connect({ address });
  const worker = await Worker.create({ connection, taskQueue, workflowsPath: require.resolve('./floor-workflows'), activities });
  process.on('SIGTERM', () => worker.shutdown());
  const running = worker.run();
  process.stdout.write('ready\n');
  await running;
  await connection.close();
}

main(process.argv[2], process.argv[3]).catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
