/**
 * POST /generate/photo: validate, detect what is missing, then in one transaction place the card, record the
 * pending action and hold its price; after commit, start the action's workflow.
 */
import { log } from '../../src/log';
import { categoryOfConcept, findCategory } from '../../src/domain/catalogue';
import { closeAction } from '../../src/domain/action-states';
import { holdSparks, InsufficientSparks, settleHold } from '../../src/domain/billing';
import { photoPrice, readPriceList } from '../../src/domain/pricing';
import { sqlRow } from '../../src/db/sql';
import { startActionWorkflow } from '../../src/temporal/start-action';
import type { Context } from 'koa';
import type { ActionProduct, ActionType } from '../../src/db/entities/action';
import { claimKey, findReplay, idempotencyHeader, IdempotencyClaim, IdempotentReplay, readIdempotencyKey, recordResponse, StoredResponse } from '../idempotency';
import { badRequest, generationUnavailable, insufficientTokens } from '../errors';
import { resolveProject } from '../grouping';
import { imageReader, storeImages } from '../images';
import { resolveLocale } from '../locale';
import type { Route } from '../route';
import { PhotoRequest, photoRequestSchema } from '../schemas/generate';
import { ref } from '../schemas/shared';
import type { ApiServices, Caller } from '../services';

export const V1_PREFIX = '/api/v1/public';

interface NewAction<R> {
  caller: Caller;
  type: ActionType;
  product: ActionProduct;
  price: number;
  aspectRatio: string;
  projectId?: number;
  projectHints: Parameters<typeof resolveProject>[3];
  params: Record<string, unknown>;
  clientGroupId?: string;
  webhookUrl?: string;
  idempotency?: IdempotencyClaim;
  /** The response body for the placed action (stored with the idempotency key, so repeats get the same). */
  respond(placed: PlacedAction): R;
}

export interface PlacedAction { actionId: number; projectId: number; cardId: number }

/**
 * The shared tail of every v1 generation: claim the idempotency key, record and hold in one transaction, then
 * start the workflow. Answers the response body, or the first response when the key was already used.
 */
export async function submitAction<R>(services: ApiServices, spec: NewAction<R>): Promise<StoredResponse & { replayed?: boolean }> {
  try {
    return await placeAndStart(services, spec);
  } catch (err) {
    if (err instanceof IdempotentReplay) return { ...err.response, replayed: true };
    throw err;
  }
}

async function placeAndStart<R>(services: ApiServices, spec: NewAction<R>): Promise<StoredResponse> {
  const { db, temporal, config } = services;
  const { placed, response } = await db.transaction(async (m) => {
    if (spec.idempotency) await claimKey(m, spec.idempotency);
    const projectId = await resolveProject(m, spec.caller, spec.projectId, spec.projectHints);
    const card = await sqlRow(m,
      `INSERT INTO cards (account_id, project_id, status, content_type, aspect_ratio) VALUES ($1, $2, 'pending', $3, $4) RETURNING id`,
      [spec.caller.accountId, projectId, spec.product === 'video' ? 'video' : 'photo', spec.aspectRatio]);
    const action = await sqlRow(m,
      `INSERT INTO actions (account_id, project_id, card_id, type, product, status, depth, price, params, client_group_id, webhook_url)
       VALUES ($1, $2, $3, $4, $5, 'pending', 0, $6, $7, $8, $9) RETURNING id`,
      [spec.caller.accountId, projectId, card!.id, spec.type, spec.product, spec.price, spec.params, spec.clientGroupId ?? null, spec.webhookUrl ?? null]);
    try {
      await holdSparks(m, spec.caller.accountId, action!.id, spec.price);
    } catch (err) {
      if (err instanceof InsufficientSparks) throw insufficientTokens(err.available, err.required);
      throw err;
    }
    const placed: PlacedAction = { actionId: action!.id, projectId, cardId: card!.id };
    const response: StoredResponse = { status: 200, body: spec.respond(placed) };
    if (spec.idempotency) await recordResponse(m, spec.idempotency, response);
    return { placed, response };
  });

  try {
    await startActionWorkflow(temporal, config.taskQueue, { id: placed.actionId, accountId: spec.caller.accountId, type: spec.type, product: spec.product });
  } catch (err) {
    // Temporal is unreachable: undo the hold and close the action, so nothing stays pending or reserved.
    log.error('could not start action workflow', { actionId: placed.actionId, error: (err as Error).message });
    await db.transaction(async (m) => {
      await settleHold(m, placed.actionId, 'released');
      await closeAction(m, placed.actionId, 'failed', 'Generation was unavailable', ['pending']);
    });
    throw generationUnavailable();
  }
  return response;
}

/** Writes a stored (or fresh) response; a replay is marked so clients can tell. */
export function send(ctx: Context, response: StoredResponse, replayed?: boolean): void {
  ctx.status = response.status;
  ctx.body = response.body;
  if (replayed) ctx.set('Idempotent-Replayed', 'true');
}

export function generateRoutes(services: ApiServices): Route[] {
  const { db, provider } = services;
  const readImage = imageReader(services);
  return [
    {
      method: 'post', path: '/generate/photo', operationId: 'generatePhoto', tag: 'Generation',
      summary: 'Generate a styled product photo from 1-5 reference photos (asynchronous)',
      body: photoRequestSchema,
      headers: [idempotencyHeader],
      responses: {
        200: { description: 'Accepted; the action is pending and its price is held', schema: ref('GenerationResponse') },
        400: { description: '`invalid_request`: an image cannot be read or fetched, or concept_id does not belong to category_id; `upload_not_found`, `upload_expired`' },
        402: { description: '`insufficient_tokens`; details: available, required' },
        409: { description: '`idempotency_conflict`: the Idempotency-Key was used with a different request in the last 5 minutes' },
        403: { description: '`forbidden`: project_id belongs to another account' },
        404: { description: '`not_found`: project_id does not exist' },
        413: { description: '`image_too_large`: an image is over 15 MB decoded' },
        503: { description: '`generation_unavailable`: the workflow could not be started; nothing was held' },
      },
      async handle(ctx, { body }: { body: PhotoRequest }) {
        const caller = ctx.state.caller as Caller;
        const idempotency = readIdempotencyKey(ctx, caller.accountId, 'v1:generate/photo', body);
        const earlier = idempotency && (await findReplay(db, idempotency));
        if (earlier) return send(ctx, earlier, true);
        const locale = resolveLocale(body.locale, ctx.get('Accept-Language'));
        const images = [];
        for (const [index, input] of body.images.entries()) images.push(await readImage(input, `images[${index}]`, caller.accountId));

        let categoryId = body.category_id ?? (body.concept_id ? categoryOfConcept(body.concept_id)?.id : undefined);
        let productName = body.product_name;
        const detected: Record<string, string> = {};
        if (!categoryId || !productName) {
          const analysis = await provider.analyze(images.map((i) => i.bytes), locale);
          if (!categoryId) categoryId = detected.category_id = analysis.category_id;
          if (!productName) productName = detected.product_name = analysis.product_name;
        }
        const category = findCategory(categoryId)!;
        let conceptId = body.concept_id;
        if (!conceptId) conceptId = detected.concept_id = category.concepts[0].id;
        else if (!category.concepts.some((c) => c.id === conceptId)) {
          throw badRequest(`concept_id "${conceptId}" does not belong to category "${categoryId}"`);
        }

        const price = photoPrice(await readPriceList(db.manager), body.resolution);
        const inputs = await storeImages(services, images);
        const response = await submitAction(services, {
          caller, type: 'generate', product: 'photo', price, aspectRatio: body.aspect_ratio, projectId: body.project_id,
          projectHints: { name: productName, productName, categoryId, conceptId },
          params: {
            inputs, productName, categoryId, conceptId, locale,
            photoStyle: body.photo_style, aspectRatio: body.aspect_ratio, resolution: body.resolution, comment: body.comment,
          },
          clientGroupId: body.client_group_id, webhookUrl: body.webhook_url, idempotency,
          respond: (placed) => ({
            action_id: placed.actionId,
            status: 'pending',
            poll_url: `${V1_PREFIX}/status/${placed.actionId}`,
            project_id: placed.projectId,
            card_id: placed.cardId,
            detected: Object.keys(detected).length > 0 ? { category_id: categoryId, concept_id: conceptId, product_name: productName } : null,
          }),
        });
        send(ctx, response, response.replayed);
      },
    },
  ];
}
