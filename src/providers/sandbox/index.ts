/**
 * The sandbox provider: it serves every test key's (`ak_test_`) work, whatever providers are configured. It renders
 * with the local renderer and marks each image, and each video's pictures, with a visible "SANDBOX" band; its text
 * helpers are the local renderer's. Its failure drills (`X-Sandbox-Scenario`) act out a provider's failures on
 * request, through the same paths a real provider's failures take.
 */
import sharp from 'sharp';
import type { Locale } from '../../locale';
import { pause } from '../local-renderer/compose';
import { InProcessPlaces, type LocalRenderer } from '../local-renderer';
import {
  CardJob, EditJob, FunnelProductJob, IdeaJob, ImageKind, ImageProvider, PhotoJob, ProviderError, RenderedAsset, ScenarioJob, TextProvider,
  VideoJob, VideoProgress, VideoProvider, WishesJob,
} from '../provider';

export const SANDBOX_PROVIDER = 'sandbox';

/** The failure drills a test key's request may ask for with `X-Sandbox-Scenario`. */
export const SANDBOX_SCENARIOS = ['provider_error', 'provider_timeout', 'retry_then_succeed', 'slow', 'webhook_fail_then_succeed'] as const;
export type SandboxScenario = (typeof SANDBOX_SCENARIOS)[number];
export const isSandboxScenario = (value: string): value is SandboxScenario => (SANDBOX_SCENARIOS as readonly string[]).includes(value);

/** Attempts of each delivery that the `webhook_fail_then_succeed` drill answers with HTTP 500, unsent, before it sends. */
export const DRILL_FAILED_DELIVERY_ATTEMPTS = 2;

/** The band laid over a picture: "SANDBOX" in white on red, across the top, a tenth of the height. */
async function marked(picture: Buffer, format: 'jpg' | 'png'): Promise<Buffer> {
  const image = await sharp(picture).rotate().png().toBuffer(); // upright first: the band goes across the top as seen
  const { width = 512, height = 512 } = await sharp(image).metadata();
  const band = Math.max(24, Math.round(height / 10));
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${band}">
    <rect width="100%" height="100%" fill="#c62828" fill-opacity="0.85"/>
    <text x="50%" y="${Math.round(band * 0.72)}" text-anchor="middle" font-family="DejaVu Sans, sans-serif" font-weight="bold"
      font-size="${Math.round(band * 0.6)}" letter-spacing="${Math.round(band * 0.1)}" fill="#fff">SANDBOX</text>
  </svg>`;
  const pipeline = sharp(image).composite([{ input: Buffer.from(svg), top: 0, left: 0 }]);
  return (format === 'png' ? pipeline.png() : pipeline.jpeg({ quality: 88 })).toBuffer();
}

const markedAsset = async (asset: RenderedAsset): Promise<RenderedAsset> =>
  (asset.extension === 'mp4' ? asset : { ...asset, bytes: await marked(asset.bytes, asset.extension) });

export class SandboxRenderer implements ImageProvider, TextProvider, VideoProvider {
  readonly name = SANDBOX_PROVIDER;
  readonly inProcess = true;
  /** Videos render in-process, as the local renderer's: there is never a task to poll. */
  readonly pollIntervalSeconds = 1;

  private readonly inProcessPlaces: InProcessPlaces;

  /**
   * `local`: the renderer that does the work (the process's own: its renders share its bound); `slowMs`: the `slow`
   * drill's wait; `places`: sandbox renders at once within their workflows' tasks (`reserveInProcess`), counted apart
   * from the live renderer's, so that test keys (a `slow` drill waits in its place) never take live renders' places.
   */
  constructor(private readonly local: LocalRenderer, private readonly options: { slowMs: number; places?: number }) {
    this.inProcessPlaces = new InProcessPlaces(options.places);
  }

  reserveInProcess(): (() => void) | undefined {
    return this.inProcessPlaces.reserve();
  }

  typicalSeconds(kind?: ImageKind | 'video'): number {
    return this.local.typicalSeconds(kind);
  }

  /**
   * Acts out the drill of a render, just before its provider call (`attempt`: the render's attempt, 1 the first):
   * `provider_error` refuses for good (the action fails, its hold released); `provider_timeout` fails every attempt
   * as a timeout, which is retried until the attempts are spent; `retry_then_succeed` fails the first attempt as a
   * passing outage; `slow` waits `slowMs` first (the action stays `processing`). Others act elsewhere or not at all.
   */
  async drill(scenario: SandboxScenario | undefined, attempt: number, signal?: AbortSignal): Promise<void> {
    switch (scenario) {
      case 'provider_error':
        throw new ProviderError('The provider refused the request (sandbox drill provider_error)', 'provider_error', false);
      case 'provider_timeout':
        throw new ProviderError('The provider did not answer in time (sandbox drill provider_timeout)', 'provider_timeout', true);
      case 'retry_then_succeed':
        if (attempt <= 1) throw new ProviderError('The provider is overloaded, try again (sandbox drill retry_then_succeed)', 'provider_unavailable', true);
        return;
      case 'slow':
        return pause(this.options.slowMs, signal);
      default:
    }
  }

  async renderPhoto(job: PhotoJob, signal?: AbortSignal): Promise<RenderedAsset> {
    return markedAsset(await this.local.renderPhoto(job, signal));
  }

  async renderCard(job: CardJob, signal?: AbortSignal): Promise<RenderedAsset> {
    return markedAsset(await this.local.renderCard(job, signal));
  }

  async renderEdit(job: EditJob, signal?: AbortSignal): Promise<RenderedAsset> {
    return markedAsset(await this.local.renderEdit(job, signal));
  }

  /** The video's pictures are marked before it is rendered, so the band is in every frame of the product. */
  async startVideo(job: VideoJob, signal?: AbortSignal): Promise<VideoProgress> {
    const [image, finalFrame] = await Promise.all([marked(job.image, 'png'), job.finalFrame && marked(job.finalFrame, 'png')]);
    return this.local.startVideo({ ...job, image, finalFrame: finalFrame || undefined }, signal);
  }

  checkVideo(taskId: string): Promise<VideoProgress> {
    return this.local.checkVideo(taskId);
  }

  cancelVideo(): Promise<void> {
    return this.local.cancelVideo();
  }

  analyze(images: Buffer[], locale: Locale): Promise<import('../provider').ProductAnalysis> {
    return this.local.analyze(images, locale);
  }

  suggestWishes(job: WishesJob): Promise<string> {
    return this.local.suggestWishes(job);
  }

  suggestScenario(job: ScenarioJob): Promise<string> {
    return this.local.suggestScenario(job);
  }

  surveyQuestions(job: FunnelProductJob): Promise<import('../provider').SurveyQuestion[]> {
    return this.local.surveyQuestions(job);
  }

  suggestIdea(job: IdeaJob): Promise<import('../provider').CardIdea> {
    return this.local.suggestIdea(job);
  }
}
