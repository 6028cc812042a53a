/**
 * A finished task's video, fetched at once (Runway's output URLs expire within a day or two) under the outbound
 * policy (HTTPS, public addresses only, one deadline, a size cap), and checked to be an MP4 before it is stored.
 */
import { OutboundPolicy } from '../../net/outbound';
import { badOutput, downloadError } from './errors';

export interface DownloadLimits {
  timeoutMs: number;
  maxBytes: number;
}

/** An ISO base media file (MP4) starts with a box whose type, at bytes 4-8, is `ftyp`. */
const isMp4 = (bytes: Buffer): boolean => bytes.length > 12 && bytes.toString('latin1', 4, 8) === 'ftyp';

export async function downloadOutput(url: string, outbound: OutboundPolicy, limits: DownloadLimits): Promise<Buffer> {
  let bytes: Buffer;
  try {
    ({ bytes } = await outbound.fetchBytes(url, { maxBytes: limits.maxBytes, timeoutMs: limits.timeoutMs, accept: 'video/mp4' }));
  } catch (err) {
    throw downloadError(err);
  }
  if (!isMp4(bytes)) throw badOutput(`expected an MP4 video, got ${bytes.length} bytes starting ${JSON.stringify(bytes.toString('latin1', 0, 12))}`);
  return bytes;
}
