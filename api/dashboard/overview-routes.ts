/**
 * The dashboard's overview of the account: its sparks, today's helper calls against the free limit, and its latest
 * actions and jobs, as one answer and as a live stream that sends the overview again whenever it changes (woken by
 * the live-progress hub when any action of the account moves).
 */
import { latestActions, type LatestActionRow } from '../../src/actions/store';
import { readBalance } from '../../src/billing/sparks';
import { readHelperUsage } from '../../src/helper-usage/usage';
import type { Route } from '../route';
import type { ApiServices } from '../services';
import { iso } from '../representations';
import { streamSnapshots } from '../live/snapshot-stream';
import { DASHBOARD_STREAMS_PER_USER } from '../live/action-event-hub';
import { dashboardRoute } from './session-guard';

/** Actions the overview lists. */
export const LATEST_ACTIONS = 10;
/**
 * An overview stream ends after this long and the page reconnects through the session guard, so a stream outlives
 * a sign-out (or a removal from the account) by this much at most.
 */
export const OVERVIEW_STREAM_SECONDS = 60;
/** An overview stream reads the account at most this often, however busy the account is. */
const OVERVIEW_MIN_INTERVAL_MS = 1_000;

const nullable = (type: string) => ({ type: [type, 'null'] });
const overviewSchema = {
  type: 'object', required: ['balance', 'available', 'held', 'helpers', 'latest'],
  properties: {
    balance: { type: 'integer' }, available: { type: 'integer' }, held: { type: 'integer' },
    helpers: {
      type: 'object', required: ['used_today', 'free_limit'],
      properties: { used_today: { type: 'integer' }, free_limit: { type: 'integer' } },
    },
    latest: {
      type: 'array', maxItems: LATEST_ACTIONS,
      items: {
        type: 'object', required: ['id', 'type', 'status', 'percent', 'product_name', 'job_id', 'phase', 'created_at', 'completed_at'],
        properties: {
          id: { type: 'integer' }, type: { type: 'string' }, status: { type: 'string' }, percent: nullable('integer'),
          product_name: nullable('string'), job_id: { type: ['string', 'null'], format: 'uuid' }, phase: nullable('string'),
          created_at: { type: 'string', format: 'date-time' }, completed_at: { type: ['string', 'null'], format: 'date-time' },
        },
      },
    },
  },
};

const latestView = ({ job_status: _, ...a }: LatestActionRow) => ({ ...a, created_at: iso(a.created_at), completed_at: iso(a.completed_at) });

export function overviewRoutes({ db, liveEvents }: ApiServices): Route[] {
  async function overview(accountId: number) {
    const [{ balance, available, holds }, helpers, latest] = await Promise.all([
      readBalance(db, accountId), readHelperUsage(db.manager, accountId), latestActions(db, accountId, LATEST_ACTIONS),
    ]);
    return {
      balance, available, held: holds, helpers: { used_today: helpers.used_today, free_limit: helpers.free_limit }, latest: latest.map(latestView),
    };
  }

  /**
   * The overview for a stream: the hub wakes every stream of an account in one synchronous loop, so reads asked for
   * in the same turn of the event loop share one (every one of them begun after the wake), however many streams
   * the account has open; the next turn reads afresh.
   */
  const readsThisTurn = new Map<number, ReturnType<typeof overview>>();
  function sharedOverview(accountId: number) {
    let read = readsThisTurn.get(accountId);
    if (!read) {
      read = overview(accountId);
      readsThisTurn.set(accountId, read);
      setImmediate(() => readsThisTurn.delete(accountId));
    }
    return read;
  }

  return [
    dashboardRoute({
      method: 'get', path: '/overview', operationId: 'overview', access: 'member',
      summary: 'The account\'s sparks, today\'s helper calls and its latest actions and jobs',
      responses: { 200: { description: 'The overview', schema: overviewSchema } },
      async handle(ctx, { user }) {
        ctx.body = await overview(user.accountId);
      },
    }),
    dashboardRoute({
      method: 'get', path: '/overview/events', operationId: 'overviewEvents', access: 'member',
      summary: `The overview as Server-Sent Events: an \`overview\` event at once and whenever it changes; ends after ${OVERVIEW_STREAM_SECONDS} s (reconnect)`,
      responses: {
        200: { description: '`text/event-stream`' },
        429: { description: `\`too_many_streams\`: this user holds ${DASHBOARD_STREAMS_PER_USER} dashboard streams open in this process` },
      },
      async handle(ctx, { user }) {
        await streamSnapshots(ctx, {
          event: 'overview',
          subscribe: (subscriber) => liveEvents.subscribeAccount(user.accountId, user.userId, subscriber),
          read: () => sharedOverview(user.accountId),
          heartbeatSeconds: liveEvents.limits.heartbeatSeconds,
          maxSeconds: Math.min(OVERVIEW_STREAM_SECONDS, liveEvents.limits.maxSeconds),
          minIntervalMs: OVERVIEW_MIN_INTERVAL_MS,
        });
      },
    }),
  ];
}
