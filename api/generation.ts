/**
 * What the generation routes (v1 generate, v2 jobs, funnels) answer alike: the errors OpenAPI lists for them, the
 * `detected` fields and the 200 answer of an accepted generation.
 */
import type { Detected } from '../src/generation/prepare';
import { V1_PREFIX, type RouteResponse } from './route';

export const GENERATION_ERRORS: Record<number, RouteResponse> = {
  400: { description: '`invalid_request`: an image cannot be read or fetched, or concept_id does not belong to category_id; `upload_not_found`, `upload_expired`' },
  402: { description: '`insufficient_tokens`; details: available, required. Or `spend_limit_exceeded`: the API key\'s monthly spend limit would be passed; details: limit, spent, required' },
  403: { description: '`forbidden`: project_id belongs to another account' },
  404: { description: '`not_found`: project_id does not exist' },
  409: { description: '`idempotency_conflict`: the Idempotency-Key was used with a different request in the last 5 minutes' },
  413: { description: '`image_too_large`: an image is over 15 MB decoded or over 50 megapixels (25 for HEIC) or 20,000 pixels a side' },
  500: { description: '`analysis_failed` (photos and cards): category_id or product_name was left out and the analysis that fills it failed; nothing was held' },
  503: { description: '`generation_unavailable`: the images could not be stored or the workflow could not be started; nothing was held' },
};

/** What was filled in for the integrator (null when everything was sent). */
export const detectedView = (d: Detected) =>
  d.detected ? { category_id: d.categoryId, concept_id: d.conceptId, product_name: d.productName } : null;

/** The answer to an accepted v1 generation. */
export const generationResponse = (placed: { actionId: number; projectId: number; cardId: number }, detected: object | null) => ({
  action_id: placed.actionId,
  status: 'pending' as const,
  poll_url: `${V1_PREFIX}/status/${placed.actionId}`,
  project_id: placed.projectId,
  card_id: placed.cardId,
  detected,
});
