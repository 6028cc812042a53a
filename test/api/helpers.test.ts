import assert from 'node:assert/strict';
import type { DataSource } from 'typeorm';
import { grantSparks } from '../../src/billing/sparks';
import { allFrom, Providers, UnconfiguredProvider } from '../../src/providers';
import { LocalRenderer } from '../../src/providers/local-renderer';
import { ProductAnalysis, ProviderError } from '../../src/providers/provider';
import { apiClient, assertMoneyConsistent, jpegBase64, newAccount, V1 } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

const PAID_RATE = '1 spark per started block of 20 calls after the first 100 calls of the day (UTC)';

/** Sets today's (UTC) count of succeeded helper calls, as if they had been made. */
async function setUsedToday(db: DataSource, accountId: number, used: number): Promise<void> {
  await db.query(
    `INSERT INTO helper_usage (account_id, day, used) VALUES ($1, (now() AT TIME ZONE 'UTC')::date, $2)
     ON CONFLICT (account_id, day) DO UPDATE SET used = $2`, [accountId, used]);
}

/** Today's counts, the calls still reserved, and the helper holds still open. */
async function helperState(db: DataSource, accountId: number) {
  const [row] = await db.query(
    `SELECT COALESCE((SELECT used FROM helper_usage WHERE account_id = $1 AND day = (now() AT TIME ZONE 'UTC')::date), 0) AS used,
            (SELECT COALESCE(SUM(pending), 0)::int FROM helper_usage WHERE account_id = $1) AS pending,
            (SELECT count(*)::int FROM helper_reservations WHERE account_id = $1) AS reservations,
            (SELECT count(*)::int FROM spark_holds WHERE account_id = $1 AND reference IS NOT NULL AND status = 'held') AS open_holds`,
    [accountId]);
  return row as { used: number; pending: number; reservations: number; open_holds: number };
}

async function helperCharges(db: DataSource, accountId: number): Promise<string[]> {
  const rows = await db.query(
    `SELECT reference, amount FROM spark_ledger WHERE account_id = $1 AND kind = 'charge' ORDER BY id`, [accountId]);
  return rows.map((r: { reference: string; amount: number }) => `${r.reference} ${r.amount}`);
}

async function todayUtc(db: DataSource): Promise<string> {
  return (await db.query(`SELECT (now() AT TIME ZONE 'UTC')::date::text AS day`))[0].day;
}

describe('POST /analyze and the AI helpers over HTTP', function () {
  this.timeout(120_000);
  let stack: Stack;
  let red: string;
  let blue: string;
  before(async () => {
    stack = await startStack({ withWorker: false });
    red = await jpegBase64(400, 500, '#d03030');
    blue = await jpegBase64(400, 500, '#2a6fdb');
  });
  after(() => stack.stop());

  describe('POST /analyze', () => {
    it('answers the analysis in ru, en and es (body, then Accept-Language, else ru), for free', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 0);
      const call = apiClient(stack.baseUrl, apiKey);
      const qualities = {
        ru: ['Качественные материалы', 'Продуманный дизайн', 'Удобство в использовании'],
        en: ['Quality materials', 'Thoughtful design', 'Easy to use'],
        es: ['Materiales de calidad', 'Diseño cuidado', 'Fácil de usar'],
      };
      const en = await call('POST', `${V1}/analyze`, { image: { data: red }, locale: 'en' });
      assert.equal(en.status, 200, JSON.stringify(en.body));
      assert.deepEqual(en.body, { category_id: 'other', product_name: 'Red product', qualities: qualities.en });
      const es = await call('POST', `${V1}/analyze`, { image: { data: blue } }, { 'Accept-Language': 'de-DE, es;q=0.8, en;q=0.5' });
      assert.deepEqual(es.body, { category_id: 'other', product_name: 'Producto azul', qualities: qualities.es });
      const ru = await call('POST', `${V1}/analyze`, { image: { data: red } });
      assert.deepEqual(ru.body, { category_id: 'other', product_name: 'Красный товар', qualities: qualities.ru });

      const upload = await call('POST', `${V1}/upload`, { image: { data: blue } });
      assert.equal(upload.status, 201);
      const fromUpload = await call('POST', `${V1}/analyze`, { image: { data: upload.body.upload_id }, locale: 'en' });
      assert.equal(fromUpload.body.product_name, 'Blue product', 'an upload id works as the image');

      assert.deepEqual((await call('GET', `${V1}/helpers/usage`)).body.used_today, 0, 'analysis is not a helper call');
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 0, available: 0, holds: 0 });
      await assertMoneyConsistent(stack.db, accountId);
    });

    it('refuses a missing or unreadable image', async () => {
      const { apiKey } = await newAccount(stack.db, 0);
      const call = apiClient(stack.baseUrl, apiKey);
      const missing = await call('POST', `${V1}/analyze`, { locale: 'en' });
      assert.equal(missing.status, 422);
      assert.deepEqual(missing.body.detail[0].loc, ['body', 'image']);
      const badLocale = await call('POST', `${V1}/analyze`, { image: { data: red }, locale: 'de' });
      assert.equal(badLocale.status, 422);
      assert.deepEqual(badLocale.body.detail[0].loc, ['body', 'locale']);
      const notAnImage = await call('POST', `${V1}/analyze`, { image: { data: Buffer.from('hello').toString('base64') } });
      assert.deepEqual([notAnImage.status, notAnImage.body.detail.error], [400, 'invalid_request']);
    });
  });

  describe('POST /wishes/suggest, POST /video/suggest-scenario, GET /helpers/usage', () => {
    it('write deterministic text in ru, en and es from the photo and the request, and count each call', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 0);
      const call = apiClient(stack.baseUrl, apiKey);
      assert.deepEqual((await call('GET', `${V1}/helpers/usage`)).body, { used_today: 0, free_limit: 100, free_remaining: 100, paid_rate: PAID_RATE });

      const wishes = { images: [{ data: blue }, { data: red }], category_id: 'home', concept_id: 'home_interior', product_name: 'Ceramic mug' };
      const en = await call('POST', `${V1}/wishes/suggest`, { ...wishes, locale: 'en' });
      assert.equal(en.status, 200, JSON.stringify(en.body));
      assert.equal(en.body.text, '“Ceramic mug” in a room interior.\nBring out: quality materials, thoughtful design, easy to use.\n'
        + "Keep the product's colour (blue) as in the photo; a calm background, soft light, no text over the product.");
      const ru = await call('POST', `${V1}/wishes/suggest`, { ...wishes, product_name: undefined, concept_id: 'home_scale' });
      assert.equal(ru.body.text, '«Синий товар» рядом с привычными предметами, чтобы был виден размер.\n'
        + 'Подчеркните: качественные материалы, продуманный дизайн, удобство в использовании.\n'
        + 'Цвет товара (синий) сохраните как на фото; спокойный фон, мягкий свет, без текста поверх товара.');
      const es = await call('POST', `${V1}/wishes/suggest`, { ...wishes, concept_id: 'infographic' }, { 'Accept-Language': 'es' });
      assert.match(es.body.text, /^«Ceramic mug» en una infografía con textos breves\.\nDestaque: materiales de calidad/);
      assert.equal((await call('POST', `${V1}/wishes/suggest`, { ...wishes, locale: 'en' })).body.text, en.body.text, 'the same request, the same text');

      const scenario = { image: { data: red }, product_name: 'Linen shirt', category_id: 'apparel' };
      const sEn = await call('POST', `${V1}/video/suggest-scenario`, { ...scenario, locale: 'en' });
      assert.equal(sEn.status, 200, JSON.stringify(sEn.body));
      assert.equal(sEn.body.scenario, 'The camera slowly pushes in on “Linen shirt”; soft light glides across it and brings out the texture of the fabric. '
        + 'It ends with the product centred in frame.');
      const sRu = await call('POST', `${V1}/video/suggest-scenario`, { image: { data: red } });
      assert.equal(sRu.body.scenario, 'Камера медленно приближается к товару «Красный товар»; мягкий свет скользит по нему и подчёркивает форму и поверхность. '
        + 'В конце товар в центре кадра.');
      const sEs = await call('POST', `${V1}/video/suggest-scenario`, { ...scenario, category_id: 'food', locale: 'es' });
      assert.equal(sEs.body.scenario, 'La cámara se acerca despacio a «Linen shirt»; una luz suave lo recorre y resalta su frescura y su color. '
        + 'Termina con el producto centrado en el encuadre.');

      assert.deepEqual((await call('GET', `${V1}/helpers/usage`)).body, { used_today: 7, free_limit: 100, free_remaining: 93, paid_rate: PAID_RATE });
      assert.deepEqual(await helperState(stack.db, accountId), { used: 7, pending: 0, reservations: 0, open_holds: 0 });
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 0, available: 0, holds: 0 });
      await assertMoneyConsistent(stack.db, accountId);
    });

    it('take upload ids as image data', async () => {
      const { apiKey } = await newAccount(stack.db, 0);
      const call = apiClient(stack.baseUrl, apiKey);
      const upload = (await call('POST', `${V1}/upload`, { image: { data: red } })).body.upload_id;
      const wishes = await call('POST', `${V1}/wishes/suggest`, { images: [{ data: upload }], category_id: 'other', concept_id: 'other_catalog', locale: 'en' });
      assert.equal(wishes.status, 200, JSON.stringify(wishes.body));
      assert.match(wishes.body.text, /^“Red product” as a catalogue shot/);
      const scenario = await call('POST', `${V1}/video/suggest-scenario`, { image: { data: upload }, locale: 'en' });
      assert.match(scenario.body.scenario, /“Red product”/);
    });

    it('validate as the spec says (422 arrays; 400 for a concept of another category or an unreadable image), counting nothing', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 0);
      const call = apiClient(stack.baseUrl, apiKey);
      const valid = { images: [{ data: red }], category_id: 'food', concept_id: 'food_plated' };
      const invalid: [string, object, (string | number)[], string][] = [
        ['/wishes/suggest', { ...valid, images: [] }, ['body', 'images'], 'minItems'],
        ['/wishes/suggest', { ...valid, images: Array(6).fill({ data: red }) }, ['body', 'images'], 'maxItems'],
        ['/wishes/suggest', { ...valid, images: undefined }, ['body', 'images'], 'required'],
        ['/wishes/suggest', { ...valid, images: [{ url: 'https://example.com/a.jpg' }] }, ['body', 'images', 0, 'data'], 'required'],
        ['/wishes/suggest', { ...valid, category_id: undefined }, ['body', 'category_id'], 'required'],
        ['/wishes/suggest', { ...valid, category_id: 'spaceships' }, ['body', 'category_id'], 'enum'],
        ['/wishes/suggest', { ...valid, concept_id: undefined }, ['body', 'concept_id'], 'required'],
        ['/wishes/suggest', { ...valid, concept_id: 'Food Plated' }, ['body', 'concept_id'], 'pattern'],
        ['/wishes/suggest', { ...valid, product_name: 'x'.repeat(201) }, ['body', 'product_name'], 'maxLength'],
        ['/wishes/suggest', { ...valid, locale: 'fr' }, ['body', 'locale'], 'enum'],
        ['/video/suggest-scenario', { product_name: 'Mug' }, ['body', 'image'], 'required'],
        ['/video/suggest-scenario', { image: { data: '' } }, ['body', 'image', 'data'], 'minLength'],
        ['/video/suggest-scenario', { image: { data: red }, product_name: 'x'.repeat(201) }, ['body', 'product_name'], 'maxLength'],
        ['/video/suggest-scenario', { image: { data: red }, category_id: 'spaceships' }, ['body', 'category_id'], 'enum'],
      ];
      for (const [path, body, loc, type] of invalid) {
        const res = await call('POST', `${V1}${path}`, body);
        assert.equal(res.status, 422, `${path} ${JSON.stringify(loc)}: ${JSON.stringify(res.body)}`);
        assert.ok(Array.isArray(res.body.detail));
        assert.ok(res.body.detail.some((d: { loc: unknown; type: string }) => JSON.stringify(d.loc) === JSON.stringify(loc) && d.type === type),
          `${path}: expected ${type} at ${JSON.stringify(loc)}, got ${JSON.stringify(res.body.detail)}`);
      }
      const foreignConcept = await call('POST', `${V1}/wishes/suggest`, { ...valid, concept_id: 'home_interior' });
      assert.deepEqual([foreignConcept.status, foreignConcept.body.detail.error], [400, 'invalid_request']);
      const notAnImage = await call('POST', `${V1}/video/suggest-scenario`, { image: { data: Buffer.from('hello').toString('base64') } });
      assert.deepEqual([notAnImage.status, notAnImage.body.detail.error], [400, 'invalid_request']);
      const unknownUpload = await call('POST', `${V1}/wishes/suggest`, { ...valid, images: [{ data: 'upl_nothing' }] });
      assert.deepEqual([unknownUpload.status, unknownUpload.body.detail.error], [400, 'upload_not_found']);
      assert.deepEqual(await helperState(stack.db, accountId), { used: 0, pending: 0, reservations: 0, open_holds: 0 });
    });

    it('are free for 100 calls a day, then 1 spark per started block of 20 (call 101 pays for 101-120)', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 3);
      const call = apiClient(stack.baseUrl, apiKey);
      const day = await todayUtc(stack.db);
      const wishes = () => call('POST', `${V1}/wishes/suggest`, { images: [{ data: red }], category_id: 'other', concept_id: 'other_in_use' });
      const scenario = () => call('POST', `${V1}/video/suggest-scenario`, { image: { data: red } });
      const balance = async () => (await call('GET', `${V1}/balance`)).body;

      await setUsedToday(stack.db, accountId, 99);
      assert.equal((await wishes()).status, 200); // call 100: free
      assert.deepEqual((await call('GET', `${V1}/helpers/usage`)).body, { used_today: 100, free_limit: 100, free_remaining: 0, paid_rate: PAID_RATE });
      assert.deepEqual(await balance(), { balance: 3, available: 3, holds: 0 });
      assert.equal((await scenario()).status, 200); // call 101 opens block 1
      assert.deepEqual(await balance(), { balance: 2, available: 2, holds: 0 });
      assert.deepEqual(await helperCharges(stack.db, accountId), [`charge:helpers:${accountId}:${day}:1 -1`]);
      for (let n = 102; n <= 120; n++) assert.equal((n % 2 ? await wishes() : await scenario()).status, 200); // covered by block 1
      assert.deepEqual(await balance(), { balance: 2, available: 2, holds: 0 });
      assert.equal((await wishes()).status, 200); // call 121 opens block 2
      assert.deepEqual(await balance(), { balance: 1, available: 1, holds: 0 });
      assert.deepEqual(await helperCharges(stack.db, accountId), [`charge:helpers:${accountId}:${day}:1 -1`, `charge:helpers:${accountId}:${day}:2 -1`]);
      assert.deepEqual(await helperState(stack.db, accountId), { used: 121, pending: 0, reservations: 0, open_holds: 0 });
      await assertMoneyConsistent(stack.db, accountId);
    });

    it('charge exactly under concurrency: 30 calls at once from 95 count 30 and cost 2 sparks', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 10);
      const call = apiClient(stack.baseUrl, apiKey);
      await setUsedToday(stack.db, accountId, 95);
      const results = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2
        ? call('POST', `${V1}/wishes/suggest`, { images: [{ data: blue }], category_id: 'gadgets', concept_id: 'gadgets_studio' })
        : call('POST', `${V1}/video/suggest-scenario`, { image: { data: blue } }))));
      assert.deepEqual(results.map((r) => r.status), Array(30).fill(200));
      assert.deepEqual(await helperState(stack.db, accountId), { used: 125, pending: 0, reservations: 0, open_holds: 0 });
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 8, available: 8, holds: 0 });
      assert.equal((await helperCharges(stack.db, accountId)).length, 2);
      await assertMoneyConsistent(stack.db, accountId);
    });

    it('answer 402 with used_today and free_limit when a paid call cannot be paid, also under concurrency', async () => {
      const { accountId, apiKey } = await newAccount(stack.db, 0);
      const call = apiClient(stack.baseUrl, apiKey);
      const scenario = () => call('POST', `${V1}/video/suggest-scenario`, { image: { data: red } });
      await setUsedToday(stack.db, accountId, 100);
      const refused = await scenario();
      assert.equal(refused.status, 402);
      assert.equal(refused.body.detail.error, 'insufficient_tokens');
      assert.deepEqual(refused.body.detail.details, { used_today: 100, free_limit: 100 });
      assert.deepEqual(await helperState(stack.db, accountId), { used: 100, pending: 0, reservations: 0, open_holds: 0 });

      // 1 spark pays for exactly one block: of 30 calls at once, 20 succeed and 10 are refused.
      await stack.db.transaction((m) => grantSparks(m, accountId, 1, `grant:test:helpers:${accountId}`));
      const results = await Promise.all(Array.from({ length: 30 }, scenario));
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual(statuses, [...Array(20).fill(200), ...Array(10).fill(402)]);
      for (const r of results.filter((x) => x.status === 402)) {
        assert.equal(r.body.detail.details.free_limit, 100);
        assert.ok(r.body.detail.details.used_today >= 100 && r.body.detail.details.used_today <= 120);
      }
      assert.deepEqual(await helperState(stack.db, accountId), { used: 120, pending: 0, reservations: 0, open_holds: 0 });
      assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 0, available: 0, holds: 0 });
      const next = await scenario();
      assert.deepEqual([next.status, next.body.detail.details], [402, { used_today: 120, free_limit: 100 }]);
      await assertMoneyConsistent(stack.db, accountId);
    });

    it('are in the OpenAPI document', async () => {
      const document = (await apiClient(stack.baseUrl)('GET', '/openapi.json')).body;
      for (const [path, method] of [['/analyze', 'post'], ['/wishes/suggest', 'post'], ['/video/suggest-scenario', 'post'], ['/helpers/usage', 'get']]) {
        assert.ok(document.paths[`${V1}${path}`]?.[method], `${method} ${path}`);
      }
      const wishes = document.paths[`${V1}/wishes/suggest`].post;
      assert.deepEqual(wishes.requestBody.content['application/json'].schema.required, ['images', 'category_id', 'concept_id']);
      assert.match(wishes.responses['500'].description, /text_generation_failed/);
      assert.match(wishes.responses['402'].description, /used_today, free_limit/);
    });
  });
});

/** The local renderer, except that its text calls fail the ways a provider can. */
class FailingTextProvider extends LocalRenderer {
  async analyze(images: Buffer[], locale: 'ru' | 'en' | 'es'): Promise<ProductAnalysis> {
    if (locale === 'es') throw new ProviderError('The model is overloaded', 'overloaded', true);
    return { ...(await super.analyze(images, locale)), category_id: locale === 'en' ? 'spaceships' : 'other', product_name: locale === 'en' ? 'x' : '' };
  }

  async suggestWishes(): Promise<string> {
    throw new ProviderError('The model is overloaded', 'overloaded', true);
  }

  async suggestScenario(): Promise<string> {
    throw new TypeError("Cannot read properties of undefined (reading 'text')");
  }
}

describe('the AI helpers when the text provider fails', function () {
  this.timeout(60_000);
  let stack: Stack;
  before(async () => {
    stack = await startStack({ withWorker: false, provider: new FailingTextProvider() });
  });
  after(() => stack.stop());

  it('answer 500 text_generation_failed, and the call is neither counted nor charged (free or paid)', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 5);
    const call = apiClient(stack.baseUrl, apiKey);
    const image = await jpegBase64();
    for (const used of [10, 100, 120]) {
      await setUsedToday(stack.db, accountId, used);
      const wishes = await call('POST', `${V1}/wishes/suggest`, { images: [{ data: image }], category_id: 'food', concept_id: 'food_plated' });
      assert.equal(wishes.status, 500);
      assert.deepEqual(wishes.body.detail, { error: 'text_generation_failed', message: 'The text provider failed: The model is overloaded' });
      const scenario = await call('POST', `${V1}/video/suggest-scenario`, { image: { data: image } });
      assert.equal(scenario.status, 500);
      assert.deepEqual(scenario.body.detail, { error: 'text_generation_failed', message: 'The text provider failed unexpectedly' });
      assert.deepEqual(await helperState(stack.db, accountId), { used, pending: 0, reservations: 0, open_holds: 0 });
      assert.equal((await call('GET', `${V1}/helpers/usage`)).body.used_today, used);
    }
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 5, available: 5, holds: 0 });
    assert.deepEqual(await helperCharges(stack.db, accountId), []);
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('POST /analyze, and a generation that needs the analysis, answer 500 analysis_failed on a failure or an answer outside the contract', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const image = await jpegBase64();
    for (const locale of ['es', 'en', 'ru']) {
      const res = await call('POST', `${V1}/analyze`, { image: { data: image }, locale });
      assert.deepEqual([res.status, res.body.detail?.error], [500, 'analysis_failed'], `${locale}: ${JSON.stringify(res.body)}`);
      const photo = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], locale });
      assert.deepEqual([photo.status, photo.body.detail?.error], [500, 'analysis_failed'], `${locale}: ${JSON.stringify(photo.body)}`);
    }
    assert.deepEqual((await call('POST', `${V1}/analyze`, { image: { data: image }, locale: 'es' })).body.detail.message,
      'The text provider failed: The model is overloaded');
    const [{ n }] = await stack.db.query('SELECT count(*)::int AS n FROM actions WHERE account_id = $1', [accountId]);
    assert.equal(n, 0, 'nothing was created or held');
    await assertMoneyConsistent(stack.db, accountId);
  });
});

describe('the AI helpers when the text provider is not configured', function () {
  this.timeout(60_000);
  let stack: Stack;
  before(async () => {
    const reason = 'TEXT_PROVIDER=gemini needs GEMINI_API_KEY';
    const providers: Providers = { ...allFrom(new LocalRenderer()), text: new UnconfiguredProvider('gemini', reason), unavailable: { text: reason } };
    stack = await startStack({ withWorker: false, providers });
  });
  after(() => stack.stop());

  it('answer 503 generation_unavailable, count nothing, and still report the usage', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 5);
    const call = apiClient(stack.baseUrl, apiKey);
    const image = await jpegBase64();
    await setUsedToday(stack.db, accountId, 100);
    const requests: [string, object][] = [
      ['/analyze', { image: { data: image } }],
      ['/wishes/suggest', { images: [{ data: image }], category_id: 'food', concept_id: 'food_plated' }],
      ['/video/suggest-scenario', { image: { data: image } }],
    ];
    for (const [path, body] of requests) {
      const res = await call('POST', `${V1}${path}`, body);
      assert.deepEqual([res.status, res.body.detail?.error], [503, 'generation_unavailable'], `${path}: ${JSON.stringify(res.body)}`);
      assert.match(res.body.detail.message, /not configured/);
    }
    assert.deepEqual((await call('GET', `${V1}/helpers/usage`)).body, { used_today: 100, free_limit: 100, free_remaining: 0, paid_rate: PAID_RATE });
    assert.deepEqual(await helperState(stack.db, accountId), { used: 100, pending: 0, reservations: 0, open_holds: 0 });
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 5, available: 5, holds: 0 });
    await assertMoneyConsistent(stack.db, accountId);
  });
});
