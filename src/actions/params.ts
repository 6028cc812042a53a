/**
 * What an action's `params` column holds for each product: the provider job with every image replaced by its
 * stored input key. The API writes them; the provider activity reads the images back and calls the provider.
 */
import type { CardJob, EditJob, PhotoJob, VideoJob } from '../providers/provider';

/**
 * `wholeInputs`: the keys among its inputs whose every pixel was decoded before the action was accepted (an upload's,
 * decoded when it was uploaded): the worker does not decode them again (src/providers/inputs.ts). Absent: none.
 */
interface Inputs { wholeInputs?: string[] }
export type PhotoParams = Omit<PhotoJob, 'images'> & Inputs & { inputs: string[] };
export type CardParams = Omit<CardJob, 'images' | 'designReference'> & Inputs & { inputs: string[]; designReference?: string };
export type VideoParams = Omit<VideoJob, 'image' | 'finalFrame'> & Inputs & { input: string; finalFrame?: string };
/** `source` is the parent's stored result. */
export type EditParams = Omit<EditJob, 'source'> & { source: string };

export interface ParamsByProduct {
  photo: PhotoParams;
  card: CardParams;
  video: VideoParams;
  edit: EditParams;
}
