/**
 * The benchmark's zero-cost render mode (`LOCAL_RENDERER_COST=zero`): every render returns the same small asset,
 * made once per process, so that a benchmark measures the orchestration without the provider's own time. Never a
 * production setting: the result does not show the product.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import type { RenderedAsset } from '../provider';
import { resolveFfmpeg } from '../../media/ffmpeg';

let image: Promise<Buffer> | undefined;
let video: Promise<Buffer> | undefined;

/** A 64×64 grey JPEG, rendered on first use and reused. */
export async function zeroCostImage(): Promise<RenderedAsset> {
  image ??= sharp({ create: { width: 64, height: 64, channels: 3, background: '#808080' } }).jpeg().toBuffer();
  return { bytes: await image, extension: 'jpg' };
}

/** A one-second 64×64 grey H.264 MP4, encoded on first use and reused. */
export async function zeroCostVideo(ffmpegPath?: string): Promise<RenderedAsset> {
  video ??= (async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'imagery-zero-video-'));
    try {
      const out = path.join(dir, 'video.mp4');
      await promisify(execFile)(resolveFfmpeg(ffmpegPath), [
        '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'color=c=gray:s=64x64:d=1:r=24',
        '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-movflags', '+faststart', out,
      ]);
      return await readFile(out);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  })();
  video.catch(() => { video = undefined; }); // a failed encode is tried again next time
  return { bytes: await video, extension: 'mp4' };
}
