/**
 * The Runway adapter (videos), on the official SDK used as shipped with its own retries off, so that a submit is
 * sent exactly once: Temporal owns retries. A video is a Runway task: `startVideo` submits it and answers its id,
 * the workflow calls `checkVideo` on a timer until the task ends (the output is downloaded at that moment), and
 * `cancelVideo` deletes it. The SDK's own polling (`waitForTaskOutput`) is not used: it would hold a worker slot.
 */
import { RunwayML } from '@runwayml/sdk';
import { VIDEO_CHECK_TIMEOUT_MS } from '../../generation/video-limits';
import { OutboundPolicy } from '../../net/outbound';
import { inSpan, SpanKind } from '../../telemetry/spans';
import { ProviderError, VideoJob, VideoProgress, VideoProvider } from '../provider';
import { DownloadLimits, downloadOutput } from './download-output';
import { requestError, taskCancelled, taskFailure } from './errors';
import { RunwayVideoModel } from './models';
import { submitBody } from './submit-body';

export interface RunwayOptions {
  apiKey: string;
  baseUrl: string;
  model: RunwayVideoModel;
  pollIntervalSeconds: number;
  /** Deadline of one API request. */
  timeoutMs: number;
  /** Where the output may be downloaded from (the service's `OUTBOUND_ALLOW_CIDRS`). */
  outbound: OutboundPolicy;
  /** The output download: one deadline for all of it, a size cap, and the deadline of its check. */
  download?: Partial<DownloadLimits>;
  /** The ffmpeg that checks the output (FFMPEG_PATH; else found as the local renderer finds it). */
  ffmpegPath?: string;
}

const DEFAULT_DOWNLOAD: DownloadLimits = { timeoutMs: 120_000, maxBytes: 200 * 1024 * 1024, checkTimeoutMs: VIDEO_CHECK_TIMEOUT_MS };

export class RunwayProvider implements VideoProvider {
  readonly name = 'runway';
  readonly pollIntervalSeconds: number;
  private readonly client: RunwayML;
  private readonly download: DownloadLimits;

  constructor(private readonly options: RunwayOptions) {
    this.pollIntervalSeconds = options.pollIntervalSeconds;
    this.client = new RunwayML({ apiKey: options.apiKey, baseURL: options.baseUrl, maxRetries: 0, timeout: options.timeoutMs });
    this.download = { ...DEFAULT_DOWNLOAD, ...options.download };
  }

  /** About a minute for a 5-10 s clip on gen4_turbo, queueing aside. */
  typicalSeconds(): number {
    return 60;
  }

  async startVideo(job: VideoJob, signal?: AbortSignal): Promise<VideoProgress> {
    const body = await submitBody(job, this.options.model);
    const task = await this.call('submit', signal, () => this.client.imageToVideo.create(body, { signal }));
    return { state: 'running', taskId: task.id };
  }

  async checkVideo(taskId: string, signal?: AbortSignal): Promise<VideoProgress> {
    const task = await this.call('poll', signal, () => this.client.tasks.retrieve(taskId, { signal }));
    switch (task.status) {
      case 'PENDING':
      case 'THROTTLED': // queued behind the account's concurrency limit: still waiting, not a failure
        return { state: 'running', taskId };
      case 'RUNNING':
        return { state: 'running', taskId, progress: task.progress };
      case 'SUCCEEDED': {
        const url = task.output[0];
        if (!url) throw new ProviderError(`The Runway task ${taskId} succeeded without an output`, 'bad_output', true);
        const bytes = await downloadOutput(url, this.options.outbound, this.download, this.options.ffmpegPath, signal);
        return { state: 'done', asset: { bytes, extension: 'mp4' } };
      }
      case 'FAILED':
        throw taskFailure(task.failureCode, task.failure);
      case 'CANCELLED':
        throw taskCancelled(taskId);
      default:
        throw new ProviderError(`The Runway task ${taskId} is in an unknown state ${(task as { status: string }).status}`, 'unknown_state', true);
    }
  }

  /** Cancels a running task (deletes a finished one); a task Runway no longer knows is already gone. */
  async cancelVideo(taskId: string): Promise<void> {
    try {
      await this.call('cancel', undefined, () => this.client.tasks.delete(taskId));
    } catch (err) {
      if (err instanceof ProviderError && err.code === 'not_found') return;
      throw err;
    }
  }

  /**
   * One SDK request with its failure mapped; an abort by the caller (a cancelled activity) stays an abort. A client
   * span `runway <what>` when tracing is on.
   */
  private call<T>(what: string, signal: AbortSignal | undefined, request: () => PromiseLike<T>): Promise<T> {
    return inSpan(`runway ${what}`, { kind: SpanKind.CLIENT, attributes: { 'gen_ai.system': 'runway', 'gen_ai.request.model': this.options.model } }, async () => {
      try {
        return await request();
      } catch (err) {
        if (signal?.aborted) throw signal.reason ?? err;
        throw requestError(err, what);
      }
    });
  }
}
