import assert from 'node:assert/strict';
import { WorkflowIdReusePolicy } from '@temporalio/client';
import { createWorker } from '../../app/worker';
import { actionWorkflowId, funnelWorkflowId } from '../../src/temporal/contract';
import { MAX_FUNNEL_IDEAS } from '../../src/funnels/session';
import { grantToAccount } from '../../src/accounts/accounts';
import { testEnvironment } from '../support/environment';
import { apiClient, assertMoneyConsistent, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

describe('funnel sessions over HTTP', function () {
  this.timeout(120_000);
  let stack: Stack;
  let image: string;
  before(async () => {
    stack = await startStack();
    image = await jpegBase64(400, 500, '#c02020');
  });
  after(() => stack.stop());

  async function newFunnel(sparks = 20, extra: object = {}) {
    const { accountId, apiKey } = await newAccount(stack.db, sparks);
    const call = apiClient(stack.baseUrl, apiKey);
    const res = await call('POST', `${V1}/funnels`, { images: [{ data: image }], locale: 'en', ...extra });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return { accountId, call, funnel: res.body };
  }

  it('walks from photos to a completed card: facts, questions, ideas, setup, generate, charged once, result_url in GET', async () => {
    const { accountId, call, funnel } = await newFunnel();
    assert.equal(funnel.status, 'open');
    assert.deepEqual(funnel.product, {
      category_id: 'other', concept_suggestions: ['infographic', 'other_in_use', 'other_environment', 'other_catalog'],
      product_name: 'Red product', qualities: ['Quality materials', 'Thoughtful design', 'Easy to use'],
    });
    assert.ok(funnel.questions.length >= 3 && funnel.questions.length <= 5);
    assert.deepEqual(funnel.questions.map((q: { kind: string }) => q.kind), ['single', 'single', 'multiple', 'text']);
    assert.equal(funnel.card, null);

    const idea = (await call('POST', `${V1}/funnels/${funnel.funnel_id}/idea`)).body;
    assert.equal(idea.idea.id, 'idea_1', JSON.stringify(idea));
    assert.equal(idea.idea.title, 'The main advantage: “Red product”');
    const second = (await call('POST', `${V1}/funnels/${funnel.funnel_id}/idea`)).body.idea;
    assert.equal(second.style, 'cinematic');

    const setup = await call('POST', `${V1}/funnels/${funnel.funnel_id}/setup`, { aspect_ratio: '1:1', style: 'infographic', resolution: '4K', design_key: 'minimal', model_reference_image: { data: image } });
    assert.equal(setup.status, 200, JSON.stringify(setup.body));
    assert.deepEqual(setup.body.setup, { aspect_ratio: '1:1', style: 'infographic', creativity: 0.5, design_key: 'minimal', references: ['model'] });

    const answers = { audience: 'As a gift', focus: ['Easy to use'], must_say: 'Free delivery' };
    const generated = await call('POST', `${V1}/funnels/${funnel.funnel_id}/generate`, { answers, idea_id: 'idea_1' });
    assert.equal(generated.status, 200, JSON.stringify(generated.body));
    assert.equal(generated.body.project_id, funnel.project_id, 'the card goes into the session\'s own project');
    assert.equal(generated.body.style, 'infographic');
    const actionId = generated.body.action_id;
    await stack.temporal.workflow.getHandle(actionWorkflowId(actionId)).result();

    const done = (await call('GET', `${V1}/funnels/${funnel.funnel_id}`)).body;
    assert.equal(done.status, 'generated');
    assert.deepEqual(done.answers, answers);
    assert.equal(done.chosen_idea_id, 'idea_1');
    assert.equal(done.card.action_id, actionId);
    assert.equal(done.card.status, 'completed');
    const picture = await fetch(done.card.result_url);
    assert.equal(picture.status, 200);
    const [action] = await stack.db.query('SELECT params FROM actions WHERE id = $1', [actionId]);
    assert.equal(action.params.userText, 'The main advantage: “Red product”\nFree delivery\nQuality materials\nThoughtful design\nEasy to use');
    assert.equal(action.params.aspectRatio, '1:1');
    assert.equal((await call('GET', `${V1}/status/${actionId}`)).body.status, 'completed');
    assert.ok((await call('GET', `${V1}/results`)).body.items.some((i: { action_id: number }) => i.action_id === actionId));

    // A second generate is refused (the card is done; a new version is an edit), and nothing more is charged.
    const again = await call('POST', `${V1}/funnels/${funnel.funnel_id}/generate`);
    assert.deepEqual([again.status, again.body.detail.error, again.body.detail.details.action_id], [409, 'card_completed', actionId]);
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 15, available: 15, holds: 0 });
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('adds distinct ideas up to the cap, then answers 409 idea_limit_reached', async () => {
    const { call, funnel } = await newFunnel();
    const titles = new Set<string>();
    for (let n = 1; n <= MAX_FUNNEL_IDEAS; n++) {
      const res = await call('POST', `${V1}/funnels/${funnel.funnel_id}/idea`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.ideas_count, n);
      titles.add(res.body.idea.title);
    }
    assert.equal(titles.size, MAX_FUNNEL_IDEAS, 'every idea differs from those before it');
    const full = await call('POST', `${V1}/funnels/${funnel.funnel_id}/idea`);
    assert.deepEqual([full.status, full.body.detail.error], [409, 'idea_limit_reached']);
    assert.equal((await call('GET', `${V1}/funnels/${funnel.funnel_id}`)).body.ideas.length, MAX_FUNNEL_IDEAS);
  });

  it('validates the setup like the card endpoint and the generate body against the session', async () => {
    const { call, funnel } = await newFunnel();
    const path = `${V1}/funnels/${funnel.funnel_id}`;
    for (const extra of [{ design_key: 'minimal' }, { design_reference_image: { data: image } }]) {
      const refused = await call('POST', `${path}/setup`, { style: 'cinematic', ...extra });
      assert.deepEqual([refused.status, refused.body.detail.error], [400, 'unsupported_parameter']);
    }
    assert.equal((await call('POST', `${path}/setup`, { aspect_ratio: '2:1' })).status, 422);
    assert.equal((await call('POST', `${path}/setup`, { design_reference_image: { url: 'http://x' } })).status, 422);
    assert.equal((await call('GET', `${path}`)).body.setup, null, 'a refused setup changes nothing');
    const unknownIdea = await call('POST', `${path}/generate`, { idea_id: 'idea_3' });
    assert.deepEqual([unknownIdea.status, unknownIdea.body.detail.error], [400, 'unknown_idea']);
    const unknownQuestion = await call('POST', `${path}/generate`, { answers: { colour: 'red' } });
    assert.deepEqual([unknownQuestion.status, unknownQuestion.body.detail.error], [400, 'unknown_question']);
    const badChoice = await call('POST', `${path}/generate`, { answers: { audience: 'Aliens' } });
    assert.deepEqual([badChoice.status, badChoice.body.detail.error], [400, 'invalid_answer']);
    assert.deepEqual((await call('GET', `${V1}/balance`)).body.holds, 0);
  });

  it('refuses steps out of order: ideas and setup after generate, a second generate while the card runs; 402 when short', async () => {
    const { call, funnel, accountId } = await newFunnel(4);
    const path = `${V1}/funnels/${funnel.funnel_id}`;
    const short = await call('POST', `${path}/generate`);
    assert.deepEqual([short.status, short.body.detail.error], [402, 'insufficient_tokens']);
    assert.equal((await call('GET', path)).body.status, 'open', 'a refused generate leaves the session open');
    await grantToAccount(stack.db, accountId, 16);

    const [first, second] = await Promise.all([call('POST', `${path}/generate`), call('POST', `${path}/generate`)]);
    const statuses = [first.status, second.status].sort();
    assert.deepEqual(statuses, [200, 409], JSON.stringify([first.body, second.body]));
    const loser = first.status === 409 ? first : second;
    assert.equal(loser.body.detail.error, 'card_in_progress');
    for (const step of ['idea', 'setup']) {
      const res = await call('POST', `${path}/${step}`, step === 'setup' ? {} : undefined);
      assert.deepEqual([res.status, res.body.detail.error], [409, 'funnel_generated'], step);
    }
    const winner = first.status === 200 ? first : second;
    await stack.temporal.workflow.getHandle(actionWorkflowId(winner.body.action_id)).result();
    assert.equal((await call('GET', `${V1}/balance`)).body.balance, 15, 'two generates at once charge one card');
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('answers 404 for an unknown session and 403 for another account\'s', async () => {
    const { funnel } = await newFunnel();
    const other = apiClient(stack.baseUrl, (await newAccount(stack.db, 20)).apiKey);
    for (const [method, step] of [['GET', ''], ['POST', '/idea'], ['POST', '/setup'], ['POST', '/generate']]) {
      const foreign = await other(method, `${V1}/funnels/${funnel.funnel_id}${step}`, method === 'POST' ? {} : undefined);
      assert.deepEqual([foreign.status, foreign.body.detail.error], [403, 'forbidden'], step);
      const unknown = await other(method, `${V1}/funnels/999999${step}`, method === 'POST' ? {} : undefined);
      assert.deepEqual([unknown.status, unknown.body.detail.error], [404, 'not_found'], step);
    }
  });

  it('continues as new after its steps per run, carrying its state', async () => {
    const { call, funnel } = await newFunnel();
    const path = `${V1}/funnels/${funnel.funnel_id}`;
    const workflowId = funnelWorkflowId(funnel.funnel_id);
    // The same session under a workflow that continues as new every 2 steps (the default is STEPS_PER_RUN).
    await stack.temporal.workflow.getHandle(workflowId).terminate('restarted with a small run size');
    const handle = await stack.temporal.workflow.start('funnelWorkflow', {
      taskQueue: stack.taskQueue, workflowId, workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
      args: [{ funnelId: funnel.funnel_id, idleTimeoutSeconds: 3600, stepsPerRun: 2 }],
    });
    for (const expected of ['idea_1', 'idea_2', 'idea_3']) {
      const idea = await call('POST', `${path}/idea`);
      assert.deepEqual([idea.status, idea.body.idea?.id], [200, expected], JSON.stringify(idea.body));
    }
    assert.equal((await call('POST', `${path}/setup`, { aspect_ratio: '1:1', style: 'cinematic' })).status, 200);
    assert.notEqual((await stack.temporal.workflow.getHandle(workflowId).describe()).runId, handle.firstExecutionRunId, 'a new run');
    const idea = await call('POST', `${path}/idea`);
    assert.deepEqual([idea.status, idea.body.idea?.id, idea.body.ideas_count], [200, 'idea_4', 4], 'the count was carried over');
    const session = (await call('GET', path)).body;
    assert.deepEqual([session.status, session.ideas.length, session.setup?.style], ['open', 4, 'cinematic']);
  });

  it('loses nothing when the worker is replaced mid-session', async () => {
    const { call, funnel } = await newFunnel();
    const path = `${V1}/funnels/${funnel.funnel_id}`;
    assert.equal((await call('POST', `${path}/idea`)).status, 200);
    stack.worker!.shutdown();
    const env = testEnvironment();
    const { worker, connection } = await createWorker({
      address: env.temporalAddress, namespace: 'default', taskQueue: stack.taskQueue, deps: stack.deps, workflowBundle: env.workflowBundle,
    });
    const running = worker.run();
    try {
      const idea = await call('POST', `${path}/idea`);
      assert.equal(idea.status, 200, JSON.stringify(idea.body));
      assert.equal(idea.body.idea.id, 'idea_2');
      const generated = await call('POST', `${path}/generate`, { idea_id: 'idea_2' });
      assert.equal(generated.status, 200, JSON.stringify(generated.body));
      await stack.temporal.workflow.getHandle(actionWorkflowId(generated.body.action_id)).result();
      const done = (await call('GET', path)).body;
      assert.deepEqual([done.ideas.length, done.card.status, done.chosen_idea_id], [2, 'completed', 'idea_2']);
    } finally {
      worker.shutdown();
      await running;
      await connection.close();
    }
  });
});

describe('an idle funnel session', function () {
  this.timeout(60_000);
  let stack: Stack;
  before(async () => {
    stack = await startStack({ funnelIdleTimeoutSeconds: 1 });
  });
  after(() => stack.stop());

  it('ends by itself after FUNNEL_IDLE_TIMEOUT_SECONDS, keeps answering GET and refuses new steps', async () => {
    const { apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const started = await call('POST', `${V1}/funnels`, { images: [{ data: await jpegBase64() }], locale: 'es' });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const id = started.body.funnel_id;
    const outcome = await stack.temporal.workflow.getHandle(funnelWorkflowId(id)).result();
    assert.equal(outcome.status, 'expired');
    const ended = (await call('GET', `${V1}/funnels/${id}`)).body;
    assert.equal(ended.status, 'expired');
    assert.ok(ended.ended_at);
    assert.equal(ended.product.product_name, 'Producto azul');
    for (const step of ['idea', 'setup', 'generate']) {
      const res = await call('POST', `${V1}/funnels/${id}/${step}`, step === 'idea' ? undefined : {});
      assert.deepEqual([res.status, res.body.detail.error], [409, 'funnel_expired'], step);
    }
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 20, available: 20, holds: 0 });
  });
});
