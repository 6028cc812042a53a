import { LocalRenderer } from '../../src/providers/local-renderer';
import { ImageProvider, PhotoJob, ProviderError } from '../../src/providers/provider';

/**
 * The local renderer behind a scripted list of provider failures, to drive the retry and refusal paths the way a
 * real provider's outages would. Renders for real once the script is used up.
 */
export class ScriptedProvider implements ImageProvider {
  readonly name = 'scripted';
  calls = 0;
  private readonly inner = new LocalRenderer();

  constructor(private readonly failures: ProviderError[]) {}

  analyze(images: Buffer[], locale: 'ru' | 'en' | 'es') {
    return this.inner.analyze(images, locale);
  }

  async renderPhoto(job: PhotoJob) {
    const failure = this.failures[this.calls++];
    if (failure) throw failure;
    return this.inner.renderPhoto(job);
  }
}
