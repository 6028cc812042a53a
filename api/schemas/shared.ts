/**
 * Schemas shared by several endpoints, registered in AJV by `$id` and published under components/schemas in the
 * OpenAPI document. Reference them as `{ $ref: 'Name' }`.
 */
import { CATEGORY_IDS, CONCEPT_IDS } from '../../src/generation/catalogue';
import { LOCALES } from '../../src/locale';

const nullable = (type: string, extra: Record<string, unknown> = {}) => ({ type: [type, 'null'], ...extra });
const timestamp = { type: 'string', format: 'date-time' };

export const ASPECT_RATIOS = ['9:16', '4:3', '1:1', '16:9', '3:4'] as const;

/**
 * What an action costs and where its spark hold stands, on the status, job and results answers. A hold is open
 * (`held` = price), then charged (`charged` = price) when the result is delivered, or released (both 0) when the
 * action fails or is cancelled; never both non-zero.
 */
export const MONEY_PROPERTIES = {
  price: { type: 'integer', minimum: 0, description: 'Sparks this action costs: the price held when it was accepted' },
  held: { type: 'integer', minimum: 0, description: 'Sparks held for it now: its price while it is pending or processing, else 0' },
  charged: { type: 'integer', minimum: 0, description: 'Sparks charged for it: its price once completed; 0 while held, and for failed or cancelled actions (released)' },
} as const;
export const MONEY_FIELDS = ['price', 'held', 'charged'] as const;

export const THUMB_URL_DESCRIPTION = 'Fresh signed URL of a small WebP thumbnail (at most 320 px a side) of a completed image result; '
  + 'null for a video, and for a result stored before thumbnails were made';

export const SHARED_SCHEMAS = {
  ImageInput: {
    $id: 'ImageInput',
    type: 'object',
    description: 'An image: a public HTTPS `url`, or base64 `data` (or an `upl_` upload id in `data`). Exactly one of the two.',
    properties: {
      url: { type: 'string', maxLength: 2048, pattern: '^https://', description: 'Public HTTPS URL; image up to 15 MB' },
      // No maxLength: an oversize image is the contract's 413 `image_too_large`; the route's body cap bounds it.
      data: { type: 'string', minLength: 1, description: 'Base64 image data, or an upload id starting with `upl_`' },
      media_type: { type: 'string', maxLength: 100, default: 'image/jpeg', description: 'MIME type of `data`; the real format is sniffed from the bytes' },
    },
    oneOf: [{ required: ['url'] }, { required: ['data'] }],
  },
  CategoryId: { $id: 'CategoryId', type: 'string', enum: CATEGORY_IDS },
  ConceptId: { $id: 'ConceptId', type: 'string', enum: CONCEPT_IDS },
  Locale: { $id: 'Locale', type: 'string', enum: [...LOCALES] },
  HttpsUrl: { $id: 'HttpsUrl', type: 'string', maxLength: 2000, pattern: '^https://', format: 'uri' },
  Error: {
    $id: 'Error',
    type: 'object',
    required: ['detail'],
    properties: {
      detail: {
        type: 'object',
        required: ['error', 'message'],
        properties: {
          error: { type: 'string', description: 'Stable code to branch on' },
          message: { type: 'string' },
          details: { type: 'object' },
        },
      },
    },
  },
  ValidationError: {
    $id: 'ValidationError',
    type: 'object',
    required: ['detail'],
    properties: {
      detail: {
        type: 'array',
        items: {
          type: 'object',
          required: ['loc', 'msg', 'type'],
          properties: {
            loc: { type: 'array', items: { type: ['string', 'integer'] }, description: 'Where: body, query or path, then the field path' },
            msg: { type: 'string' },
            type: { type: 'string', description: 'The JSON Schema keyword that failed' },
          },
        },
      },
    },
  },
  InternalError: {
    $id: 'InternalError',
    type: 'object',
    required: ['error'],
    properties: { error: { type: 'string', enum: ['Internal server error'] } },
  },
  Detected: {
    $id: 'Detected',
    type: ['object', 'null'],
    description: 'The values used for fields that were detected from the photos; null when nothing was detected.',
    properties: {
      category_id: { type: 'string' },
      concept_id: { type: 'string' },
      product_name: { type: 'string' },
    },
  },
  GenerationResponse: {
    $id: 'GenerationResponse',
    type: 'object',
    required: ['action_id', 'status', 'poll_url', 'project_id', 'card_id', 'detected'],
    properties: {
      action_id: { type: 'integer' },
      status: { type: 'string', enum: ['pending'] },
      poll_url: { type: 'string', description: 'Path of the status endpoint for this action' },
      project_id: { type: 'integer' },
      card_id: { type: 'integer' },
      detected: { $ref: 'Detected' },
    },
  },
  ActionStatus: {
    $id: 'ActionStatus',
    type: 'object',
    required: ['action_id', 'status', 'type', ...MONEY_FIELDS],
    properties: {
      action_id: { type: 'integer' },
      status: { type: 'string', enum: ['pending', 'processing', 'completed', 'failed', 'cancelled'] },
      type: { type: 'string', enum: ['generate', 'edit', 'video'] },
      result_url: nullable('string', { description: 'Fresh signed URL of the result, when completed' }),
      result_url_expires_at: nullable('string', { format: 'date-time' }),
      error_message: nullable('string'),
      created_at: nullable('string', { format: 'date-time' }),
      completed_at: nullable('string', { format: 'date-time' }),
      ...MONEY_PROPERTIES,
    },
  },
  Project: {
    $id: 'Project',
    type: 'object',
    required: ['id', 'source', 'created_at', 'updated_at'],
    properties: {
      id: { type: 'integer' },
      name: nullable('string'),
      product_name: nullable('string'),
      category_id: nullable('string'),
      concept_id: nullable('string'),
      comment: nullable('string'),
      source: { type: 'string', enum: ['api', 'api_inbox', 'api_v2'] },
      created_at: timestamp,
      updated_at: timestamp,
    },
  },
  ActionSummary: {
    $id: 'ActionSummary',
    type: 'object',
    required: ['id', 'card_id', 'type', 'status'],
    properties: {
      id: { type: 'integer' },
      card_id: { type: 'integer' },
      type: { type: 'string', enum: ['generate', 'edit', 'video'] },
      status: { type: 'string', enum: ['pending', 'processing', 'completed', 'failed', 'cancelled'] },
      depth: { type: 'integer', default: 0 },
      parent_action_id: nullable('integer'),
      asset_path: nullable('string'),
      thumb_url: nullable('string', { description: THUMB_URL_DESCRIPTION }),
      created_at: nullable('string', { format: 'date-time' }),
      completed_at: nullable('string', { format: 'date-time' }),
    },
  },
  Card: {
    $id: 'Card',
    type: 'object',
    required: ['id', 'project_id', 'status', 'content_type', 'aspect_ratio'],
    properties: {
      id: { type: 'integer' },
      project_id: { type: 'integer' },
      status: { type: 'string', enum: ['pending', 'processing', 'completed', 'failed', 'cancelled'] },
      content_type: { type: 'string', enum: ['photo', 'video'] },
      aspect_ratio: { type: 'string' },
      active_action_id: nullable('integer'),
      created_at: timestamp,
      updated_at: timestamp,
    },
  },
  Balance: {
    $id: 'Balance',
    type: 'object',
    required: ['balance', 'available', 'holds'],
    properties: {
      balance: { type: 'integer', description: 'Total sparks' },
      available: { type: 'integer', description: 'balance minus holds' },
      holds: { type: 'integer', description: 'Sparks reserved for pending or processing actions' },
    },
  },
  Pricing: {
    $id: 'Pricing',
    type: 'object',
    required: ['generation', 'improvement', 'video_5sec', 'video_10sec'],
    properties: {
      generation: { type: 'integer' },
      improvement: { type: 'integer' },
      video_5sec: { type: 'integer' },
      video_10sec: { type: 'integer' },
    },
  },
  CategoryCatalogue: {
    $id: 'CategoryCatalogue',
    type: 'object',
    required: ['categories'],
    properties: {
      categories: {
        type: 'array',
        items: {
          type: 'object',
          required: ['id', 'name', 'concepts'],
          properties: {
            id: { type: 'string' },
            name: { type: 'string' },
            concepts: {
              type: 'array',
              items: { type: 'object', required: ['id', 'name'], properties: { id: { type: 'string' }, name: { type: 'string' } } },
            },
          },
        },
      },
    },
  },
} as const;

export const ref = (name: keyof typeof SHARED_SCHEMAS) => ({ $ref: name });
export { timestamp };
