/**
 * What each Runway image-to-video model we accept can do, from the SDK's request types: the output ratio for each
 * of our aspect ratios, and whether it takes a last frame. Only models that render exactly 5 and 10 s are listed
 * (veo3.1 renders 4, 6 or 8 s, so it cannot honour a price by duration).
 */
import type { Config } from '../../config';

export type RunwayVideoModel = Config['runwayVideoModel'];

export interface RunwayModel {
  /** Our aspect ratio → Runway's `ratio` (width:height in pixels); an aspect ratio missing here is refused. */
  ratios: Readonly<Record<string, string>>;
  /** Takes a `position: "last"` prompt image (the final frame, or the first frame again in loop mode). */
  lastFrame: boolean;
}

const GEN4_RATIOS = { '9:16': '720:1280', '4:3': '1104:832', '1:1': '960:960', '16:9': '1280:720', '3:4': '832:1104' };

export const RUNWAY_MODELS: Readonly<Record<RunwayVideoModel, RunwayModel>> = {
  gen4_turbo: { ratios: GEN4_RATIOS, lastFrame: false },
  'gen4.5': { ratios: GEN4_RATIOS, lastFrame: false },
  /** First and last frame, 3-10 s, landscape and portrait only. */
  'gemini_omni_flash_1.1': { ratios: { '9:16': '720:1280', '16:9': '1280:720' }, lastFrame: true },
};
