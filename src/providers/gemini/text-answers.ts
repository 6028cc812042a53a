/**
 * The JSON the text model must answer with (sent as `responseJsonSchema`), and the checks of what it answered:
 * a schema is a request, not a guarantee, so every answer is read as untrusted input.
 */
import { CATEGORY_IDS } from '../../domain/catalogue';
import type { ProductAnalysis } from '../provider';
import { badAnswer } from './failures';

/** Bounds of the answers, the same as the contract's for what they feed (product_name, user_text, scenario). */
export const LIMITS = { productName: 200, qualities: 5, quality: 120, wishes: 5000, scenario: 1500 } as const;

export interface TextAnswer<T> {
  schema: object;
  read(answer: unknown): T;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A non-empty trimmed string of at most `max` characters, else the answer is bad. */
function boundedText(value: unknown, field: string, max: number): string {
  const text = typeof value === 'string' ? value.trim() : '';
  if (!text) throw badAnswer(`Gemini's answer has no ${field}`);
  if (text.length > max) throw badAnswer(`Gemini's ${field} is longer than ${max} characters`);
  return text;
}

/**
 * Product analysis. The category must be a catalogue id (matched without regard to case or surrounding spaces);
 * any other value is a bad answer like malformed JSON (asked again once, then the call fails), never guessed.
 */
export const ANALYSIS: TextAnswer<ProductAnalysis> = {
  schema: {
    type: 'object',
    properties: {
      category_id: { type: 'string', enum: CATEGORY_IDS },
      product_name: { type: 'string' },
      qualities: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: LIMITS.qualities },
    },
    required: ['category_id', 'product_name', 'qualities'],
  },
  read(answer) {
    if (!isObject(answer)) throw badAnswer("Gemini's analysis is not a JSON object");
    const category = typeof answer.category_id === 'string' ? answer.category_id.trim().toLowerCase() : '';
    if (!CATEGORY_IDS.includes(category)) throw badAnswer(`Gemini answered a category that is not in the catalogue: ${JSON.stringify(answer.category_id)}`);
    const qualities = Array.isArray(answer.qualities) ? answer.qualities : [];
    if (qualities.length < 1 || qualities.length > LIMITS.qualities) throw badAnswer(`Gemini answered ${qualities.length} qualities (1 to ${LIMITS.qualities} expected)`);
    return {
      category_id: category,
      product_name: boundedText(answer.product_name, 'product name', LIMITS.productName),
      qualities: qualities.map((q) => boundedText(q, 'quality', LIMITS.quality)),
    };
  },
};

export const WISHES: TextAnswer<string> = {
  schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  read: (answer) => boundedText(isObject(answer) ? answer.text : undefined, 'text', LIMITS.wishes),
};

export const SCENARIO: TextAnswer<string> = {
  schema: { type: 'object', properties: { scenario: { type: 'string' } }, required: ['scenario'] },
  read: (answer) => boundedText(isObject(answer) ? answer.scenario : undefined, 'scenario', LIMITS.scenario),
};
