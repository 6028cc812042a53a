/**
 * Jobs v2: photo generation and edit as durable jobs with status, phase, polling hints and owner-checked cancel.
 * An unknown, malformed or foreign job id is the same 404 `not_found`.
 */
import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import { type JobRow, jobReader } from '../../src/jobs/store';
import type { EditParams } from '../../src/actions/params';
import { checkAgainInSec, JOB_PHASES, JOB_STATUSES, JOB_TYPES, JobStatus, JobType, TERMINAL_JOB_STATUSES } from '../../src/jobs/lifecycle';
import { readPriceList } from '../../src/billing/pricing';
import { cancelJob } from '../../src/actions/cancel';
import { newVersionOf, submitAction } from '../../src/actions/submit';
import { answerRepeat, send, idempotencyHeader } from '../idempotency';
import { notFound } from '../../src/errors';
import { type Route, UUID, V2_PREFIX } from '../route';
import { PhotoRequest, photoRequestSchema } from '../schemas/generate';
import type { ApiServices } from '../services';
import type { Caller } from '../../src/services';
import { editableSource, generationPreparation } from '../../src/generation/prepare';
import { iso, moneyView } from '../representations';
import { MONEY_FIELDS, MONEY_PROPERTIES } from '../schemas/shared';
import { GENERATION_ERRORS } from '../generation';
import { lastEventId, lastEventIdHeaders, lastEventIdQuery, streamActionEvents } from '../live/event-stream';
import { actionEventStreamResponses } from '../live/event-schemas';


const jobIdPath = { type: 'object', required: ['job_id'], properties: { job_id: { type: 'string', maxLength: 64, description: 'UUID' } } };

const createJobSchema = {
  type: 'object',
  // The money fields are not required here: a replay within the Idempotency-Key window may answer a response stored before they existed.
  required: ['job_id', 'status', 'type', 'status_url', 'cancel_url', 'result_url', 'resource_id', 'first_check_after_sec'],
  properties: {
    job_id: { type: 'string', format: 'uuid' },
    status: { type: 'string', enum: ['queued'] },
    type: { type: 'string', enum: ['generation.execute', 'edit.execute'] },
    status_url: { type: 'string' }, cancel_url: { type: 'string' }, result_url: { type: 'string' },
    resource_id: { type: 'integer', description: 'The action id of the job' },
    first_check_after_sec: { type: 'integer' },
    ...MONEY_PROPERTIES,
  },
};

const jobSchema = {
  type: 'object',
  required: ['job_id', 'type', 'status', 'phase', 'retryable', 'error_code', 'error_message', 'result', 'resource_id', 'created_at', 'started_at', 'completed_at', 'check_again_in_sec', ...MONEY_FIELDS],
  properties: {
    job_id: { type: 'string', format: 'uuid' },
    type: { type: 'string', enum: [...JOB_TYPES] },
    status: { type: 'string', enum: [...JOB_STATUSES] },
    phase: { type: 'string', description: `One of ${JOB_PHASES.join(', ')}; the list can grow` },
    retryable: { type: 'boolean', description: 'Whether sending the same request again could succeed' },
    error_code: { type: ['string', 'null'] },
    error_message: { type: ['string', 'null'] },
    result: {
      type: ['object', 'null'],
      required: ['action_id', 'card_id', 'project_id', 'result_url', 'result_url_expires_at'],
      properties: {
        action_id: { type: 'integer' }, card_id: { type: 'integer' }, project_id: { type: 'integer' },
        result_url: { type: 'string' }, result_url_expires_at: { type: 'string', format: 'date-time' },
      },
    },
    resource_id: { type: 'integer' },
    created_at: { type: 'string', format: 'date-time' },
    started_at: { type: ['string', 'null'], format: 'date-time' },
    completed_at: { type: ['string', 'null'], format: 'date-time' },
    check_again_in_sec: { type: ['integer', 'null'] },
    ...MONEY_PROPERTIES,
  },
};

const notReadySchema = {
  type: 'object', required: ['job_id', 'status', 'message'],
  properties: { job_id: { type: 'string' }, status: { type: 'string' }, message: { type: 'string' }, error_code: { type: ['string', 'null'] } },
};

export function jobRoutes(services: ApiServices): Route[] {
  const { db, signer, providers, liveEvents } = services;
  const kit = generationPreparation(services);
  const readJob = jobReader(db);

  /** The 202 of a new job; its price is held as the answer commits (and a replay answers the same). */
  const createdJob = (jobId: string, type: JobType, actionId: number, kind: 'photo' | 'edit', price: number) => ({
    job_id: jobId, status: 'queued' as const, type,
    status_url: `${V2_PREFIX}/jobs/${jobId}`, cancel_url: `${V2_PREFIX}/jobs/${jobId}/cancel`, result_url: `${V2_PREFIX}/jobs/${jobId}/result`,
    resource_id: actionId, first_check_after_sec: providers.image.typicalSeconds(kind) + 1,
    price, held: price, charged: 0,
  });

  /** The caller's job: unknown, malformed and foreign ids are all the same 404. */
  async function ownJob(ctx: Context, jobId: string): Promise<Readonly<JobRow>> {
    if (!UUID.test(jobId)) throw notFound('Job');
    const row = await readJob(jobId);
    if (!row || row.account_id !== (ctx.state.caller as Caller).accountId) throw notFound('Job');
    return row;
  }

  function jobView(job: Readonly<JobRow>) {
    const signed = job.status === 'succeeded' && job.asset_path ? signer.url(job.asset_path) : undefined;
    return {
      job_id: job.id, type: job.type, status: job.status, phase: job.phase, retryable: job.retryable,
      error_code: job.error_code, error_message: job.error_message,
      result: signed ? {
        action_id: job.action_id, card_id: job.card_id, project_id: job.project_id, result_url: signed.url, result_url_expires_at: signed.expiresAt.toISOString(),
      } : null,
      resource_id: job.action_id, created_at: iso(job.created_at), started_at: iso(job.started_at), completed_at: iso(job.completed_at),
      check_again_in_sec: checkAgainInSec(job, providers.image.typicalSeconds(job.product)),
      ...moneyView(job.price, job),
    };
  }

  return [
    {
      method: 'post', path: '/jobs/generate', operationId: 'createGenerationJob', tag: 'Jobs v2',
      summary: 'Start a photo generation job (the v1 photo body; project_id and inbox grouping do not apply)',
      body: photoRequestSchema,
      bodyImages: 5,
      headers: [idempotencyHeader],
      responses: { 202: { description: 'The job, queued', schema: createJobSchema }, ...GENERATION_ERRORS },
      async handle(ctx, { body }: { body: PhotoRequest }) {
        const caller = ctx.state.caller as Caller;
        const { claim, done } = await answerRepeat(services, ctx, 'v2:generation.execute', body);
        if (done) return;
        const { found, price, params, images } = await kit.preparePhoto(body, caller, ctx.get('Accept-Language'));
        const jobId = randomUUID();
        const response = await submitAction(services, {
          caller, type: 'generate', product: 'photo', price, params, inputs: images, idempotency: claim,
          job: { id: jobId, type: 'generation.execute' }, status: 202,
          placement: kit.newCard({ aspect_ratio: body.aspect_ratio }, found, 'api_v2'),
          clientGroupId: body.client_group_id, webhookUrl: body.webhook_url,
          respond: (placed) => createdJob(jobId, 'generation.execute', placed.actionId, 'photo', price),
        });
        send(ctx, response, response.replayed);
      },
    },
    {
      method: 'post', path: '/jobs/edit', operationId: 'createEditJob', tag: 'Jobs v2',
      summary: 'Start an edit job on a completed action of the account',
      body: {
        type: 'object', required: ['action_id', 'instruction'],
        properties: {
          action_id: { type: 'integer', minimum: 1, maximum: 2147483647 },
          instruction: { type: 'string', minLength: 1, maxLength: 1000 },
          webhook_url: { $ref: 'HttpsUrl' },
        },
      },
      headers: [idempotencyHeader],
      responses: {
        202: { description: 'The job, queued', schema: createJobSchema },
        402: GENERATION_ERRORS[402],
        403: { description: '`forbidden`: the action belongs to another account' },
        404: { description: '`not_found`: the action does not exist' },
        409: { description: '`action_not_completed`, `edit_depth_exceeded`, or `idempotency_conflict`' },
      },
      async handle(ctx, { body }: { body: { action_id: number; instruction: string; webhook_url?: string } }) {
        const caller = ctx.state.caller as Caller;
        const { claim, done } = await answerRepeat(services, ctx, 'v2:edit.execute', body);
        if (done) return;
        const source = await editableSource(services, caller, body.action_id);
        const params: EditParams = { source: source.assetPath!, instruction: body.instruction };
        const jobId = randomUUID();
        const { improvement } = await readPriceList(db);
        const response = await submitAction(services, {
          caller, type: 'edit', product: 'edit', price: improvement, params, idempotency: claim,
          job: { id: jobId, type: 'edit.execute' }, status: 202, webhookUrl: body.webhook_url, clientGroupId: source.clientGroupId ?? undefined,
          placement: newVersionOf(source),
          respond: (placed) => createdJob(jobId, 'edit.execute', placed.actionId, 'edit', improvement),
        });
        send(ctx, response, response.replayed);
      },
    },
    {
      method: 'get', path: '/jobs/{job_id}', operationId: 'getJob', tag: 'Jobs v2', summary: 'A job: status, phase, result and polling hint',
      params: jobIdPath,
      responses: { 200: { description: 'The job', schema: jobSchema }, 404: { description: '`not_found`: unknown, malformed or another account\'s job id' } },
      async handle(ctx, { params }) {
        ctx.body = jobView(await ownJob(ctx, params.job_id));
      },
    },
    {
      method: 'get', path: '/jobs/{job_id}/events', operationId: 'streamJobEvents', tag: 'Jobs v2',
      summary: 'Live progress of a job as Server-Sent Events, from the start or after `Last-Event-ID`; the final event ends the stream',
      params: jobIdPath,
      query: lastEventIdQuery,
      headers: lastEventIdHeaders,
      responses: actionEventStreamResponses('v2'),
      async handle(ctx, { params, query }) {
        const job = await ownJob(ctx, params.job_id);
        const after = lastEventId(ctx, query.last_event_id);
        await streamActionEvents(ctx, { db, liveEvents }, job.action_id, after, async (event) => {
          // The action's first event, written before its job row in the same transaction, is not the job's.
          if (event.job_status === null) return null;
          const status = event.job_status;
          const final = TERMINAL_JOB_STATUSES.includes(status as JobStatus);
          const ended = final ? (await readJob(job.id))! : undefined;
          const view = ended ? jobView(ended) : undefined;
          return {
            event: final ? status : 'progress',
            final,
            data: {
              job_id: job.id, status, phase: event.phase, attempt: event.attempt, provider: event.provider,
              percent: event.percent, at: event.created_at.toISOString(),
              ...(view ? {
                result_url: view.result?.result_url ?? null, result_url_expires_at: view.result?.result_url_expires_at ?? null,
                error_code: view.error_code, error_message: view.error_message, retryable: view.retryable,
              } : {}),
            },
          };
        });
      },
    },
    {
      method: 'post', path: '/jobs/{job_id}/cancel', operationId: 'cancelJob', tag: 'Jobs v2',
      summary: 'Cancel a job: at once when it is not running, at its next safe point when it is',
      params: jobIdPath,
      responses: {
        200: {
          description: 'The cancel result',
          schema: {
            type: 'object', required: ['job_id', 'status', 'cancelled', 'message'],
            properties: { job_id: { type: 'string' }, status: { type: 'string', enum: [...JOB_STATUSES] }, cancelled: { type: 'boolean' }, message: { type: 'string' } },
          },
        },
        404: { description: '`not_found`' },
      },
      async handle(ctx, { params }) {
        const job = await ownJob(ctx, params.job_id);
        ctx.body = { job_id: job.id, ...(await cancelJob(services, job)) };
      },
    },
    {
      method: 'get', path: '/jobs/{job_id}/result', operationId: 'getJobResult', tag: 'Jobs v2',
      summary: 'Redirect to the signed result URL when the job succeeded',
      params: jobIdPath,
      responses: {
        202: { description: 'Not ready yet: `status` and `message` (and `Retry-After`)', schema: notReadySchema },
        302: { description: 'Redirect to the signed result URL', headers: { Location: { description: 'Signed asset URL', schema: { type: 'string' } } } },
        404: { description: '`not_found`' },
        409: { description: 'The job ended without a result: `status`, `message`, `error_code`', schema: notReadySchema },
      },
      async handle(ctx, { params }) {
        const job = await ownJob(ctx, params.job_id);
        if (job.status === 'succeeded' && job.asset_path) return ctx.redirect(signer.url(job.asset_path).url);
        if (TERMINAL_JOB_STATUSES.includes(job.status)) {
          ctx.status = 409;
          ctx.body = { job_id: job.id, status: job.status, message: job.error_message ?? `The job ended as ${job.status}`, error_code: job.error_code };
          return;
        }
        const wait = checkAgainInSec(job, providers.image.typicalSeconds(job.product)) ?? 1;
        ctx.status = 202;
        ctx.set('Retry-After', String(wait));
        ctx.body = { job_id: job.id, status: job.status, message: `The result is not ready yet (${job.status}, ${job.phase})`, error_code: null };
      },
    },
  ];
}
