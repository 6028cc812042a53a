/**
 * What an action's `params` column holds for each product: the validated request with detected values filled in
 * and images replaced by stored input keys. The API writes them; the provider activity reads them.
 */
import type { CardStyle, Locale } from '../providers/provider';

export interface PhotoParams {
  inputs: string[];
  productName: string;
  categoryId: string;
  conceptId: string;
  photoStyle: 'classic' | 'home';
  aspectRatio: string;
  resolution: '1K' | '2K' | '4K';
  locale: Locale;
  comment?: string;
}

export interface CardParams {
  inputs: string[];
  designReference?: string;
  productName: string;
  categoryId: string;
  conceptId: string;
  userText: string;
  style: CardStyle;
  designKey?: string;
  creativity: number;
  aspectRatio: string;
  locale: Locale;
}

export interface VideoParams {
  input: string;
  finalFrame?: string;
  scenario: string;
  durationSec: 5 | 10;
  loopMode: boolean;
  cardMode: boolean;
  aspectRatio: string;
}

export interface EditParams {
  /** The parent's stored result. */
  source: string;
  instruction: string;
}

export interface ParamsByProduct {
  photo: PhotoParams;
  card: CardParams;
  video: VideoParams;
  edit: EditParams;
}
