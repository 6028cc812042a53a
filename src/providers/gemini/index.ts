/**
 * The Gemini adapter: photos, cards and edits from the image model, analysis and the writing helpers from the
 * text model, all through `generateContent` of the official SDK. The SDK's own retries stay off (no
 * `retryOptions`): Temporal owns retries. The adapter asks once more itself only when an answer came back unusable
 * (no image, malformed JSON), which no outage explains.
 */
import { GoogleGenAI, type GenerateContentConfig, type GenerateContentResponse, type Part } from '@google/genai';
import type {
  CardIdea, CardJob, EditJob, FunnelProductJob, IdeaJob, ImageKind, ImageProvider, PhotoJob, ProductAnalysis, RenderedAsset,
  ScenarioJob, SurveyQuestion, TextProvider, WishesJob,
} from '../provider';
import type { Locale } from '../../locale';
import { ProviderError } from '../provider';
import { requireDecodable } from '../inputs';
import { inSpan, SpanKind } from '../../telemetry/spans';
import { ASKED_TWICE, badAnswer, contentRefusal, wireFailure } from './failures';
import { editFrame, inlineImage, pictureOf } from './images';
import { analysisPrompt, cardPrompt, editPrompt, ideaConcepts, ideaPrompt, photoPrompt, scenarioPrompt, surveyPrompt, wishesPrompt } from './prompts';
import { ANALYSIS, ideaAnswer, QUESTIONS, SCENARIO, TextAnswer, WISHES } from './text-answers';

export interface GeminiOptions {
  apiKey: string;
  /** Without the API version (`https://generativelanguage.googleapis.com`). */
  baseUrl: string;
  imageModel: string;
  textModel: string;
  /** Deadline of one request, connect to the last byte of the answer. */
  timeoutMs: number;
}

/** Runs `ask`, and once more if its answer was unusable; a second unusable answer is final. */
async function askingTwiceIfUnusable<T>(ask: () => Promise<T>): Promise<T> {
  try {
    return await ask();
  } catch (err) {
    if (err instanceof ProviderError && ASKED_TWICE.has(err.code)) return ask();
    throw err;
  }
}

export class GeminiProvider implements ImageProvider, TextProvider {
  readonly name = 'gemini';
  private readonly client: GoogleGenAI;

  constructor(private readonly options: GeminiOptions) {
    // Backend and API version explicit, so GOOGLE_GENAI_* variables of the environment cannot move the wire format.
    this.client = new GoogleGenAI({
      apiKey: options.apiKey, vertexai: false, apiVersion: 'v1beta',
      httpOptions: { baseUrl: options.baseUrl, timeout: options.timeoutMs },
    });
  }

  /** Typical seconds of one image render (thinking image models take 10-30 s). */
  typicalSeconds(kind: ImageKind): number {
    return kind === 'card' ? 25 : 20;
  }

  /** One generateContent call; every failure on the way, thrown or answered, leaves as a ProviderError. */
  private async generate(model: string, parts: Part[], config: GenerateContentConfig, signal?: AbortSignal): Promise<GenerateContentResponse> {
    // A client span per call when tracing is on (the SDK's fetch is not instrumented).
    return inSpan('gemini generateContent', { kind: SpanKind.CLIENT, attributes: { 'gen_ai.system': 'gemini', 'gen_ai.request.model': model } }, async () => {
      let response: GenerateContentResponse;
      try {
        response = await this.client.models.generateContent({ model, contents: [{ role: 'user', parts }], config: { ...config, abortSignal: signal } });
      } catch (err) {
        throw wireFailure(err, signal, this.options.timeoutMs);
      }
      const refusal = contentRefusal(response);
      if (refusal) throw refusal;
      return response;
    });
  }

  private image(images: Buffer[], prompt: string, frame: { aspectRatio: string; imageSize: string }, signal?: AbortSignal): Promise<RenderedAsset> {
    const parts = [...images.map(inlineImage), { text: prompt }];
    const config: GenerateContentConfig = { responseModalities: ['TEXT', 'IMAGE'], imageConfig: frame };
    return askingTwiceIfUnusable(async () => pictureOf(await this.generate(this.options.imageModel, parts, config, signal)));
  }

  /** The API read the photos by their headers only: proven whole before anything is sent. */
  async renderPhoto(job: PhotoJob, signal?: AbortSignal): Promise<RenderedAsset> {
    await requireDecodable(job.images);
    return this.image(job.images, photoPrompt(job), { aspectRatio: job.aspectRatio, imageSize: job.resolution }, signal);
  }

  /** Cards are rendered at 2K, as the contract prices them; the design reference is attached after the photos. */
  async renderCard(job: CardJob, signal?: AbortSignal): Promise<RenderedAsset> {
    const images = job.designReference ? [...job.images, job.designReference] : job.images;
    await requireDecodable(images);
    return this.image(images, cardPrompt(job), { aspectRatio: job.aspectRatio, imageSize: '2K' }, signal);
  }

  async renderEdit(job: EditJob, signal?: AbortSignal): Promise<RenderedAsset> {
    return this.image([job.source], editPrompt(job), await editFrame(job.source), signal);
  }

  /** A JSON answer of the text model, read and checked by `answer`. */
  private text<T>(images: Buffer[], prompt: string, answer: TextAnswer<T>, signal?: AbortSignal): Promise<T> {
    const parts = [...images.map(inlineImage), { text: prompt }];
    const config: GenerateContentConfig = { responseMimeType: 'application/json', responseJsonSchema: answer.schema };
    return askingTwiceIfUnusable(async () => {
      const response = await this.generate(this.options.textModel, parts, config, signal);
      const said = (response.candidates?.[0]?.content?.parts ?? []).filter((p) => p.text && !p.thought).map((p) => p.text).join('');
      let json: unknown;
      try {
        json = JSON.parse(said);
      } catch {
        throw badAnswer(`Gemini's answer is not the JSON asked for: ${JSON.stringify(said.slice(0, 200))}`);
      }
      return answer.read(json);
    });
  }

  analyze(images: Buffer[], locale: Locale, signal?: AbortSignal): Promise<ProductAnalysis> {
    return this.text(images, analysisPrompt(locale), ANALYSIS, signal);
  }

  suggestWishes(job: WishesJob, signal?: AbortSignal): Promise<string> {
    return this.text(job.images, wishesPrompt(job), WISHES, signal);
  }

  suggestScenario(job: ScenarioJob, signal?: AbortSignal): Promise<string> {
    return this.text([job.image], scenarioPrompt(job), SCENARIO, signal);
  }

  surveyQuestions(job: FunnelProductJob, signal?: AbortSignal): Promise<SurveyQuestion[]> {
    return this.text(job.images, surveyPrompt(job), QUESTIONS, signal);
  }

  /** An idea whose title repeats one in the pool is an unusable answer (asked once more, then a failure). */
  suggestIdea(job: IdeaJob, signal?: AbortSignal): Promise<CardIdea> {
    const read = ideaAnswer(ideaConcepts(job.categoryId));
    const taken = new Set(job.existingTitles.map((t) => t.trim().toLowerCase()));
    return this.text(job.images, ideaPrompt(job), {
      schema: read.schema,
      read(answer) {
        const idea = read.read(answer);
        if (taken.has(idea.title.toLowerCase())) throw badAnswer(`Gemini repeated an idea already in the pool: ${JSON.stringify(idea.title)}`);
        return idea;
      },
    }, signal);
  }
}
