/**
 * How provider calls fail, seen through the API: a slow video check stays alive on heartbeats (it is not timed out
 * and checked again), and an internal failure (a storage path, a driver error) never reaches the integrator's
 * `error_message`.
 */
import assert from 'node:assert/strict';
import { allFrom, Providers } from '../../src/providers';
import { LocalRenderer } from '../../src/providers/local-renderer';
import type { PhotoJob, RenderedAsset, VideoJob, VideoProgress, VideoProvider } from '../../src/providers/provider';
import { actionWorkflowId, jobWorkflowId, PROVIDER_HEARTBEAT_TIMEOUT_SECONDS } from '../../src/temporal/contract';
import { apiClient, assertMoneyConsistent, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { sampleMp4 } from '../support/runway-server';
import { Stack, startStack } from '../support/stack';

/** A remote-style video provider whose one check takes longer than the heartbeat timeout. */
class SlowCheckVideo implements VideoProvider {
  readonly name = 'slowcheck';
  readonly pollIntervalSeconds = 0.1;
  checks = 0;
  typicalSeconds() {
    return 5;
  }
  async startVideo(_job: VideoJob): Promise<VideoProgress> {
    return { state: 'running', taskId: 'task-1' };
  }
  async checkVideo(taskId: string): Promise<VideoProgress> {
    this.checks++;
    await new Promise((resolve) => setTimeout(resolve, (PROVIDER_HEARTBEAT_TIMEOUT_SECONDS + 2) * 1000)); // a slow download
    return { state: 'done', asset: { bytes: await sampleMp4(), extension: 'mp4' } };
  }
  async cancelVideo() {}
}

/** The local renderer, except that photos fail the way a broken disk would. */
class BrokenStorageRenderer extends LocalRenderer {
  readonly name = 'brokenstorage' as 'local';
  async renderPhoto(_job: PhotoJob): Promise<RenderedAsset> {
    throw new Error("ENOENT: no such file or directory, open '/data/assets/inputs/0123abcd.jpg'");
  }
}

describe('provider failures through the API', function () {
  this.timeout(90_000);
  const video = new SlowCheckVideo();
  let stack: Stack;
  let image: string;
  before(async () => {
    const broken = new BrokenStorageRenderer();
    const providers: Providers = { ...allFrom(broken), video };
    stack = await startStack({ providers, jobMaxAttempts: 2, jobRetryBackoffMs: 100 });
    image = await jpegBase64(640, 480);
  });
  after(() => stack.stop());

  it('a video check that takes longer than the heartbeat timeout completes on its first try', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 50);
    const call = apiClient(stack.baseUrl, apiKey);
    const res = await call('POST', `${V1}/generate/video`, { image: { data: image } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal((await stack.temporal.workflow.getHandle(actionWorkflowId(res.body.action_id)).result()).status, 'completed');
    assert.equal(video.checks, 1, 'checked once: the slow check was not timed out and repeated');
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('an internal failure is logged, and the integrator reads a plain message without paths', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 50);
    const call = apiClient(stack.baseUrl, apiKey);
    const created = await call('POST', '/api/v2/jobs/generate', { images: [{ data: image }], product_name: 'Jar', category_id: 'home' });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    await stack.temporal.workflow.getHandle(jobWorkflowId(created.body.job_id)).result();
    const job = (await call('GET', `/api/v2/jobs/${created.body.job_id}`)).body;
    assert.deepEqual([job.status, job.error_code, job.error_message], ['dead_letter', 'internal_error', 'Generation failed']);
    const status = (await call('GET', `${V1}/status/${created.body.resource_id}`)).body;
    assert.equal(status.error_message, 'Generation failed');
    assert.doesNotMatch(JSON.stringify([job, status]), /ENOENT|\/data\//);
    assert.equal((await call('GET', `${V1}/balance`)).body.available, 50);
    await assertMoneyConsistent(stack.db, accountId);
  });
});
