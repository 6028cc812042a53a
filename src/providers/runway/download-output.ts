/**
 * A finished task's video, fetched at once (Runway's output URLs expire within a day or two) under the outbound
 * policy (HTTPS, public addresses only, one deadline, a size cap), and checked before it is stored: an MP4 by its
 * first bytes, then by ffmpeg (`usableVideo`: its header read, every frame decoded, within a deadline).
 */
import { usableVideo, VideoCheckFailed, VideoRefused } from '../../generation/video-limits';
import { OutboundPolicy } from '../../net/outbound';
import { ProviderError } from '../provider';
import { badOutput, downloadError } from './errors';

export interface DownloadLimits {
  timeoutMs: number;
  maxBytes: number;
  /** Deadline of the check of the downloaded video. */
  checkTimeoutMs: number;
}

/** An ISO base media file (MP4) starts with a box whose type, at bytes 4-8, is `ftyp`. */
const isMp4 = (bytes: Buffer): boolean => bytes.length > 12 && bytes.toString('latin1', 4, 8) === 'ftyp';

export async function downloadOutput(url: string, outbound: OutboundPolicy, limits: DownloadLimits, ffmpegPath?: string, signal?: AbortSignal): Promise<Buffer> {
  let bytes: Buffer;
  try {
    ({ bytes } = await outbound.fetchBytes(url, { maxBytes: limits.maxBytes, timeoutMs: limits.timeoutMs, accept: 'video/mp4' }));
  } catch (err) {
    throw downloadError(err);
  }
  if (!isMp4(bytes)) throw badOutput(`expected an MP4 video, got ${bytes.length} bytes starting ${JSON.stringify(bytes.toString('latin1', 0, 12))}`);
  try {
    await usableVideo(bytes, { ffmpegPath, timeoutMs: limits.checkTimeoutMs, signal });
  } catch (err) {
    if (err instanceof VideoRefused) throw badOutput(`the video ${err.message}`);
    // Nothing is known against the video: the next poll downloads and checks it again (the task is kept).
    if (err instanceof VideoCheckFailed) throw new ProviderError(`Runway's output could not be checked: ${err.message}`, 'output_check_failed', true);
    throw err;
  }
  return bytes;
}
