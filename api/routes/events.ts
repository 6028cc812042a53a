/**
 * The account event feed, v1 (`/events`: actions, with `action_id`) and v2 (`/events`: jobs, with `job_id`): every
 * state change and each webhook delivery's outcome, in transaction order, paged by an opaque cursor. For reconciling
 * what webhooks missed (src/events/feed.ts).
 */
import { FEED_DEFAULT_LIMIT, FEED_MAX_LIMIT, FEED_RETENTION_DAYS, type FeedVersion, readFeed } from '../../src/events/feed';
import type { Caller } from '../../src/services';
import type { Route } from '../route';
import type { ApiServices } from '../services';

const nullableString = { type: ['string', 'null'] };

function eventSchema(version: FeedVersion) {
  const subject = version === 'v1'
    ? { action_id: { type: 'integer' }, job_id: { ...nullableString, description: 'The v2 job of the action, if any' } }
    : { job_id: { type: 'string', format: 'uuid' }, phase: { ...nullableString, description: 'The job\'s phase (job events)' } };
  return {
    type: 'object',
    required: ['cursor', 'type', version === 'v1' ? 'action_id' : 'job_id', 'status', 'created_at'],
    properties: {
      cursor: { type: 'string', description: 'This event\'s position: `after` it to go on from here' },
      type: {
        type: 'string',
        description: version === 'v1'
          ? '`action.<status>` (`action.pending`, `action.processing`, `action.completed`, ...) or `webhook.<outcome>` (`webhook.succeeded`, `webhook.failed`, `webhook.skipped`)'
          : '`job.<status>` (`job.queued`, `job.running`, `job.retry_scheduled`, `job.succeeded`, ...; a change of phase too) or `webhook.<outcome>`',
      },
      ...subject,
      status: { type: 'string', description: version === 'v1' ? 'The action\'s status, or the delivery\'s outcome' : 'The job\'s status, or the delivery\'s outcome' },
      seq: { type: 'integer', description: 'Action and job events: the change\'s number within its action (the highest is the latest)' },
      delivery_id: { type: 'string', format: 'uuid', description: 'Webhook events: the delivery (`X-Service-Job-Id`)' },
      webhook_event: { type: 'string', description: 'Webhook events: the event delivered (`generation.completed`, ...)' },
      created_at: { type: 'string', format: 'date-time' },
    },
  };
}

export function eventFeedRoutes({ db }: ApiServices, version: FeedVersion): Route[] {
  const subject = version === 'v1' ? 'actions' : 'jobs';
  return [
    {
      method: 'get', path: '/events', operationId: version === 'v1' ? 'listAccountEvents' : 'listJobEvents',
      tag: version === 'v1' ? 'Status and results' : 'Jobs v2',
      summary: `The account's event feed: every change of its ${subject} and each webhook delivery's outcome, in order, after a cursor`,
      query: {
        type: 'object',
        properties: {
          after: { type: 'string', maxLength: 64, description: 'A cursor from an earlier answer (`next_cursor`, or an event\'s `cursor`); none: from the oldest event kept' },
          limit: { type: 'integer', minimum: 1, maximum: FEED_MAX_LIMIT, default: FEED_DEFAULT_LIMIT },
        },
      },
      responses: {
        200: {
          description: `Events in the order of their transactions (those of one transaction together), kept ${FEED_RETENTION_DAYS} days. `
            + 'An event appears once its transaction and every older one have committed, so a cursor never misses one; two changes of one '
            + 'action may come in the other order (a transaction is ordered by its first write, not its commit): its `seq` says which is later. '
            + '`next_cursor` is the last event\'s or, when none came, a later position that skips nothing: ask again with it.',
          schema: {
            type: 'object', required: ['events', 'next_cursor'],
            properties: { events: { type: 'array', items: eventSchema(version) }, next_cursor: { type: 'string' } },
          },
        },
        410: { description: `\`cursor_expired\`: the cursor is older than the feed's ${FEED_RETENTION_DAYS} days; \`details.oldest_cursor\` is where it goes on` },
        422: { description: '`after` is not a cursor of this feed, or `limit` is not 1-500' },
      },
      async handle(ctx, { query }: { query: { after?: string; limit: number } }) {
        ctx.body = await readFeed(db, version, (ctx.state.caller as Caller).accountId, query.after, query.limit);
      },
    },
  ];
}
