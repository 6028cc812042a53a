/**
 * Short product videos with ffmpeg: a slow camera push-in on the product (a push in and back out in loop mode,
 * so the last frame equals the first; a still camera in card mode), optionally dissolving into a final frame,
 * encoded as H.264 MP4 of exactly the requested duration.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { resolveFfmpeg } from '../../media/ffmpeg';
import { ProviderError, RenderedAsset, VideoJob } from '../provider';
import { dimensionsFor, fitted } from './compose';

const FPS = 24;
const LONG_SIDE = 960;

/** A frame of the video: the picture centred on a neutral backdrop at the video's size. */
async function frame(image: Buffer, width: number, height: number, cardMode: boolean): Promise<Buffer> {
  const product = await fitted(image, cardMode ? width : width * 0.8, cardMode ? height : height * 0.8);
  return sharp({ create: { width, height, channels: 3, background: '#efefec' } })
    .composite([{ input: product.data, gravity: 'centre' }]).png().toBuffer();
}

function run(ffmpeg: string, args: string[], signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(ffmpeg, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => { stderr = (stderr + chunk).slice(-2000); });
    const abort = () => child.kill('SIGKILL');
    signal?.addEventListener('abort', abort, { once: true });
    child.on('error', (err) => reject(new ProviderError(`ffmpeg could not start: ${err.message}`, 'renderer_unavailable', true)));
    child.on('exit', (code) => {
      signal?.removeEventListener('abort', abort);
      if (signal?.aborted) reject(signal.reason ?? new Error('aborted'));
      else if (code === 0) resolve();
      else reject(new ProviderError(`ffmpeg failed (${code}): ${stderr.trim().split('\n').pop()}`, 'render_failed', true));
    });
  });
}

export async function renderVideo(job: VideoJob, ffmpegPath: string | undefined, signal?: AbortSignal): Promise<RenderedAsset> {
  const { width, height } = dimensionsFor(job.aspectRatio, LONG_SIDE);
  const frames = job.durationSec * FPS;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'imagery-video-'));
  try {
    await writeFile(path.join(dir, 'start.png'), await frame(job.image, width, height, job.cardMode));
    const zoom = job.cardMode ? '1' : job.loopMode ? `1+0.12*sin(PI*on/${frames})` : `1+0.12*on/${frames}`;
    const camera = `zoompan=z='${zoom}':x='iw/2-(iw/zoom/2)':y='ih/2-(ih/zoom/2)':d=${frames}:s=${width}x${height}:fps=${FPS}`;
    const inputs = ['-i', path.join(dir, 'start.png')];
    let graph = `[0:v]${camera},setsar=1[v]`;
    if (job.finalFrame && !job.loopMode) {
      await writeFile(path.join(dir, 'final.png'), await frame(job.finalFrame, width, height, job.cardMode));
      inputs.push('-loop', '1', '-t', String(job.durationSec), '-i', path.join(dir, 'final.png'));
      const fadeStart = Math.max(0, job.durationSec - 1.5);
      graph = `[0:v]${camera},setsar=1[cam];[1:v]fps=${FPS},format=rgba,fade=in:st=${fadeStart}:d=1.5:alpha=1[end];[cam][end]overlay=shortest=1[v]`;
    }
    const out = path.join(dir, 'video.mp4');
    await run(resolveFfmpeg(ffmpegPath), [
      '-hide_banner', '-loglevel', 'error', '-y', ...inputs, '-filter_complex', graph, '-map', '[v]',
      '-frames:v', String(frames), '-r', String(FPS), '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p',
      '-movflags', '+faststart', out,
    ], signal);
    return { bytes: await readFile(out), extension: 'mp4' };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
