/** Reading rendered media in tests: video duration and frames through the same ffmpeg the renderer uses. */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpeg } from '../../src/media/ffmpeg';

export async function probeVideo(bytes: Buffer): Promise<{ durationSec: number; width: number; height: number; firstFrame: Buffer; lastFrame: Buffer }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'probe-'));
  try {
    const file = path.join(dir, 'v.mp4');
    await writeFile(file, bytes);
    const ffmpeg = resolveFfmpeg(process.env.FFMPEG_PATH);
    const info = await promisify(execFile)(ffmpeg, ['-hide_banner', '-i', file]).catch((e: { stderr: string }) => e);
    const [, h, m, s] = /Duration: (\d+):(\d+):([\d.]+)/.exec(info.stderr)!;
    const [, width, height] = /Video: h264.*?, (\d+)x(\d+)/.exec(info.stderr)!;
    await promisify(execFile)(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-i', file, '-vf', 'select=eq(n\\,0)', '-vframes', '1', path.join(dir, 'first.png')]);
    await promisify(execFile)(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-sseof', '-0.1', '-i', file, '-update', '1', path.join(dir, 'last.png')]);
    return {
      durationSec: Number(h) * 3600 + Number(m) * 60 + Number(s), width: Number(width), height: Number(height),
      firstFrame: await readFile(path.join(dir, 'first.png')), lastFrame: await readFile(path.join(dir, 'last.png')),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
