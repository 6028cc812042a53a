/** The ffmpeg binary: the local renderer makes videos with it, and a provider's video is checked with it. */
import { accessSync, constants } from 'node:fs';
import path from 'node:path';

/** FFMPEG_PATH, else an `ffmpeg` on PATH, else the binary shipped by @ffmpeg-installer/ffmpeg. */
export function resolveFfmpeg(configured?: string): string {
  if (configured) return configured;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    try {
      accessSync(path.join(dir, 'ffmpeg'), constants.X_OK);
      return path.join(dir, 'ffmpeg');
    } catch {
      // not here
    }
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('@ffmpeg-installer/ffmpeg') as { path: string }).path;
}
