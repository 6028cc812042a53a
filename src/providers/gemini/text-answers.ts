/**
 * The JSON the text model must answer with (sent as `responseJsonSchema`), and the checks of what it answered:
 * a schema is a request, not a guarantee, so every answer is read as untrusted input.
 */
import { CATEGORY_IDS } from '../../generation/catalogue';
import type { CardIdea, ProductAnalysis, SurveyQuestion } from '../provider';
import { badAnswer } from './failures';

/** Bounds of the answers, the same as the contract's for what they feed (product_name, user_text, scenario). */
export const LIMITS = {
  productName: 200, qualities: 5, quality: 120, wishes: 5000, scenario: 1500,
  questions: { min: 3, max: 5 }, questionText: 300, choices: 6, choice: 120, ideaTitle: 120, ideaDescription: 1000,
} as const;

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

const QUESTION_KINDS = ['single', 'multiple', 'text'] as const;

/** 3-5 survey questions; choices only for `single` and `multiple` (2-6 of them); ids made unique and snake_case. */
export const QUESTIONS: TextAnswer<SurveyQuestion[]> = {
  schema: {
    type: 'object',
    properties: {
      questions: {
        type: 'array', minItems: LIMITS.questions.min, maxItems: LIMITS.questions.max,
        items: {
          type: 'object',
          properties: {
            id: { type: 'string' }, text: { type: 'string' }, kind: { type: 'string', enum: [...QUESTION_KINDS] },
            choices: { type: 'array', items: { type: 'string' }, maxItems: LIMITS.choices },
          },
          required: ['id', 'text', 'kind'],
        },
      },
    },
    required: ['questions'],
  },
  read(answer) {
    const questions = isObject(answer) && Array.isArray(answer.questions) ? answer.questions : [];
    if (questions.length < LIMITS.questions.min || questions.length > LIMITS.questions.max) {
      throw badAnswer(`Gemini answered ${questions.length} questions (${LIMITS.questions.min} to ${LIMITS.questions.max} expected)`);
    }
    const seen = new Set<string>();
    return questions.map((q: unknown, index: number) => {
      if (!isObject(q)) throw badAnswer("Gemini's question is not a JSON object");
      const kind = QUESTION_KINDS.find((k) => k === q.kind);
      if (!kind) throw badAnswer(`Gemini answered a question kind outside ${QUESTION_KINDS.join(', ')}: ${JSON.stringify(q.kind)}`);
      let id = (typeof q.id === 'string' ? q.id : '').toLowerCase().replace(/[^a-z0-9_]+/g, '_').replace(/^_+|_+$/g, '').slice(0, 40) || `q${index + 1}`;
      if (seen.has(id)) id = `${id.slice(0, 37)}_${index + 1}`; // still within the 40 characters an answer may name
      seen.add(id);
      const text = boundedText(q.text, 'question text', LIMITS.questionText);
      if (kind === 'text') return { id, text, kind };
      const choices = Array.isArray(q.choices) ? q.choices : [];
      if (choices.length < 2 || choices.length > LIMITS.choices) throw badAnswer(`Gemini answered a ${kind} question with ${choices.length} choices (2 to ${LIMITS.choices} expected)`);
      return { id, text, kind, choices: choices.map((c) => boundedText(c, 'choice', LIMITS.choice)) };
    });
  },
};

/** One card idea; its concept must be one of `concepts` (the category's, or `infographic`). */
export function ideaAnswer(concepts: string[]): TextAnswer<CardIdea> {
  return {
    schema: {
      type: 'object',
      properties: {
        title: { type: 'string' }, description: { type: 'string' },
        concept_id: { type: 'string', enum: concepts }, style: { type: 'string', enum: ['infographic', 'cinematic'] },
      },
      required: ['title', 'description', 'concept_id', 'style'],
    },
    read(answer) {
      if (!isObject(answer)) throw badAnswer("Gemini's idea is not a JSON object");
      const concept = typeof answer.concept_id === 'string' ? answer.concept_id.trim().toLowerCase() : '';
      if (!concepts.includes(concept)) throw badAnswer(`Gemini answered a concept outside ${concepts.join(', ')}: ${JSON.stringify(answer.concept_id)}`);
      if (answer.style !== 'infographic' && answer.style !== 'cinematic') throw badAnswer(`Gemini answered a style that is not infographic or cinematic: ${JSON.stringify(answer.style)}`);
      return {
        title: boundedText(answer.title, 'idea title', LIMITS.ideaTitle),
        description: boundedText(answer.description, 'idea description', LIMITS.ideaDescription),
        concept_id: concept, style: answer.style,
      };
    },
  };
}
