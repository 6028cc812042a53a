/** Request bodies of the generation endpoints (the same objects AJV enforces and OpenAPI publishes). */
import { ASPECT_RATIOS, ref } from './shared';
import type { CardOrder, PhotoOrder, VideoOrder } from '../../src/generation/prepare';

/** Fields every generation request may carry. */
const commonFields = {
  webhook_url: ref('HttpsUrl'),
  project_id: { type: 'integer', minimum: 1, maximum: 2147483647 },
  client_group_id: { type: 'string', maxLength: 100 },
};
interface CommonFields { webhook_url?: string; project_id?: number; client_group_id?: string }

const aspectRatio = { type: 'string', enum: [...ASPECT_RATIOS], default: '3:4' };

export const photoRequestSchema = {
  type: 'object',
  required: ['images'],
  properties: {
    images: { type: 'array', minItems: 1, maxItems: 5, items: ref('ImageInput') },
    category_id: ref('CategoryId'),
    concept_id: ref('ConceptId'),
    product_name: { type: 'string', minLength: 1, maxLength: 200 },
    comment: { type: 'string', maxLength: 5000 },
    photo_style: { type: 'string', enum: ['classic', 'home'], default: 'classic' },
    aspect_ratio: aspectRatio,
    resolution: { type: 'string', enum: ['1K', '2K', '4K'], default: '2K' },
    locale: ref('Locale'),
    ...commonFields,
  },
} as const;

/** The body as AJV leaves it (defaults filled): the order the preparation takes, with the fields every request may carry. */
export interface PhotoRequest extends CommonFields, PhotoOrder {}

export const cardRequestSchema = {
  type: 'object',
  required: ['images'],
  properties: {
    images: { type: 'array', minItems: 1, maxItems: 5, items: ref('ImageInput') },
    category_id: ref('CategoryId'),
    concept_id: { type: 'string', maxLength: 64, pattern: '^[a-z0-9_]{1,64}$', default: 'infographic', description: 'Card concept; `infographic` by default' },
    product_name: { type: 'string', minLength: 1, maxLength: 200 },
    user_text: { type: 'string', maxLength: 5000, description: 'Text of the card; the detected qualities by default' },
    design_key: { type: 'string', minLength: 1, maxLength: 100, description: 'Only with style `infographic`' },
    creativity: { type: 'number', minimum: 0, maximum: 1, default: 0.5, description: 'Only with style `infographic`: 0 copies the reference style, 1 is free interpretation' },
    design_reference_image: ref('ImageInput'),
    aspect_ratio: aspectRatio,
    style: { type: 'string', enum: ['infographic', 'cinematic'], default: 'infographic' },
    resolution: { description: 'Ignored: a card is always rendered at 2K' },
    locale: ref('Locale'),
    ...commonFields,
  },
} as const;

/** The body as AJV leaves it (defaults filled): the order the preparation takes, with the fields every request may carry. */
export interface CardRequest extends CommonFields, CardOrder {}

export const videoRequestSchema = {
  type: 'object',
  required: ['image'],
  properties: {
    image: ref('ImageInput'),
    scenario: { type: 'string', maxLength: 1500, default: '' },
    duration_sec: { type: 'integer', enum: [5, 10], default: 5 },
    loop_mode: { type: 'boolean', default: false },
    card_mode: { type: 'boolean', default: false },
    final_frame: ref('ImageInput'),
    aspect_ratio: aspectRatio,
    ...commonFields,
  },
} as const;

/** The body as AJV leaves it (defaults filled): the order the preparation takes, with the fields every request may carry. */
export interface VideoRequest extends CommonFields, VideoOrder {}

export const editRequestSchema = {
  type: 'object',
  required: ['instruction'],
  properties: {
    instruction: { type: 'string', minLength: 1, maxLength: 1000 },
    webhook_url: ref('HttpsUrl'),
  },
} as const;

export const actionIdPath = {
  type: 'object',
  required: ['action_id'],
  properties: { action_id: { type: 'integer', minimum: 1, maximum: 2147483647 } },
} as const;
