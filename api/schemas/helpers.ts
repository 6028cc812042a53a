/** Bodies and answers of POST /analyze and the AI helpers (the same objects AJV enforces and OpenAPI publishes). */
import { HELPER_CALLS_PER_SPARK, FREE_HELPER_CALLS } from '../../src/helper-usage/usage';
import type { Locale } from '../../src/locale';
import { ref } from './shared';

/** The helpers take images as base64 `data` only (or an `upl_` upload id in `data`); no URLs. */
const base64Image = {
  type: 'object',
  required: ['data'],
  description: 'Base64 image data (or an `upl_` upload id) with its MIME type; the real format is sniffed from the bytes',
  properties: {
    data: { type: 'string', minLength: 1, description: 'Base64 image data, or an upload id starting with `upl_`' },
    media_type: { type: 'string', maxLength: 100, default: 'image/jpeg' },
  },
} as const;

const productName = { type: 'string', minLength: 1, maxLength: 200 } as const;

export const analyzeRequestSchema = {
  type: 'object',
  required: ['image'],
  properties: { image: ref('ImageInput'), locale: ref('Locale') },
} as const;

export interface AnalyzeRequest { image: { url?: string; data?: string; media_type: string }; locale?: Locale }

export const analysisSchema = {
  type: 'object',
  required: ['category_id', 'product_name', 'qualities'],
  properties: {
    category_id: ref('CategoryId'),
    product_name: { type: 'string' },
    qualities: { type: 'array', items: { type: 'string' } },
  },
} as const;

export const wishesRequestSchema = {
  type: 'object',
  required: ['images', 'category_id', 'concept_id'],
  properties: {
    images: { type: 'array', minItems: 1, maxItems: 5, items: base64Image },
    category_id: ref('CategoryId'),
    concept_id: {
      type: 'string', maxLength: 64, pattern: '^[a-z0-9_]{1,64}$',
      description: 'A concept of category_id from the catalogue, or a card concept such as `infographic`',
    },
    product_name: productName,
    locale: ref('Locale'),
  },
} as const;

export interface WishesRequest {
  images: { data: string; media_type: string }[];
  category_id: string;
  concept_id: string;
  product_name?: string;
  locale?: Locale;
}

export const scenarioRequestSchema = {
  type: 'object',
  required: ['image'],
  properties: { image: base64Image, product_name: productName, category_id: ref('CategoryId'), locale: ref('Locale') },
} as const;

export interface ScenarioRequest { image: { data: string; media_type: string }; product_name?: string; category_id?: string; locale?: Locale }

export const helperUsageSchema = {
  type: 'object',
  required: ['used_today', 'free_limit', 'free_remaining', 'paid_rate'],
  properties: {
    used_today: { type: 'integer', description: 'Helper calls that succeeded today (UTC), both helpers together' },
    free_limit: { type: 'integer', enum: [FREE_HELPER_CALLS] },
    free_remaining: { type: 'integer' },
    paid_rate: { type: 'string', description: `1 spark per started block of ${HELPER_CALLS_PER_SPARK} calls past the free ones` },
  },
} as const;
