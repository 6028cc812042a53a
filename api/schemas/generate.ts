import { ASPECT_RATIOS, ref } from './shared';

/** Fields every generation request may carry. */
const commonFields = {
  webhook_url: ref('HttpsUrl'),
  project_id: { type: 'integer', minimum: 1 },
  client_group_id: { type: 'string', maxLength: 100 },
};

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
    aspect_ratio: { type: 'string', enum: [...ASPECT_RATIOS], default: '3:4' },
    resolution: { type: 'string', enum: ['1K', '2K', '4K'], default: '2K' },
    locale: ref('Locale'),
    ...commonFields,
  },
} as const;

export interface PhotoRequest {
  images: { url?: string; data?: string; media_type: string }[];
  category_id?: string;
  concept_id?: string;
  product_name?: string;
  comment?: string;
  photo_style: 'classic' | 'home';
  aspect_ratio: string;
  resolution: '1K' | '2K' | '4K';
  locale?: 'ru' | 'en' | 'es';
  webhook_url?: string;
  project_id?: number;
  client_group_id?: string;
}

export const actionIdPath = {
  type: 'object',
  required: ['action_id'],
  properties: { action_id: { type: 'integer', minimum: 1, maximum: 2147483647 } },
} as const;
