/**
 * Funnel sessions: what a session holds (the read model's shapes), its limits, and the codes of the steps it
 * refuses. The workflow `funnel-<id>` decides; the API and the activities read and write `funnels` through this.
 */
import type { CardIdea, CardStyle, SurveyQuestion } from '../providers/provider';

/** The idea pool's cap: one more idea past it is 409 `idea_limit_reached`. */
export const MAX_FUNNEL_IDEAS = 8;

/** A session in a day's time without a step ends by itself (`FUNNEL_IDLE_TIMEOUT_SECONDS`). */
export const DEFAULT_FUNNEL_IDLE_TIMEOUT_SECONDS = 86_400;

/** `open` takes every step; `generated` has started its card; `expired` ended idle and only answers GET. */
export type FunnelStatus = 'open' | 'generated' | 'expired';

export interface FunnelProduct {
  category_id: string;
  /** Concepts that suit the category (the catalogue's), `infographic` first. */
  concept_suggestions: string[];
  product_name: string;
  qualities: string[];
}

export interface FunnelIdea extends CardIdea {
  /** `idea_<n>`, n its place in the pool from 1. */
  id: string;
}

/** Setup as stored: references are stored input keys. */
export interface FunnelSetup {
  aspect_ratio: string;
  style: CardStyle;
  design_key?: string;
  creativity: number;
  design_reference?: string;
  model_reference?: string;
  environment_reference?: string;
}

export type FunnelAnswers = Record<string, string | string[]>;

/** The `error` codes (and ApplicationFailure types of the workflow's updates) of refused steps. */
export const FUNNEL_REFUSALS = {
  /** The session ended idle: only GET answers. */
  expired: 'funnel_expired',
  /** A card was started: ideas and setup are closed. */
  generated: 'funnel_generated',
  ideaLimit: 'idea_limit_reached',
  ideaFailed: 'idea_failed',
  /** The session is continuing as new: the step is refused for a moment (503, try again). */
  busy: 'funnel_busy',
} as const;

export const ideaId = (position: number): string => `idea_${position}`;

/** One row of `funnels` as the API and the activities read it. */
export interface FunnelRow {
  id: number;
  /** The session of a test key, whose text helpers are the sandbox renderer's (read by `readFunnel` only). */
  sandbox?: boolean;
  account_id: number;
  project_id: number;
  status: FunnelStatus;
  locale: 'ru' | 'en' | 'es';
  inputs: string[];
  product: FunnelProduct;
  questions: SurveyQuestion[];
  ideas: FunnelIdea[];
  setup: FunnelSetup | null;
  answers: FunnelAnswers | null;
  chosen_idea_id: string | null;
  action_id: number | null;
  cards_started: number;
  created_at: Date;
  updated_at: Date;
  ended_at: Date | null;
}

export const FUNNEL_COLUMNS = `id, account_id, project_id, status, locale, inputs, product, questions, ideas, setup, answers, chosen_idea_id,
  action_id, cards_started, created_at, updated_at, ended_at`;
