import assert from 'node:assert/strict';
import { actionWorkflowId } from '../../src/temporal/contract';
import { apiClient, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

describe('projects and cards over HTTP', function () {
  this.timeout(60_000);
  let stack: Stack;
  let image: string;
  before(async () => {
    stack = await startStack();
    image = await jpegBase64();
  });
  after(() => stack.stop());

  it('creates (201), reads, patches and lists projects', async () => {
    const call = apiClient(stack.baseUrl, (await newAccount(stack.db)).apiKey);
    const empty = await call('POST', `${V1}/projects`);
    assert.equal(empty.status, 201);
    assert.equal(empty.body.source, 'api');
    assert.equal(empty.body.name, null);

    const created = await call('POST', `${V1}/projects`, { name: 'Spring', product_name: 'Mug', category_id: 'home', concept_id: 'home_catalog', comment: 'white' });
    assert.equal(created.status, 201);
    assert.deepEqual(
      [created.body.name, created.body.product_name, created.body.category_id, created.body.concept_id, created.body.comment],
      ['Spring', 'Mug', 'home', 'home_catalog', 'white'],
    );
    const patched = await call('PATCH', `${V1}/projects/${created.body.id}`, { comment: 'black' });
    assert.equal(patched.status, 200);
    assert.deepEqual([patched.body.name, patched.body.comment], ['Spring', 'black'], 'unset fields stay');

    const detail = await call('GET', `${V1}/projects/${created.body.id}`);
    assert.deepEqual([detail.body.cards, detail.body.actions], [[], []]);

    const list = await call('GET', `${V1}/projects?limit=1&offset=0`);
    assert.deepEqual([list.body.total, list.body.limit, list.body.offset, list.body.items.length], [2, 1, 0, 1]);
    assert.equal(list.body.items[0].id, created.body.id, 'newest first');
    const second = await call('GET', `${V1}/projects?limit=1&offset=1`);
    assert.equal(second.body.items[0].id, empty.body.id);
  });

  it('filters by source: inbox and api by default, v2 only with source=all', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    await call('POST', `${V1}/projects`, { name: 'manual' });
    const generated = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Pot', category_id: 'home', concept_id: 'home_catalog' });
    await stack.db.query(`INSERT INTO projects (account_id, source, name) VALUES ($1, 'api_v2', 'v2 job')`, [accountId]);
    const sources = async (query: string) => (await call('GET', `${V1}/projects${query}`)).body.items.map((p: { source: string }) => p.source).sort();
    assert.deepEqual(await sources(''), ['api', 'api_inbox']);
    assert.deepEqual(await sources('?source=api_inbox'), ['api_inbox']);
    assert.deepEqual(await sources('?source=api'), ['api']);
    assert.deepEqual(await sources('?source=all'), ['api', 'api_inbox', 'api_v2']);
    await stack.temporal.workflow.getHandle(actionWorkflowId(generated.body.action_id)).result();
  });

  it('validates list parameters with 422', async () => {
    const call = apiClient(stack.baseUrl, (await newAccount(stack.db)).apiKey);
    for (const query of ['limit=0', 'limit=101', 'offset=-1', 'source=api_v2', 'limit=abc']) {
      const res = await call('GET', `${V1}/projects?${query}`);
      assert.equal(res.status, 422, query);
      assert.equal(res.body.detail[0].loc[0], 'query');
    }
    assert.equal((await call('POST', `${V1}/projects`, { category_id: 'cars' })).status, 422);
    const mismatch = await call('POST', `${V1}/projects`, { category_id: 'food', concept_id: 'home_catalog' });
    assert.deepEqual([mismatch.status, mismatch.body.detail.error], [400, 'invalid_request']);
  });

  it('shows a card with its actions, and a project with its cards and actions', async () => {
    const call = apiClient(stack.baseUrl, (await newAccount(stack.db, 20)).apiKey);
    const project = (await call('POST', `${V1}/projects`, { name: 'Shoot' })).body;
    const generated = (await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], project_id: project.id, aspect_ratio: '1:1' })).body;
    await stack.temporal.workflow.getHandle(actionWorkflowId(generated.action_id)).result();

    const card = await call('GET', `${V1}/cards/${generated.card_id}`);
    assert.equal(card.status, 200);
    assert.deepEqual(
      [card.body.project_id, card.body.status, card.body.content_type, card.body.aspect_ratio, card.body.active_action_id],
      [project.id, 'completed', 'photo', '1:1', generated.action_id],
    );
    assert.deepEqual(card.body.actions, [{ id: generated.action_id, type: 'generate', status: 'completed', depth: 0, parent_action_id: null, asset_path: card.body.actions[0]?.asset_path }]);
    assert.match(card.body.actions[0].asset_path, new RegExp(`^results/${generated.action_id}/[0-9a-f]{32}\\.jpg$`));

    const detail = (await call('GET', `${V1}/projects/${project.id}`)).body;
    assert.deepEqual(detail.cards.map((c: { id: number }) => c.id), [generated.card_id]);
    assert.equal(detail.actions[0].id, generated.action_id);
    assert.equal(detail.actions[0].card_id, generated.card_id);
    assert.equal(detail.actions[0].depth, 0);
  });

  it('moves a card only into a project of the caller', async () => {
    const owner = apiClient(stack.baseUrl, (await newAccount(stack.db, 20)).apiKey);
    const stranger = apiClient(stack.baseUrl, (await newAccount(stack.db, 20)).apiKey);
    const generated = (await owner('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Box', category_id: 'other' })).body;
    const target = (await owner('POST', `${V1}/projects`, { name: 'target' })).body;
    const foreign = (await stranger('POST', `${V1}/projects`, { name: 'theirs' })).body;

    const moved = await owner('PATCH', `${V1}/cards/${generated.card_id}`, { project_id: target.id });
    assert.deepEqual([moved.status, moved.body.project_id], [200, target.id]);
    const detail = (await owner('GET', `${V1}/projects/${target.id}`)).body;
    assert.deepEqual(detail.actions.map((a: { id: number }) => a.id), [generated.action_id], 'its actions move with it');

    const intoForeign = await owner('PATCH', `${V1}/cards/${generated.card_id}`, { project_id: foreign.id });
    assert.deepEqual([intoForeign.status, intoForeign.body.detail.error], [403, 'forbidden']);
    const intoMissing = await owner('PATCH', `${V1}/cards/${generated.card_id}`, { project_id: 99999999 });
    assert.deepEqual([intoMissing.status, intoMissing.body.detail.error], [404, 'not_found']);
    const byStranger = await stranger('PATCH', `${V1}/cards/${generated.card_id}`, { project_id: foreign.id });
    assert.deepEqual([byStranger.status, byStranger.body.detail.error], [403, 'forbidden']);
    assert.equal((await owner('PATCH', `${V1}/cards/${generated.card_id}`, {})).status, 422);
    await stack.temporal.workflow.getHandle(actionWorkflowId(generated.action_id)).result();
  });

  it('403 for another account\'s project or card, 404 for unknown ids', async () => {
    const owner = apiClient(stack.baseUrl, (await newAccount(stack.db)).apiKey);
    const stranger = apiClient(stack.baseUrl, (await newAccount(stack.db)).apiKey);
    const project = (await owner('POST', `${V1}/projects`, { name: 'mine' })).body;
    for (const [method, path, body] of [['GET', `${V1}/projects/${project.id}`], ['PATCH', `${V1}/projects/${project.id}`, { name: 'x' }]] as const) {
      const res = await stranger(method, path, body);
      assert.deepEqual([res.status, res.body.detail.error], [403, 'forbidden'], `${method} ${path}`);
    }
    assert.equal((await owner('GET', `${V1}/projects/99999999`)).status, 404);
    assert.equal((await owner('GET', `${V1}/cards/99999999`)).status, 404);
  });
});
