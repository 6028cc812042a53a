/** The thread of src/generation/heic-converter.ts: HEIC bytes in, `{ jpeg }` or `{ error }` out, one message at a time. */
import { parentPort } from 'node:worker_threads';
import convertHeic from 'heic-convert';

parentPort!.on('message', async (heic: Uint8Array) => {
  try {
    const jpeg = await convertHeic({ buffer: heic, format: 'JPEG', quality: 0.92 });
    const bytes = new Uint8Array(jpeg);
    parentPort!.postMessage({ jpeg: bytes }, [bytes.buffer]); // moved, not copied
  } catch (err) {
    parentPort!.postMessage({ error: (err as Error).message });
  }
});
