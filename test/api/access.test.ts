/**
 * Access across accounts, route by route: every route that takes a resource id is called with account B's key on
 * account A's resources. v1 answers 403 `forbidden`, v2 404 (a job of another account does not exist for it); no
 * answer carries A's data, nothing of A's changes, and nothing is charged to anyone. A route added with an id in
 * its path and no case here fails the test, so the matrix stays whole.
 */
import assert from 'node:assert/strict';
import { routeGroups } from '../../api/app';
import { actionWorkflowId, batchWorkflowId, jobWorkflowId } from '../../src/temporal/contract';
import { apiClient, eventually, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { startHttpsServer, TestHttpsServer } from '../support/https-server';
import { Stack, startStack } from '../support/stack';

const V2 = '/api/v2';
const SECRET_NAME = 'A-secret-project-name';

describe('access across accounts: every route with a resource id', function () {
  this.timeout(120_000);
  let stack: Stack;
  let receiver: TestHttpsServer;
  before(async () => {
    stack = await startStack();
    receiver = await startHttpsServer((_req, res) => void res.writeHead(204).end());
  });
  after(async () => {
    await receiver.close();
    await stack.stop();
  });

  it('answers 403 (v1) or 404 (v2) to another account, leaks nothing, changes nothing, charges nothing', async () => {
    const a = await newAccount(stack.db, 100);
    const b = await newAccount(stack.db, 100);
    const asA = apiClient(stack.baseUrl, a.apiKey);
    const asB = apiClient(stack.baseUrl, b.apiKey);
    const image = await jpegBase64(400, 500);

    // A's resources: a project, a completed action with its card, a webhook with a delivery, a funnel session, a v2 job.
    const project = (await asA('POST', `${V1}/projects`, { name: SECRET_NAME })).body;
    const hook = (await asA('POST', `${V1}/webhooks`, { url: `${receiver.url}/hook`, events: ['generation.completed'] })).body;
    const action = (await asA('POST', `${V1}/generate/photo`, { images: [{ data: image }], project_id: project.id })).body;
    await stack.temporal.workflow.getHandle(actionWorkflowId(action.action_id)).result();
    const status = (await asA('GET', `${V1}/status/${action.action_id}`)).body;
    const cardOf = async (actionId: number) => (await stack.db.query('SELECT card_id FROM actions WHERE id = $1', [actionId]))[0].card_id as number;
    const cardId = await cardOf(action.action_id);
    const [delivery] = await eventually(async () => (await asA('GET', `${V1}/webhooks/${hook.id}/deliveries`)).body.deliveries, (d) => d.length > 0);
    const funnel = (await asA('POST', `${V1}/funnels`, { images: [{ data: image }], locale: 'en' })).body;
    const job = (await asA('POST', `${V2}/jobs/generate`, { images: [{ data: image }] })).body;
    await stack.temporal.workflow.getHandle(jobWorkflowId(job.job_id)).result();
    const batch = (await asA('POST', `${V2}/batches`, { items: [{ external_id: 'sku', type: 'photo', images: [{ data: image }] }] })).body;
    await stack.temporal.workflow.getHandle(batchWorkflowId(batch.batch_id)).result();
    const ids: Record<string, string | number> = {
      project_id: project.id, card_id: cardId, action_id: action.action_id, webhook_id: hook.id,
      delivery_id: delivery.delivery_id, funnel_id: funnel.funnel_id, job_id: job.job_id, batch_id: batch.batch_id,
    };
    for (const [name, value] of Object.entries(ids)) assert.ok(value !== undefined, `A's ${name}`);
    const bProject = (await asB('POST', `${V1}/projects`, { name: 'theirs' })).body;

    /** What B sends where a route takes a body: valid, so that only ownership can refuse it. */
    const bodies: Record<string, unknown> = {
      'patch /projects/{project_id}': { name: 'stolen' },
      'patch /cards/{card_id}': { project_id: bProject.id },
      'post /edit/{action_id}': { instruction: 'brighter' },
      'post /funnels/{funnel_id}/setup': { aspect_ratio: '1:1', style: 'infographic' },
      'post /funnels/{funnel_id}/generate': { idea_id: 'idea_1' },
    };
    const before = await stack.db.query('SELECT balance, held FROM accounts WHERE id = ANY($1) ORDER BY id', [[a.accountId, b.accountId]]);
    const leaks = [SECRET_NAME, String(status.result_url ?? 'none'), receiver.url];

    let checked = 0;
    // The API-key groups; the dashboard's routes (a session, no key) have their matrix in test/dashboard.
    for (const group of routeGroups(stack.services).filter((g) => g.authenticated)) {
      for (const route of group.routes) {
        if (!route.params) continue;
        const key = `${route.method} ${route.path}`;
        const path = `${group.prefix}${route.path}`.replace(/\{(\w+)\}/g, (_m, name: string) => {
          assert.ok(name in ids, `${key}: no resource of A for {${name}}; add one to the matrix`);
          return String(ids[name]);
        });
        const res = await asB(route.method.toUpperCase(), path, route.body ? (bodies[key] ?? {}) : undefined);
        const expected = group.prefix === V2 ? [404, 'not_found'] : [403, 'forbidden'];
        assert.deepEqual([res.status, res.body?.detail?.error], expected, `${key}: ${JSON.stringify(res.body)}`);
        for (const secret of leaks) assert.ok(!JSON.stringify(res.body).includes(secret), `${key} leaks ${secret}`);
        checked++;
      }
    }
    assert.ok(checked >= 18, `${checked} routes checked`);

    // B's own card cannot be moved into A's project either, and A's results do not show in B's filters.
    const bAction = (await asB('POST', `${V1}/generate/photo`, { images: [{ data: image }] })).body;
    await stack.temporal.workflow.getHandle(actionWorkflowId(bAction.action_id)).result();
    const bCard = await cardOf(bAction.action_id);
    assert.equal((await asB('PATCH', `${V1}/cards/${bCard}`, { project_id: project.id })).status, 403);
    const filtered = await asB('GET', `${V1}/results?project_id=${project.id}`);
    assert.equal(filtered.status, 403, JSON.stringify(filtered.body));
    assert.equal(filtered.body.detail.error, 'forbidden');
    const unknown = await asB('GET', `${V1}/results?project_id=2147483647`);
    assert.equal(unknown.status, 404, JSON.stringify(unknown.body));
    assert.equal(unknown.body.detail.error, 'not_found');

    // Nothing of A's moved: its project, card, webhook, action and job are as they were.
    assert.equal((await asA('GET', `${V1}/projects/${project.id}`)).body.name, SECRET_NAME);
    assert.equal((await asA('GET', `${V1}/cards/${cardId}`)).body.project_id, project.id);
    assert.equal((await asA('GET', `${V1}/webhooks`)).body.webhooks.length, 1);
    assert.equal((await asA('GET', `${V1}/status/${action.action_id}`)).body.status, 'completed');
    assert.equal((await asA('GET', `${V2}/jobs/${job.job_id}`)).body.status, 'succeeded');
    assert.equal((await asA('GET', `${V2}/batches/${batch.batch_id}`)).body.status, 'completed');
    const after = await stack.db.query('SELECT balance, held FROM accounts WHERE id = ANY($1) ORDER BY id', [[a.accountId, b.accountId]]);
    assert.deepEqual(after.map((x: { balance: number }) => x.balance), [before[0].balance, before[1].balance - 5], 'only B\'s own photo is charged');
  });
});
