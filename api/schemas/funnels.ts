/** Request and response bodies of the funnel session endpoints (the same objects AJV enforces and OpenAPI publishes). */
import { MAX_FUNNEL_IDEAS } from '../../src/funnels/session';
import { ASPECT_RATIOS, ref, timestamp } from './shared';

type ImageInputBody = { url?: string; data?: string; media_type: string };
const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });

export const funnelIdPath = {
  type: 'object',
  required: ['funnel_id'],
  properties: { funnel_id: { type: 'integer', minimum: 1, maximum: 2147483647 } },
} as const;

export const startFunnelSchema = {
  type: 'object',
  required: ['images'],
  properties: {
    images: { type: 'array', minItems: 1, maxItems: 5, items: ref('ImageInput') },
    product_name: { type: 'string', minLength: 1, maxLength: 200, description: 'Detected from the photos when left out' },
    category_id: ref('CategoryId'),
    locale: ref('Locale'),
  },
} as const;

export interface StartFunnelRequest {
  images: ImageInputBody[];
  product_name?: string;
  category_id?: string;
  locale?: 'ru' | 'en' | 'es';
}

export const funnelSetupSchema = {
  type: 'object',
  properties: {
    aspect_ratio: { type: 'string', enum: [...ASPECT_RATIOS], default: '3:4' },
    style: { type: 'string', enum: ['infographic', 'cinematic'], default: 'infographic' },
    resolution: { description: 'Ignored: a card is always rendered at 2K' },
    design_key: { type: 'string', minLength: 1, maxLength: 100, description: 'Only with style `infographic`' },
    creativity: { type: 'number', minimum: 0, maximum: 1, default: 0.5, description: 'Only with style `infographic`' },
    design_reference_image: { ...ref('ImageInput'), description: 'Only with style `infographic`; `data` may be an upload id' },
    model_reference_image: ref('ImageInput'),
    environment_reference_image: ref('ImageInput'),
  },
} as const;

export interface FunnelSetupRequest {
  aspect_ratio: string;
  style: 'infographic' | 'cinematic';
  design_key?: string;
  creativity: number;
  design_reference_image?: ImageInputBody;
  model_reference_image?: ImageInputBody;
  environment_reference_image?: ImageInputBody;
}

export const funnelGenerateSchema = {
  type: 'object',
  properties: {
    answers: {
      type: 'object',
      description: 'Answers by question id: a string (a choice of a `single` question, or free text), or a list of choices (`multiple`)',
      maxProperties: 10,
      propertyNames: { type: 'string', pattern: '^[a-z0-9_]{1,40}$' },
      additionalProperties: {
        anyOf: [
          { type: 'string', maxLength: 1000 },
          { type: 'array', maxItems: 10, items: { type: 'string', maxLength: 200 } },
        ],
      },
    },
    idea_id: { type: 'string', pattern: '^idea_[0-9]{1,3}$', maxLength: 10, description: 'An idea of the pool; its concept and style are used' },
    webhook_url: ref('HttpsUrl'),
    client_group_id: { type: 'string', maxLength: 100 },
  },
} as const;

export interface FunnelGenerateRequest {
  answers?: Record<string, string | string[]>;
  idea_id?: string;
  webhook_url?: string;
  client_group_id?: string;
}

const idea = {
  type: 'object',
  required: ['id', 'title', 'description', 'concept_id', 'style'],
  properties: {
    id: { type: 'string', description: '`idea_<n>`' },
    title: { type: 'string' },
    description: { type: 'string' },
    concept_id: { type: 'string', description: 'Suggested concept: `infographic` or a concept of the category' },
    style: { type: 'string', enum: ['infographic', 'cinematic'] },
  },
};

export const funnelIdeaResponse = {
  type: 'object',
  required: ['funnel_id', 'idea', 'ideas_count', 'max_ideas'],
  properties: { funnel_id: { type: 'integer' }, idea, ideas_count: { type: 'integer' }, max_ideas: { type: 'integer', enum: [MAX_FUNNEL_IDEAS] } },
};

export const funnelResponse = {
  type: 'object',
  required: ['funnel_id', 'status', 'project_id', 'locale', 'product', 'questions', 'ideas', 'max_ideas', 'setup', 'answers', 'chosen_idea_id', 'card', 'created_at', 'updated_at', 'ended_at'],
  properties: {
    funnel_id: { type: 'integer' },
    status: { type: 'string', enum: ['open', 'generated', 'expired'], description: '`open`: every step; `generated`: the card was started; `expired`: ended idle, GET only' },
    project_id: { type: 'integer', description: 'The session\'s own project, where its card goes' },
    locale: ref('Locale'),
    product: {
      type: 'object',
      required: ['category_id', 'concept_suggestions', 'product_name', 'qualities'],
      properties: {
        category_id: { type: 'string' },
        concept_suggestions: { type: 'array', items: { type: 'string' } },
        product_name: { type: 'string' },
        qualities: { type: 'array', items: { type: 'string' } },
      },
    },
    questions: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'text', 'kind'],
        properties: {
          id: { type: 'string' }, text: { type: 'string' }, kind: { type: 'string', enum: ['single', 'multiple', 'text'] },
          choices: { type: 'array', items: { type: 'string' } },
        },
      },
    },
    ideas: { type: 'array', items: idea },
    max_ideas: { type: 'integer' },
    setup: nullable({
      type: 'object',
      required: ['aspect_ratio', 'style', 'creativity', 'design_key', 'references'],
      properties: {
        aspect_ratio: { type: 'string' },
        style: { type: 'string', enum: ['infographic', 'cinematic'] },
        creativity: { type: 'number' },
        design_key: { type: ['string', 'null'] },
        references: { type: 'array', items: { type: 'string', enum: ['design', 'model', 'environment'] }, description: 'Which references were given' },
      },
    }),
    answers: { type: ['object', 'null'] },
    chosen_idea_id: { type: ['string', 'null'] },
    card: nullable({
      type: 'object',
      required: ['action_id', 'card_id', 'status', 'result_url', 'result_url_expires_at', 'error_message'],
      properties: {
        action_id: { type: 'integer' },
        card_id: { type: 'integer' },
        status: { type: 'string', enum: ['pending', 'processing', 'completed', 'failed', 'cancelled'] },
        result_url: { type: ['string', 'null'] },
        result_url_expires_at: { type: ['string', 'null'], format: 'date-time' },
        error_message: { type: ['string', 'null'] },
      },
    }),
    created_at: timestamp,
    updated_at: timestamp,
    ended_at: { type: ['string', 'null'], format: 'date-time' },
  },
};
