/**
 * Funnel sessions: a guided card flow. `POST /funnels` recognises the product, asks the survey questions and
 * starts the session's workflow; ideas and setup are updates of that workflow; generate places and holds a card
 * like `/generate/card` does (submitAction) and claims the session's card in the same transaction; GET reads the
 * read model.
 */
import { findAction, loadAction } from '../../src/actions/store';
import { claimFunnelCard, expireFunnel, insertFunnel, readFunnel } from '../../src/funnels/store';
import type { CardParams } from '../../src/actions/params';
import { findCategory } from '../../src/generation/catalogue';
import {
  DEFAULT_FUNNEL_IDLE_TIMEOUT_SECONDS, FUNNEL_REFUSALS, FunnelIdea, FunnelProduct, FunnelRow, FunnelSetup, MAX_FUNNEL_IDEAS,
} from '../../src/funnels/session';
import { priceOf, readPriceList } from '../../src/billing/pricing';
import { log } from '../../src/log';
import type { SurveyQuestion } from '../../src/providers/provider';
import { FUNNEL_UPDATES } from '../../src/temporal/contract';
import { startFunnelWorkflow } from '../../src/temporal/starts';
import { askFunnel } from '../../src/funnels/steps';
import { submitAction } from '../../src/actions/submit';
import { requireProvider, textFor } from '../../src/providers';
import { send, idempotencyHeader, answerRepeat } from '../idempotency';
import { analyzeProduct, askTextProvider } from '../../src/generation/ask-text-provider';
import { AppError, forbidden, generationUnavailable, notFound, unsupportedParameter } from '../../src/errors';
import { insertProject } from '../../src/projects/grouping';
import { inputKeys, storeInputs } from '../../src/generation/images';
import { resolveLocale } from '../../src/locale';
import type { Route, RouteResponse } from '../route';
import {
  FunnelGenerateRequest, funnelGenerateSchema, funnelIdeaResponse, funnelIdPath, funnelResponse, FunnelSetupRequest, funnelSetupSchema,
  StartFunnelRequest, startFunnelSchema,
} from '../schemas/funnels';
import { ref } from '../schemas/shared';
import type { ApiServices } from '../services';
import type { Caller } from '../../src/services';
import { GENERATION_ERRORS, generationResponse } from '../generation';
import { generationPreparation } from '../../src/generation/prepare';

/** How long a generate's answer waits for the session workflow to note its card (the card is committed already). */
const RECORD_CARD_DEADLINE_MS = 5_000;

const TAG = 'Funnels';

const OWN: Record<number, RouteResponse> = {
  403: { description: '`forbidden`: the session belongs to another account' },
  404: { description: '`not_found`: no such session' },
};
const STEP_REFUSED: RouteResponse = {
  description: '`funnel_expired`: the session ended idle; `funnel_generated`: its card was started, ideas and setup are closed',
};

const refused = (code: string, message: string, details?: Record<string, unknown>) => new AppError(409, code, message, details);

export function funnelRoutes(services: ApiServices): Route[] {
  const { db, providers, signer, temporal, config } = services;
  const { readImage, readImages } = generationPreparation(services);

  async function ownFunnel(id: number, caller: Caller): Promise<FunnelRow> {
    const row = await readFunnel(db.manager, id);
    if (!row) throw notFound(`Funnel ${id}`);
    if (row.account_id !== caller.accountId) throw forbidden(`Funnel ${id}`);
    return row;
  }

  /** Ideas and setup are taken only while the session is open. */
  function beforeCard(funnel: FunnelRow): void {
    if (funnel.status === 'expired') throw refused(FUNNEL_REFUSALS.expired, 'The session has ended; it only answers GET');
    if (funnel.status === 'generated') throw refused(FUNNEL_REFUSALS.generated, 'The card of this session has already been started');
  }

  /** The aggregate GET serves; the card's status and a fresh signed URL come from its action. */
  async function view(funnel: FunnelRow) {
    const action = funnel.action_id ? await findAction(db.manager, funnel.action_id) : null;
    const signed = action?.status === 'completed' && action.assetPath ? signer.url(action.assetPath) : undefined;
    const setup = funnel.setup;
    return {
      funnel_id: funnel.id,
      status: funnel.status,
      project_id: funnel.project_id,
      locale: funnel.locale,
      product: funnel.product,
      questions: funnel.questions,
      ideas: funnel.ideas,
      max_ideas: MAX_FUNNEL_IDEAS,
      setup: setup && {
        aspect_ratio: setup.aspect_ratio, style: setup.style, creativity: setup.creativity, design_key: setup.design_key ?? null,
        references: (['design', 'model', 'environment'] as const).filter((kind) => setup[`${kind}_reference`]),
      },
      answers: funnel.answers,
      chosen_idea_id: funnel.chosen_idea_id,
      card: action && {
        action_id: action.id, card_id: action.cardId, status: action.status,
        result_url: signed?.url ?? null, result_url_expires_at: signed?.expiresAt.toISOString() ?? null, error_message: action.errorMessage,
      },
      created_at: funnel.created_at.toISOString(),
      updated_at: funnel.updated_at.toISOString(),
      ended_at: funnel.ended_at?.toISOString() ?? null,
    };
  }

  const reread = async (id: number, caller: Caller) => view(await ownFunnel(id, caller));

  /** The survey questions, held to the contract whatever the provider said (else 500 `analysis_failed`). */
  async function surveyQuestions(caller: Caller, images: Buffer[], product: FunnelProduct, locale: FunnelRow['locale']): Promise<SurveyQuestion[]> {
    const questions = await askTextProvider('analysis_failed', (signal) => textFor(providers, caller).surveyQuestions({
      images, productName: product.product_name, categoryId: product.category_id, qualities: product.qualities, locale,
    }, signal));
    const ids = new Set((questions ?? []).map((q) => q?.id));
    if (!Array.isArray(questions) || questions.length < 3 || questions.length > 5 || ids.size !== questions.length) {
      log.warn('the text provider answered survey questions outside the contract', { questions });
      throw new AppError(500, 'analysis_failed', 'The text provider answered survey questions outside the contract');
    }
    return questions;
  }

  /** Checks the answers against the session's questions: known ids, a choice of a `single`, choices of a `multiple`. */
  function checkAnswers(answers: Record<string, string | string[]>, questions: SurveyQuestion[]): void {
    for (const [id, answer] of Object.entries(answers)) {
      const question = questions.find((q) => q.id === id);
      if (!question) throw new AppError(400, 'unknown_question', `The session has no question "${id}"`, { question_id: id });
      const ok = question.kind === 'multiple'
        ? Array.isArray(answer) && answer.every((a) => question.choices?.includes(a))
        : typeof answer === 'string' && (question.kind === 'text' || Boolean(question.choices?.includes(answer)));
      if (!ok) throw new AppError(400, 'invalid_answer', `The answer to "${id}" is not ${question.kind === 'text' ? 'a text' : 'among its choices'}`, { question_id: id });
    }
  }

  /** The card's text: the chosen idea, the free-text answers, then the qualities (the card's default text). */
  function cardText(funnel: FunnelRow, idea: FunnelIdea | undefined, answers: Record<string, string | string[]>): string {
    const said = funnel.questions.filter((q) => q.kind === 'text' && typeof answers[q.id] === 'string').map((q) => answers[q.id] as string);
    return [idea?.title, ...said, ...funnel.product.qualities].filter(Boolean).join('\n').slice(0, 5000);
  }

  return [
    {
      method: 'post', path: '/funnels', operationId: 'startFunnel', tag: TAG,
      summary: 'Funnel step 1: upload 1-5 photos; the product is recognised and the session answers its facts and survey questions',
      body: startFunnelSchema,
      bodyImages: 5,
      responses: {
        201: { description: 'The session (status `open`), its workflow started', schema: funnelResponse },
        400: GENERATION_ERRORS[400],
        413: GENERATION_ERRORS[413],
        500: { description: '`analysis_failed`: the text provider failed or answered outside the contract; nothing was kept' },
        503: { description: '`generation_unavailable`: the text provider is not configured, or the session could not be started' },
      },
      async handle(ctx, { body }: { body: StartFunnelRequest }) {
        const caller = ctx.state.caller as Caller;
        requireProvider(services, 'text', caller);
        const locale = resolveLocale(body.locale, ctx.get('Accept-Language'));
        const images = await readImages(body.images, 'images', caller);
        const bytes = images.map((i) => i.bytes);
        const analysis = await analyzeProduct(textFor(providers, caller), bytes, locale);
        const categoryId = body.category_id ?? analysis.category_id;
        const product: FunnelProduct = {
          category_id: categoryId,
          concept_suggestions: ['infographic', ...(findCategory(categoryId)?.concepts.map((c) => c.id) ?? [])],
          product_name: body.product_name ?? analysis.product_name,
          qualities: analysis.qualities,
        };
        const questions = await surveyQuestions(caller, bytes, product, locale);
        const funnelId = await db.transaction(async (m) => {
          const projectId = await insertProject(m, caller, {
            name: product.product_name, productName: product.product_name, categoryId, conceptId: null,
          }, 'api');
          return insertFunnel(m, { accountId: caller.accountId, projectId, locale, inputs: inputKeys(images), product, questions });
        });
        try {
          await storeInputs(services, images);
          await startFunnelWorkflow(temporal, config.taskQueue, {
            funnelId, accountId: caller.accountId, idleTimeoutSeconds: config.funnelIdleTimeoutSeconds ?? DEFAULT_FUNNEL_IDLE_TIMEOUT_SECONDS,
          });
        } catch (err) {
          log.error('could not store the inputs or start the funnel workflow', { funnelId, error: (err as Error).message });
          await expireFunnel(db, funnelId).catch(() => undefined);
          throw generationUnavailable();
        }
        ctx.status = 201;
        ctx.body = await reread(funnelId, caller);
      },
    },
    {
      method: 'get', path: '/funnels/{funnel_id}', operationId: 'getFunnel', tag: TAG,
      summary: 'The session: product, questions, idea pool, setup, answers, and its card with a fresh result_url when completed',
      params: funnelIdPath,
      responses: { 200: { description: 'The session', schema: funnelResponse }, ...OWN },
      async handle(ctx, { params }) {
        ctx.body = await reread(params.funnel_id, ctx.state.caller);
      },
    },
    {
      method: 'post', path: '/funnels/{funnel_id}/idea', operationId: 'addFunnelIdea', tag: TAG,
      summary: `Funnel step 2 (optional, repeatable): one more idea into the pool, different from those in it (at most ${MAX_FUNNEL_IDEAS})`,
      params: funnelIdPath,
      responses: {
        200: { description: 'The new idea', schema: funnelIdeaResponse },
        ...OWN,
        409: { description: `${STEP_REFUSED.description}; \`idea_limit_reached\`: the pool holds ${MAX_FUNNEL_IDEAS} ideas` },
        500: { description: '`idea_failed`: the text provider failed; the pool is unchanged' },
        503: { description: '`generation_unavailable`: the text provider is not configured' },
      },
      async handle(ctx, { params }) {
        const funnel = await ownFunnel(params.funnel_id, ctx.state.caller);
        beforeCard(funnel);
        requireProvider(services, 'text', ctx.state.caller);
        const idea = await askFunnel(temporal, funnel.id, FUNNEL_UPDATES.addIdea, []);
        ctx.body = { funnel_id: funnel.id, idea, ideas_count: Number(idea.id.slice('idea_'.length)), max_ideas: MAX_FUNNEL_IDEAS };
      },
    },
    {
      method: 'post', path: '/funnels/{funnel_id}/setup', operationId: 'setFunnelSetup', tag: TAG,
      summary: 'Funnel step 3 (optional, repeatable until generate): aspect ratio, style, design / model / environment references',
      params: funnelIdPath,
      body: funnelSetupSchema,
      bodyImages: 3,
      responses: {
        200: { description: 'The session with its setup', schema: funnelResponse },
        ...OWN,
        400: { description: `${GENERATION_ERRORS[400].description}; \`unsupported_parameter\`: design_key or design_reference_image with style cinematic` },
        409: STEP_REFUSED,
        413: GENERATION_ERRORS[413],
      },
      async handle(ctx, { params, body }: { params: { funnel_id: number }; body: FunnelSetupRequest }) {
        if (body.style === 'cinematic') {
          if (body.design_key !== undefined) throw unsupportedParameter('design_key is only supported with style infographic');
          if (body.design_reference_image !== undefined) throw unsupportedParameter('design_reference_image is only supported with style infographic');
        }
        const caller = ctx.state.caller as Caller;
        const funnel = await ownFunnel(params.funnel_id, caller);
        beforeCard(funnel);
        const references = {
          design: body.design_reference_image, model: body.model_reference_image, environment: body.environment_reference_image,
        };
        const setup: FunnelSetup = { aspect_ratio: body.aspect_ratio, style: body.style, creativity: body.style === 'infographic' ? body.creativity : 0 };
        if (body.design_key !== undefined) setup.design_key = body.design_key;
        for (const [kind, input] of Object.entries(references)) {
          if (!input) continue;
          const image = await readImage(input, `${kind}_reference_image`, caller.accountId);
          await storeInputs(services, [image]);
          setup[`${kind as keyof typeof references}_reference`] = inputKeys([image])[0];
        }
        await askFunnel(temporal, funnel.id, FUNNEL_UPDATES.applySetup, [setup]);
        ctx.body = await reread(funnel.id, caller);
      },
    },
    {
      method: 'post', path: '/funnels/{funnel_id}/generate', operationId: 'generateFunnelCard', tag: TAG,
      summary: 'Funnel step 4: generate the card (asynchronous, charged like POST /generate/card); body optional',
      params: funnelIdPath,
      body: funnelGenerateSchema,
      headers: [idempotencyHeader],
      responses: {
        200: {
          description: 'Accepted; the card\'s action is pending in the session\'s project and its price is held',
          schema: { allOf: [ref('GenerationResponse'), { type: 'object', required: ['funnel_id', 'style'], properties: { funnel_id: { type: 'integer' }, style: { type: 'string', enum: ['infographic', 'cinematic'] } } }] },
        },
        ...OWN,
        400: { description: '`unknown_idea`: idea_id is not in the pool; `unknown_question`, `invalid_answer`: an answer does not fit the questions' },
        402: GENERATION_ERRORS[402],
        409: {
          description: '`funnel_expired`: the session ended idle; `card_in_progress`: its card is pending or processing (details.action_id); '
            + '`card_completed`: its card is done (details.action_id; make a new version with POST /edit/{action_id}); `idempotency_conflict`',
        },
        503: GENERATION_ERRORS[503],
      },
      async handle(ctx, { params, body }: { params: { funnel_id: number }; body: FunnelGenerateRequest }) {
        const caller = ctx.state.caller as Caller;
        const funnel = await ownFunnel(params.funnel_id, caller);
        const { claim, done } = await answerRepeat(services, ctx, `v1:funnels/${funnel.id}/generate`, body);
        if (done) return;
        if (funnel.status === 'expired') throw refused(FUNNEL_REFUSALS.expired, 'The session has ended; it only answers GET');
        if (funnel.action_id) {
          const card = await loadAction(db.manager, funnel.action_id);
          if (card.status === 'completed') {
            throw refused('card_completed', `The session's card is done; make a new version with POST /edit/${card.id}`, { action_id: card.id });
          }
          if (card.status === 'pending' || card.status === 'processing') {
            throw refused('card_in_progress', 'The session\'s card is being generated', { action_id: card.id });
          }
        }
        const idea = body.idea_id ? funnel.ideas.find((i) => i.id === body.idea_id) : undefined;
        if (body.idea_id && !idea) throw new AppError(400, 'unknown_idea', `The idea pool has no ${body.idea_id}`, { idea_id: body.idea_id });
        const answers = body.answers ?? {};
        checkAnswers(answers, funnel.questions);

        const setup = funnel.setup;
        const style = setup?.style ?? idea?.style ?? 'infographic';
        const product = funnel.product;
        const cardParams: CardParams = {
          inputs: funnel.inputs, designReference: style === 'infographic' ? setup?.design_reference : undefined,
          productName: product.product_name, categoryId: product.category_id, conceptId: idea?.concept_id ?? 'infographic',
          userText: cardText(funnel, idea, answers), style, designKey: style === 'infographic' ? setup?.design_key : undefined,
          creativity: style === 'infographic' ? setup?.creativity ?? 0.5 : 0, aspectRatio: setup?.aspect_ratio ?? '3:4', locale: funnel.locale,
        };
        const response = await submitAction(services, {
          caller, type: 'generate', product: 'card', price: priceOf(await readPriceList(db), { product: 'card' }), params: cardParams, idempotency: claim,
          placement: {
            kind: 'new-card', projectId: funnel.project_id, aspectRatio: cardParams.aspectRatio, contentType: 'photo',
            hints: { name: product.product_name, productName: product.product_name, categoryId: product.category_id, conceptId: cardParams.conceptId },
          },
          clientGroupId: body.client_group_id, webhookUrl: body.webhook_url,
          // The card is the session's only if no other generate claimed it first: a duplicate rolls back, hold and all.
          async alsoRecord(m, placed) {
            const claim = await claimFunnelCard(m, {
              funnelId: funnel.id, actionId: placed.actionId, answers, ideaId: idea?.id ?? null, cardsStarted: funnel.cards_started,
            });
            if (claim === 'expired') throw refused('funnel_expired', 'The session has ended; it only answers GET');
            if (claim === 'taken') throw refused('card_in_progress', 'Another generate of this session came first', {});
          },
          respond: (placed) => ({ ...generationResponse(placed, null), funnel_id: funnel.id, style }),
        });
        const actionId = (response.body as { action_id: number }).action_id;
        // The read model already holds the card (and the money is settled): the workflow learns it to close ideas
        // and setup and reset its timer, but the answer does not wait long for it (no worker: the read model rules).
        await askFunnel(temporal, funnel.id, FUNNEL_UPDATES.recordCard, [{ actionId }], RECORD_CARD_DEADLINE_MS)
          .catch((err) => log.warn('the funnel workflow could not record its card', { funnelId: funnel.id, actionId, error: String(err) }));
        send(ctx, response, response.replayed);
      },
    },
  ];
}
