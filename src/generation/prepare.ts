/**
 * What every generation endpoint (v1 and v2, single or part of a funnel) does before it submits: read and check
 * the images (stored only once the action is accepted), fill what the integrator left out (category, concept,
 * product name) from the catalogue or the text provider's analysis, price it, and say where its card goes.
 */
import { Action } from '../db/entities';
import type { CardParams, PhotoParams, VideoParams } from '../actions/params';
import type { Placement } from '../actions/submit';
import { requireProvider, textFor } from '../providers';
import { priceOf, readPriceList } from '../billing/pricing';
import { requireOwn } from '../accounts/ownership';
import { AppError, badRequest, unsupportedParameter } from '../errors';
import { type Locale, resolveLocale } from '../locale';
import type { PhotoJob } from '../providers/provider';
import type { Caller, Services } from '../services';
import { analyzeProduct } from './ask-text-provider';
import { categoryOfConcept, findCategory } from './catalogue';
import { type CheckedImage, decodeUnread, type ImageInput, imageReader, inputKeys, type PixelCheck, wholeInputs } from './images';

/** A photo as the contract orders it (v1 `generate/photo`, v2 `generation.execute`). */
export interface PhotoOrder {
  images: ImageInput[];
  category_id?: string;
  concept_id?: string;
  product_name?: string;
  comment?: string;
  photo_style: PhotoJob['photoStyle'];
  aspect_ratio: string;
  resolution: PhotoJob['resolution'];
  locale?: Locale;
}

/** A marketing card as the contract orders it (v1 `generate/card`, a batch's `card` item). */
export interface CardOrder {
  images: ImageInput[];
  category_id?: string;
  concept_id: string;
  product_name?: string;
  user_text?: string;
  design_key?: string;
  creativity: number;
  design_reference_image?: ImageInput;
  aspect_ratio: string;
  style: 'infographic' | 'cinematic';
  locale?: Locale;
}

/** A video as the contract orders it (v1 `generate/video`, a batch's `video` item). */
export interface VideoOrder {
  image: ImageInput;
  scenario: string;
  duration_sec: 5 | 10;
  loop_mode: boolean;
  card_mode: boolean;
  final_frame?: ImageInput;
  aspect_ratio: string;
}

/** The smallest side of a video's image (400 `image_too_small` below it, before anything is charged). */
export const MIN_VIDEO_SIDE = 300;

/** What a card request may not combine (400 `unsupported_parameter`), checked before anything else. */
export function checkCardOrder(body: Pick<CardOrder, 'style' | 'design_key' | 'design_reference_image'>): void {
  if (body.style === 'cinematic') {
    if (body.design_key !== undefined) throw unsupportedParameter('design_key is only supported with style infographic');
    if (body.design_reference_image !== undefined) throw unsupportedParameter('design_reference_image is only supported with style infographic');
  }
}

export interface Detected { categoryId: string; conceptId: string; productName: string; qualities?: string[]; detected: boolean }

/** The preparation every generation endpoint (v1 and v2) is made of, for one process's services. */
export function generationPreparation(services: Pick<Services, 'db' | 'providers' | 'store' | 'outbound'>, options: { storedImages?: boolean } = {}) {
  const { db, providers } = services;
  const readImage = imageReader(services, { stored: options.storedImages });

  async function readImages(inputs: ImageInput[], field: string, caller: Caller, pixels: PixelCheck = 'decode'): Promise<CheckedImage[]> {
    const images: CheckedImage[] = [];
    for (const [index, input] of inputs.entries()) images.push(await readImage(input, `${field}[${index}]`, caller.accountId, pixels));
    return images;
  }

  /**
   * Fills category, concept and product name: sent values win, a sent catalogue concept implies its category,
   * the rest is detected from the photos (`images`, read by their header only or not: an analysis decodes them
   * first, so a damaged one is 400 before the text provider sees it). `needQualities` asks for the detected
   * qualities too.
   */
  async function detect(
    caller: Caller, images: CheckedImage[], locale: Locale,
    sent: { category_id?: string; concept_id?: string; product_name?: string }, defaultConcept: string | undefined, needQualities = false,
  ): Promise<Detected> {
    let categoryId = sent.category_id ?? (sent.concept_id ? categoryOfConcept(sent.concept_id)?.id : undefined);
    let productName = sent.product_name;
    let qualities: string[] | undefined;
    let detected = false;
    if (!categoryId || !productName || needQualities) {
      requireProvider(services, 'text', caller);
      await decodeUnread(images, 'images');
      const analysis = await analyzeProduct(textFor(providers, caller), images.map((i) => i.bytes), locale);
      qualities = analysis.qualities;
      if (!categoryId) [categoryId, detected] = [analysis.category_id, true];
      if (!productName) [productName, detected] = [analysis.product_name, true];
    }
    const category = findCategory(categoryId)!;
    let conceptId = sent.concept_id;
    if (!conceptId) {
      conceptId = defaultConcept ?? category.concepts[0].id;
      if (!defaultConcept) detected = true;
    } else if (categoryOfConcept(conceptId) && !category.concepts.some((c) => c.id === conceptId)) {
      throw badRequest(`concept_id "${conceptId}" does not belong to category "${categoryId}"`);
    }
    return { categoryId, conceptId, productName, qualities, detected };
  }

    /** A new card grouped by project_id or the key's default, its project named after the product. */
  const newCard = (body: { project_id?: number; aspect_ratio: string }, found: Detected, ownProject?: 'api_v2'): Placement => ({
    kind: 'new-card', projectId: body.project_id, aspectRatio: body.aspect_ratio, contentType: 'photo', ownProject,
    hints: { name: found.productName, productName: found.productName, categoryId: found.categoryId, conceptId: found.conceptId },
  });

  /**
   * A photo request made ready to submit: images read by their header (submitAction stores them; the worker decodes
   * them, or the analysis when it runs), fields detected, price and params set.
   */
  async function preparePhoto(body: PhotoOrder, caller: Caller, acceptLanguage: string | undefined) {
    const locale = resolveLocale(body.locale, acceptLanguage);
    const images = await readImages(body.images, 'images', caller, 'header');
    const found = await detect(caller, images, locale, body, undefined);
    const price = priceOf(await readPriceList(db), { product: 'photo', resolution: body.resolution });
    const params: PhotoParams = {
      inputs: inputKeys(images), ...wholeInputs(images), productName: found.productName, categoryId: found.categoryId,
      conceptId: found.conceptId, locale, photoStyle: body.photo_style, aspectRatio: body.aspect_ratio,
      resolution: body.resolution, comment: body.comment,
    };
    return { found, price, params, images };
  }

  /** A card request made ready to submit (images read by their headers: the worker decodes them, or the analysis). */
  async function prepareCard(body: CardOrder, caller: Caller, acceptLanguage: string | undefined) {
    const locale = resolveLocale(body.locale, acceptLanguage);
    const images = await readImages(body.images, 'images', caller, 'header');
    const reference = body.design_reference_image
      ? await readImage(body.design_reference_image, 'design_reference_image', caller.accountId, 'header') : undefined;
    const found = await detect(caller, images, locale, body, body.concept_id, body.user_text === undefined);
    const all = reference ? [...images, reference] : images;
    const params: CardParams = {
      inputs: inputKeys(images), designReference: reference && inputKeys([reference])[0], ...wholeInputs(all),
      productName: found.productName, categoryId: found.categoryId, conceptId: found.conceptId,
      userText: body.user_text ?? found.qualities!.join('\n'), style: body.style,
      designKey: body.style === 'infographic' ? body.design_key : undefined,
      creativity: body.style === 'infographic' ? body.creativity : 0, aspectRatio: body.aspect_ratio, locale,
    };
    const price = priceOf(await readPriceList(db), { product: 'card' });
    return { found, price, params, images: all };
  }

  /**
   * A video request made ready to submit: its image read by its header (the worker decodes it) and at least
   * MIN_VIDEO_SIDE on each side; the final frame decoded here, since a provider may not read it (Runway's
   * gen4_turbo is not sent one) and a damaged one must not pass unnoticed.
   */
  async function prepareVideo(body: VideoOrder, caller: Caller) {
    const image = await readImage(body.image, 'image', caller.accountId, 'header');
    if (image.width < MIN_VIDEO_SIDE || image.height < MIN_VIDEO_SIDE) {
      throw new AppError(400, 'image_too_small', `image is ${image.width}x${image.height}; a video needs at least ${MIN_VIDEO_SIDE}x${MIN_VIDEO_SIDE}`);
    }
    const final = body.final_frame && !body.loop_mode ? await readImage(body.final_frame, 'final_frame', caller.accountId) : undefined;
    const all = final ? [image, final] : [image];
    const params: VideoParams = {
      input: inputKeys([image])[0], finalFrame: final && inputKeys([final])[0], ...wholeInputs(all), scenario: body.scenario,
      durationSec: body.duration_sec, loopMode: body.loop_mode, cardMode: body.card_mode, aspectRatio: body.aspect_ratio,
    };
    const price = priceOf(await readPriceList(db), { product: 'video', durationSec: body.duration_sec });
    return { price, params, images: all };
  }

  return { readImage, readImages, detect, newCard, preparePhoto, prepareCard, prepareVideo };
}


/** A video's new card: grouped by project_id or the key's default (nothing is detected for a video). */
export const newVideoCard = (body: { project_id?: number; aspect_ratio: string }, ownProject?: 'api_v2'): Placement => ({
  kind: 'new-card', projectId: body.project_id, aspectRatio: body.aspect_ratio, contentType: 'video', ownProject,
  hints: { name: null, productName: null, categoryId: null, conceptId: null },
});

export const MAX_EDIT_DEPTH = 99;

/** Checks that `sourceId` can be edited by the caller and answers it (shared with v2 edit jobs). */
export async function editableSource(services: Pick<Services, 'db'>, caller: Caller, sourceId: number): Promise<Action> {
  const source = await requireOwn(services.db.manager, Action, sourceId, caller, 'Action');
  if (source.status !== 'completed' || !source.assetPath) {
    throw new AppError(409, 'action_not_completed', `Action ${sourceId} is ${source.status}; only a completed action can be edited`, { status: source.status });
  }
  if (source.product === 'video') throw unsupportedParameter('A video cannot be edited');
  if (source.depth + 1 > MAX_EDIT_DEPTH) {
    throw new AppError(409, 'edit_depth_exceeded', `Action ${sourceId} is at depth ${source.depth}; edits go at most ${MAX_EDIT_DEPTH} deep`, { max_depth: MAX_EDIT_DEPTH });
  }
  return source;
}

