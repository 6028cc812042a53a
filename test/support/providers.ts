import { LocalRenderer } from '../../src/providers/local-renderer';
import {
  CardJob, EditJob, FunnelProductJob, IdeaJob, ImageProvider, PhotoJob, ProviderError, ScenarioJob, TextProvider, VideoJob, VideoProvider, WishesJob,
} from '../../src/providers/provider';

/**
 * The local renderer behind a scripted list of provider failures, to drive the retry and refusal paths the way a
 * real provider's outages would. Renders for real once the script is used up.
 */
export class ScriptedProvider implements ImageProvider, TextProvider, VideoProvider {
  readonly pollIntervalSeconds = 1;
  readonly name = 'scripted';
  calls = 0;
  private readonly inner = new LocalRenderer();

  constructor(private readonly failures: ProviderError[]) {}

  typicalSeconds(kind?: 'photo' | 'card' | 'edit') {
    return this.inner.typicalSeconds(kind);
  }

  analyze(images: Buffer[], locale: 'ru' | 'en' | 'es') {
    return this.inner.analyze(images, locale);
  }

  private next(): void {
    const failure = this.failures[this.calls++];
    if (failure) throw failure;
  }

  async renderPhoto(job: PhotoJob) {
    this.next();
    return this.inner.renderPhoto(job);
  }

  async renderCard(job: CardJob) {
    this.next();
    return this.inner.renderCard(job);
  }

  async startVideo(job: VideoJob) {
    this.next();
    return this.inner.startVideo(job);
  }

  checkVideo(taskId: string) {
    return this.inner.checkVideo(taskId);
  }

  cancelVideo() {
    return this.inner.cancelVideo();
  }

  suggestWishes(job: WishesJob) {
    return this.inner.suggestWishes(job);
  }

  suggestScenario(job: ScenarioJob) {
    return this.inner.suggestScenario(job);
  }

  surveyQuestions(job: FunnelProductJob) {
    return this.inner.surveyQuestions(job);
  }

  suggestIdea(job: IdeaJob) {
    return this.inner.suggestIdea(job);
  }

  async renderEdit(job: EditJob) {
    this.next();
    return this.inner.renderEdit(job);
  }
}
