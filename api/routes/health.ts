import type { Route } from '../route';
import type { ApiServices } from '../services';

const checkSchema = {
  type: 'object',
  required: ['status'],
  properties: {
    status: { type: 'string', enum: ['ok', 'ready', 'unavailable'] },
    checks: { type: 'object', properties: { database: { type: 'string' }, temporal: { type: 'string' } } },
  },
};

async function probe(check: () => Promise<unknown>): Promise<string> {
  try {
    await Promise.race([check(), new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000).unref())]);
    return 'ok';
  } catch (err) {
    return `unavailable: ${(err as Error).message.split('\n')[0].slice(0, 200)}`;
  }
}

/** Liveness (the process answers) and readiness (Postgres and Temporal answer). No authentication. */
export function healthRoutes({ db, temporal }: ApiServices): Route[] {
  return [
    {
      method: 'get', path: '/healthz', operationId: 'getHealth', tag: 'Operations', summary: 'Liveness: the process answers',
      responses: { 200: { description: 'Alive', schema: checkSchema } },
      async handle(ctx) {
        ctx.body = { status: 'ok' };
      },
    },
    {
      method: 'get', path: '/readyz', operationId: 'getReadiness', tag: 'Operations', summary: 'Readiness: database and Temporal reachable',
      responses: { 200: { description: 'Ready', schema: checkSchema }, 503: { description: 'A dependency does not answer', schema: checkSchema } },
      async handle(ctx) {
        const [database, temporalCheck] = await Promise.all([
          probe(() => db.query('SELECT 1')),
          probe(() => temporal.connection.workflowService.getSystemInfo({})),
        ]);
        const ready = database === 'ok' && temporalCheck === 'ok';
        ctx.status = ready ? 200 : 503;
        ctx.body = { status: ready ? 'ready' : 'unavailable', checks: { database, temporal: temporalCheck } };
      },
    },
  ];
}
