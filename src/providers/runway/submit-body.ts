/**
 * The body of `POST /v1/image_to_video` for one video job: the model, the source image (and the last frame where
 * the model takes one), the scenario with the modes' wording as `promptText`, the ratio and the duration.
 */
import type { RunwayML } from '@runwayml/sdk';
import { ProviderError, VideoJob } from '../provider';
import { RUNWAY_MODELS, RunwayVideoModel } from './models';
import { promptImageUri } from './prompt-image';

/** Runway's limit on `promptText`, in UTF-16 code units. */
const MAX_PROMPT_CHARS = 1000;

const DEFAULT_SCENARIO = 'A short product video: the product stays the hero, with smooth, gentle motion.';
const CARD_MODE = 'Static camera, no camera movement. Keep the picture and all of its text exactly as they are, sharp and legible.';
const LOOP_MODE = 'Seamless loop: the video ends exactly where it starts.';

/** The scenario (cut to fit) followed by the wording of the modes, which is never cut. */
function promptText(job: Pick<VideoJob, 'scenario' | 'cardMode' | 'loopMode'>): string {
  const modes = [job.cardMode ? CARD_MODE : '', job.loopMode ? LOOP_MODE : ''].filter(Boolean).join(' ');
  const room = MAX_PROMPT_CHARS - (modes ? modes.length + 1 : 0);
  let scenario = job.scenario.trim() || DEFAULT_SCENARIO;
  if (scenario.length > room) scenario = scenario.slice(0, /[\uD800-\uDBFF]/.test(scenario[room - 1]) ? room - 1 : room).trimEnd();
  return [scenario, modes].filter(Boolean).join(' ');
}

/**
 * The last frame to send, where the model takes one: the source image again in loop mode, else the final frame.
 * Other models get the first frame only (loop mode is then asked for in words; a final frame is not sent).
 */
function lastFrame(job: VideoJob, model: RunwayVideoModel): Buffer | undefined {
  if (!RUNWAY_MODELS[model].lastFrame) return undefined;
  return job.loopMode ? job.image : job.finalFrame;
}

export async function submitBody(job: VideoJob, model: RunwayVideoModel): Promise<RunwayML.ImageToVideoCreateParams> {
  const ratio = RUNWAY_MODELS[model].ratios[job.aspectRatio];
  if (!ratio) {
    const supported = Object.keys(RUNWAY_MODELS[model].ratios).join(', ');
    throw new ProviderError(`Runway's ${model} does not render ${job.aspectRatio} videos (only ${supported})`, 'unsupported_ratio', false);
  }
  const first = await promptImageUri(job.image);
  const last = lastFrame(job, model);
  const promptImage = last
    ? [{ uri: first, position: 'first' as const }, { uri: last === job.image ? first : await promptImageUri(last), position: 'last' as const }]
    : first;
  return { model, promptImage, promptText: promptText(job), ratio, duration: job.durationSec } as RunwayML.ImageToVideoCreateParams;
}
