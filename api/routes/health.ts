import { readinessProbe } from '../readiness';
import type { Route } from '../route';
import type { ApiServices } from '../services';

const state = { type: 'string', enum: ['ok', 'unavailable'] };
const checkSchema = {
  type: 'object',
  required: ['status'],
  properties: {
    status: { type: 'string', enum: ['ok', 'ready', 'unavailable'] },
    checks: { type: 'object', properties: { database: state, temporal: state, storage: state } },
  },
};

/**
 * Liveness (the process answers) and readiness (Postgres, Temporal and the object store answer). No
 * authentication, so readiness answers words only and probes at most once every couple of seconds (see readiness.ts).
 */
export function healthRoutes({ db, temporal, store }: ApiServices): Route[] {
  const readiness = readinessProbe({ db, temporal, store });
  return [
    {
      method: 'get', path: '/healthz', operationId: 'getHealth', tag: 'Operations', summary: 'Liveness: the process answers',
      responses: { 200: { description: 'Alive', schema: checkSchema } },
      async handle(ctx) {
        ctx.body = { status: 'ok' };
      },
    },
    {
      method: 'get', path: '/readyz', operationId: 'getReadiness', tag: 'Operations', summary: 'Readiness: database, Temporal and object store reachable',
      responses: { 200: { description: 'Ready', schema: checkSchema }, 503: { description: 'A dependency does not answer', schema: checkSchema } },
      async handle(ctx) {
        const { ready, checks } = await readiness();
        ctx.status = ready ? 200 : 503;
        ctx.set('Cache-Control', 'no-store');
        ctx.body = { status: ready ? 'ready' : 'unavailable', checks };
      },
    },
  ];
}
