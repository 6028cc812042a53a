import assert from 'node:assert/strict';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { CATEGORY_IDS } from '../../src/generation/catalogue';
import { GeminiProvider } from '../../src/providers/gemini';
import { LocalRenderer } from '../../src/providers/local-renderer';
import { allFrom } from '../../src/providers';
import { CardJob, PhotoJob, ProviderError } from '../../src/providers/provider';
import { actionWorkflowId, jobWorkflowId } from '../../src/temporal/contract';
import { apiClient, assertMoneyConsistent, eventually, jpegBase64, newAccount, noiseImage, truncatedImage, V1 } from '../support/fixtures';
import {
  blocked, finishedWith, GeminiRequest, GeminiServer, httpError, imageAnswer, jsonAnswer, startGeminiServer, textAnswer,
} from '../support/gemini-server';
import { animated, meanSrgb, near } from '../support/image-kinds';
import { Stack, startStack } from '../support/stack';

const IMAGE_MODEL = 'test-image-model';
const TEXT_MODEL = 'test-text-model';

const png = (width: number, height: number, colour: string) =>
  sharp({ create: { width, height, channels: 3, background: colour } }).png().toBuffer();

/** The prompt text and the inline images of a recorded request. */
function sent(request: GeminiRequest) {
  const parts: any[] = request.body.contents[0].parts;
  return {
    prompt: parts.filter((p) => p.text).map((p) => p.text).join('\n'),
    images: parts.filter((p) => p.inlineData).map((p) => p.inlineData as { mimeType: string; data: string }),
    config: request.body.generationConfig,
  };
}

async function refusal(work: Promise<unknown>): Promise<ProviderError> {
  const err = await work.then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof ProviderError, `expected a ProviderError, got ${String(err)}`);
  return err;
}

describe('Gemini adapter on the wire', function () {
  let server: GeminiServer;
  let gemini: GeminiProvider;
  let photo: PhotoJob;
  let result: Buffer;
  const analysis = { category_id: 'home', product_name: 'Ceramic mug', qualities: ['Keeps drinks warm', 'Dishwasher safe', 'Matte glaze'] };

  before(async () => {
    result = await png(96, 128, '#336699');
    server = await startGeminiServer((req) => (req.model === TEXT_MODEL ? jsonAnswer(analysis) : imageAnswer(result)));
    gemini = new GeminiProvider({ apiKey: server.apiKey, baseUrl: server.baseUrl, imageModel: IMAGE_MODEL, textModel: TEXT_MODEL, timeoutMs: 5_000 });
    photo = {
      images: [await noiseImage('jpeg'), await noiseImage('png')], productName: 'Ceramic mug', categoryId: 'home', conceptId: 'home_interior',
      photoStyle: 'home', aspectRatio: '9:16', resolution: '4K', locale: 'es', comment: 'on an oak table',
    };
  });
  beforeEach(() => void server.requests.splice(0));
  after(() => server.close());

  describe('images', () => {
    it('a photo: the reference photos inline with their types, the prompt, the ratio and size; the last inline image is the result', async () => {
      const draft = await png(32, 32, '#ff0000');
      server.script(imageAnswer(result, 'image/png', draft));
      const rendered = await gemini.renderPhoto(photo);

      assert.equal(server.requests.length, 1);
      const [request] = server.requests;
      assert.equal(request.path, `/v1beta/models/${IMAGE_MODEL}:generateContent`);
      assert.equal(request.headers['x-goog-api-key'], server.apiKey);
      const { prompt, images, config } = sent(request);
      assert.deepEqual(images.map((i) => i.mimeType), ['image/jpeg', 'image/png']);
      assert.deepEqual(images.map((i) => Buffer.from(i.data, 'base64')), photo.images);
      assert.ok(config.responseModalities.includes('IMAGE'));
      assert.deepEqual(config.imageConfig, { aspectRatio: '9:16', imageSize: '4K' });
      for (const words of ['Ceramic mug', 'Spanish', 'on an oak table', 'home interior', 'home']) assert.ok(prompt.includes(words), `prompt mentions ${words}: ${prompt}`);
      assert.equal(request.body.contents[0].role, 'user');

      assert.deepEqual(rendered, { bytes: result, extension: 'png' }, 'the final image, not the draft in the thought part');
    });

    it('every contract ratio and resolution is sent as it is', async () => {
      for (const [aspectRatio, resolution] of [['9:16', '1K'], ['4:3', '2K'], ['1:1', '4K'], ['16:9', '2K'], ['3:4', '1K']] as const) {
        await gemini.renderPhoto({ ...photo, aspectRatio, resolution });
        assert.deepEqual(sent(server.requests.at(-1)!).config.imageConfig, { aspectRatio, imageSize: resolution });
      }
    });

    it('a card: the design reference after the photos, the card text, design key and creativity in the prompt, at 2K; a JPEG answer stays jpg', async () => {
      const reference = await noiseImage('webp', 200, 200);
      const jpeg = await sharp(result).jpeg().toBuffer();
      server.script(imageAnswer(jpeg, 'image/jpeg'));
      const card: CardJob = {
        images: [photo.images[0]], productName: 'Термокружка', categoryId: 'home', conceptId: 'infographic', userText: 'Держит тепло 12 часов',
        style: 'infographic', designKey: 'minimal_light', creativity: 0, designReference: reference, aspectRatio: '4:3', locale: 'ru',
      };
      assert.deepEqual(await gemini.renderCard(card), { bytes: jpeg, extension: 'jpg' });
      const { prompt, images, config } = sent(server.requests[0]);
      assert.deepEqual(images.map((i) => i.mimeType), ['image/jpeg', 'image/webp']);
      assert.deepEqual(Buffer.from(images[1].data, 'base64'), reference, 'the design reference is the last image');
      assert.deepEqual(config.imageConfig, { aspectRatio: '4:3', imageSize: '2K' });
      for (const words of ['Термокружка', 'Держит тепло 12 часов', 'Russian', 'minimal light', 'design reference', 'creativity 0']) {
        assert.ok(prompt.includes(words), `prompt mentions ${words}: ${prompt}`);
      }

      await gemini.renderCard({ ...card, style: 'cinematic', designKey: undefined, designReference: undefined, creativity: 0.5 });
      const cinematic = sent(server.requests[1]);
      assert.equal(cinematic.images.length, 1);
      assert.match(cinematic.prompt, /no text/);
    });

    it('an edit: the source inline, the instruction, the source frame (nearest ratio, size class); a WebP answer is stored as PNG', async () => {
      const source = await sharp({ create: { width: 1500, height: 2000, channels: 3, background: '#888888' } }).jpeg().toBuffer();
      const webp = await sharp(result).webp().toBuffer();
      server.script(imageAnswer(webp, 'image/webp'));
      const rendered = await gemini.renderEdit({ source, instruction: 'Make the background warmer' });
      const { prompt, images, config } = sent(server.requests[0]);
      assert.deepEqual(images, [{ mimeType: 'image/jpeg', data: source.toString('base64') }]);
      assert.match(prompt, /Make the background warmer/);
      assert.deepEqual(config.imageConfig, { aspectRatio: '3:4', imageSize: '2K' });
      assert.equal(rendered.extension, 'png');
      const meta = await sharp(rendered.bytes).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ['png', 96, 128]);
    });
  });

  describe('failures', () => {
    it('an input damaged behind an intact header (the API reads a generation\'s images by their headers) is invalid_image, final, nothing sent', async () => {
      const damaged = truncatedImage(await noiseImage('png'));
      for (const job of [{ ...photo, images: [photo.images[0], damaged] }, { ...photo, images: [damaged] }]) {
        const err = await refusal(gemini.renderPhoto(job));
        assert.deepEqual([err.code, err.retryable], ['invalid_image', false]);
        assert.match(err.message, /^The image cannot be decoded as PNG \(/);
      }
      assert.equal(server.requests.length, 0);
    });

    it('HTTP 429, 500, 503 and 504 are passing (retryable) with their codes; one request each: the SDK does not retry', async () => {
      const cases = [[429, 'rate_limited', 'RESOURCE_EXHAUSTED'], [500, 'internal_error', 'INTERNAL'], [503, 'unavailable', 'UNAVAILABLE'], [504, 'timeout', 'DEADLINE_EXCEEDED']] as const;
      for (const [status, code, name] of cases) {
        server.requests.splice(0);
        server.script(httpError(status, 'The model is overloaded. Please try again later.'));
        const err = await refusal(gemini.renderPhoto(photo));
        assert.deepEqual([err.code, err.retryable], [code, true], `${status}`);
        assert.equal(err.message, `Gemini answered ${status} ${name}: The model is overloaded. Please try again later.`);
        assert.equal(server.requests.length, 1);
      }
    });

    it('HTTP 400, 401, 402, 403 and 404 fail at once with Google\'s message', async () => {
      const cases = [[400, 'invalid_request'], [401, 'refused'], [402, 'refused'], [403, 'refused'], [404, 'model_not_found']] as const;
      for (const [status, code] of cases) {
        server.requests.splice(0);
        server.script(httpError(status, `reason ${status}`));
        const err = await refusal(gemini.analyze(photo.images, 'en'));
        assert.deepEqual([err.code, err.retryable], [code, false], `${status}`);
        assert.match(err.message, new RegExp(`^Gemini answered ${status} [A-Z_]+: reason ${status}$`));
        assert.equal(server.requests.length, 1);
      }
      const wrongKey = new GeminiProvider({ apiKey: 'not-the-key', baseUrl: server.baseUrl, imageModel: IMAGE_MODEL, textModel: TEXT_MODEL, timeoutMs: 5_000 });
      const err = await refusal(wrongKey.renderPhoto(photo));
      assert.deepEqual([err.code, err.retryable], ['invalid_request', false]);
      assert.match(err.message, /API key not valid/);
    });

    it('a 429 and then a success: the next call (Temporal\'s retry) renders', async () => {
      server.script(httpError(429, 'Resource has been exhausted (e.g. check quota).'));
      assert.equal((await refusal(gemini.renderPhoto(photo))).code, 'rate_limited');
      assert.deepEqual(await gemini.renderPhoto(photo), { bytes: result, extension: 'png' });
      assert.equal(server.requests.length, 2);
    });

    it('a prompt blockReason fails at once, blocked, with the reason', async () => {
      server.script(blocked('PROHIBITED_CONTENT', 'The prompt names a protected brand.'));
      const err = await refusal(gemini.renderPhoto(photo));
      assert.deepEqual([err.code, err.retryable, err.message], ['blocked', false, 'Gemini refused the request (blockReason PROHIBITED_CONTENT): The prompt names a protected brand.']);
      assert.equal(server.requests.length, 1);
    });

    it('every safety-type finishReason fails at once, blocked', async () => {
      const reasons = ['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY', 'IMAGE_PROHIBITED_CONTENT', 'IMAGE_RECITATION'];
      for (const reason of reasons) {
        server.requests.splice(0);
        server.script(finishedWith(reason, 'The image may depict a real person.'));
        const err = await refusal(gemini.renderPhoto(photo));
        assert.deepEqual([err.code, err.retryable], ['blocked', false], reason);
        // SDK 3.1.0 drops a candidate's finishMessage on the Gemini API backend, so only the reason is certain.
        assert.ok(err.message.startsWith(`Gemini stopped on content grounds (finishReason ${reason})`), err.message);
        assert.equal(server.requests.length, 1, reason);
      }
    });

    it('no image (NO_IMAGE, IMAGE_OTHER, text only) is asked once more, then fails for good', async () => {
      for (const answer of [finishedWith('NO_IMAGE'), finishedWith('IMAGE_OTHER'), textAnswer('I cannot draw that, but here is a description.')]) {
        server.requests.splice(0);
        server.script(answer, answer);
        const err = await refusal(gemini.renderPhoto(photo));
        assert.deepEqual([err.code, err.retryable], ['no_image', false]);
        assert.match(err.message, /^Gemini answered without an image \(finishReason (NO_IMAGE|IMAGE_OTHER|STOP)\)/);
        assert.equal(server.requests.length, 2);
      }

      server.requests.splice(0);
      server.script(finishedWith('NO_IMAGE'));
      assert.deepEqual(await gemini.renderPhoto(photo), { bytes: result, extension: 'png' }, 'the second ask renders');
      assert.equal(server.requests.length, 2);
    });

    it('a 200 whose body is not JSON is asked once more, then fails as bad_answer', async () => {
      server.script({ status: 200, raw: '<html>proxy error</html>' }, { status: 200, raw: '' });
      const err = await refusal(gemini.renderPhoto(photo));
      assert.deepEqual([err.code, err.retryable], ['bad_answer', false]);
      assert.match(err.message, /^Gemini's answer is not JSON/);
      assert.equal(server.requests.length, 2);
    });

    it('a picture that is truncated or over the size caps is refused as bad_answer before anything is stored', async () => {
      const truncated = result.subarray(0, Math.floor(result.length * 0.6));
      const line = await sharp({ create: { width: 20_001, height: 2, channels: 3, background: '#808080' } }).png().toBuffer();
      for (const [bytes, why] of [[truncated, /^Gemini's image cannot be decoded as PNG \(/], [line, /^Gemini's image is 20001x2 pixels; the limit is 20000 pixels a side$/]] as const) {
        server.script(...Array.from({ length: 2 }, () => imageAnswer(bytes, 'image/jpeg')));
        const err = await refusal(gemini.renderPhoto(photo));
        assert.deepEqual([err.code, err.retryable], ['bad_answer', false]);
        assert.match(err.message, why);
      }
    });

    it('a CMYK JPEG or 16-bit PNG picture is stored as 8-bit sRGB in its colours; an animated one is refused as bad_answer', async () => {
      const red = () => sharp({ create: { width: 96, height: 128, channels: 3, background: '#c02010' } });
      const cmyk = await red().toColourspace('cmyk').jpeg().toBuffer();
      const deep = await red().toColourspace('rgb16').png().toBuffer();
      for (const [bytes, extension] of [[cmyk, 'jpg'], [deep, 'png']] as const) {
        server.script(imageAnswer(bytes, extension === 'jpg' ? 'image/jpeg' : 'image/png'));
        const rendered = await gemini.renderPhoto(photo);
        assert.equal(rendered.extension, extension);
        const meta = await sharp(rendered.bytes).metadata();
        assert.deepEqual([meta.space, meta.depth, meta.channels], ['srgb', 'uchar', 3], extension);
        assert.ok(near(await meanSrgb(rendered.bytes), [192, 32, 16]), `${extension}: ${await meanSrgb(rendered.bytes)}`);
      }
      for (const [bytes, why] of [
        [await animated('webp', [[192, 32, 16], [30, 40, 200]]), /^Gemini's image is an animated WebP \(2 frames\); send one frame as a still image$/],
        [await animated('gif', [[192, 32, 16], [30, 40, 200]]), /^Gemini's image is not a JPEG, PNG or WebP image$/],
      ] as const) {
        server.script(...Array.from({ length: 2 }, () => imageAnswer(bytes, 'image/webp')));
        const err = await refusal(gemini.renderPhoto(photo));
        assert.deepEqual([err.code, err.retryable], ['bad_answer', false]);
        assert.match(err.message, why);
      }
    });

    it('a request that gets no answer within the deadline is a passing timeout', async () => {
      const impatient = new GeminiProvider({ apiKey: server.apiKey, baseUrl: server.baseUrl, imageModel: IMAGE_MODEL, textModel: TEXT_MODEL, timeoutMs: 200 });
      server.script('hang');
      const err = await refusal(impatient.renderPhoto(photo));
      assert.deepEqual([err.code, err.retryable, err.message], ['timeout', true, 'Gemini did not answer within 200 ms']);
    });

    it('an unreachable Gemini is a passing network error', async () => {
      const closed = http.createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const port = (closed.address() as AddressInfo).port;
      await new Promise((resolve) => closed.close(resolve));
      const nowhere = new GeminiProvider({ apiKey: 'k', baseUrl: `http://127.0.0.1:${port}`, imageModel: IMAGE_MODEL, textModel: TEXT_MODEL, timeoutMs: 5_000 });
      const err = await refusal(nowhere.analyze(photo.images, 'en'));
      assert.deepEqual([err.code, err.retryable], ['network_error', true]);
      assert.match(err.message, /ECONNREFUSED/);
    });

    it('a cancelled call ends with the cancellation, not a provider failure', async () => {
      server.script('hang');
      const controller = new AbortController();
      const work = gemini.renderPhoto(photo, controller.signal).then(() => undefined, (e: unknown) => e);
      await eventually(async () => server.requests.length, (n) => n === 1);
      controller.abort(new Error('activity cancelled'));
      const err = await work;
      assert.ok(!(err instanceof ProviderError));
      assert.equal((err as Error).message, 'activity cancelled');
    });
  });

  describe('text', () => {
    it('analysis: the photos and the locale sent with a JSON schema of catalogue ids; the answer is read and trimmed', async () => {
      server.script(jsonAnswer({ category_id: ' Home ', product_name: ' Термокружка ', qualities: ['Держит тепло ', 'Лёгкая'] }));
      const answer = await gemini.analyze(photo.images, 'ru');
      assert.deepEqual(answer, { category_id: 'home', product_name: 'Термокружка', qualities: ['Держит тепло', 'Лёгкая'] });
      const [request] = server.requests;
      assert.equal(request.path, `/v1beta/models/${TEXT_MODEL}:generateContent`);
      const { prompt, images, config } = sent(request);
      assert.equal(images.length, 2);
      assert.match(prompt, /Russian/);
      assert.equal(config.responseMimeType, 'application/json');
      assert.deepEqual(config.responseJsonSchema.properties.category_id.enum, CATEGORY_IDS);
      assert.deepEqual(config.responseJsonSchema.required, ['category_id', 'product_name', 'qualities']);
      assert.equal(config.responseModalities, undefined);
    });

    it('analysis: a category outside the catalogue, an empty name or bad JSON is asked once more, then fails as bad_answer', async () => {
      const bad = [
        [jsonAnswer({ ...analysis, category_id: 'kitchenware' }), 'Gemini answered a category that is not in the catalogue: "kitchenware"'],
        [jsonAnswer({ ...analysis, product_name: '  ' }), "Gemini's answer has no product name"],
        [jsonAnswer({ ...analysis, qualities: [] }), 'Gemini answered 0 qualities (1 to 5 expected)'],
        [jsonAnswer({ ...analysis, product_name: 'x'.repeat(201) }), "Gemini's product name is longer than 200 characters"],
        [textAnswer('{"category_id": "home", "product_na', 'MAX_TOKENS'), 'Gemini\'s answer is not the JSON asked for: "{\\"category_id\\": \\"home\\", \\"product_na"'],
      ] as const;
      for (const [answer, message] of bad) {
        server.requests.splice(0);
        server.script(answer, answer);
        const err = await refusal(gemini.analyze(photo.images, 'en'));
        assert.deepEqual([err.code, err.retryable, err.message], ['bad_answer', false, message]);
        assert.equal(server.requests.length, 2);
      }

      server.requests.splice(0);
      server.script(jsonAnswer({ ...analysis, category_id: 'kitchenware' }));
      assert.deepEqual(await gemini.analyze(photo.images, 'en'), analysis, 'the second ask is valid');
      assert.equal(server.requests.length, 2);
    });

    it('wishes: photos, category, concept, product and locale sent; the text is bounded', async () => {
      server.script(jsonAnswer({ text: 'Термокружка\nДержит тепло 12 часов' }));
      const text = await gemini.suggestWishes({ images: [photo.images[0]], categoryId: 'home', conceptId: 'home_interior', productName: 'Термокружка', locale: 'ru' });
      assert.equal(text, 'Термокружка\nДержит тепло 12 часов');
      const { prompt, images, config } = sent(server.requests[0]);
      assert.equal(images.length, 1);
      for (const words of ['Термокружка', 'home interior', 'Russian']) assert.ok(prompt.includes(words), `prompt mentions ${words}`);
      assert.deepEqual(config.responseJsonSchema.required, ['text']);

      server.script(jsonAnswer({ text: 'x'.repeat(5001) }), jsonAnswer({ text: '' }));
      assert.equal((await refusal(gemini.suggestWishes({ images: [photo.images[0]], categoryId: 'home', conceptId: 'home_interior', locale: 'en' }))).code, 'bad_answer');
    });

    it('scenario: one photo and the locale sent; at most 1500 characters', async () => {
      server.script(jsonAnswer({ scenario: 'La cámara se acerca despacio a la taza.' }));
      assert.equal(await gemini.suggestScenario({ image: photo.images[0], productName: 'Taza', locale: 'es' }), 'La cámara se acerca despacio a la taza.');
      const { prompt, images, config } = sent(server.requests[0]);
      assert.equal(images.length, 1);
      assert.match(prompt, /Spanish/);
      assert.match(prompt, /"Taza"/);
      assert.deepEqual(config.responseJsonSchema.required, ['scenario']);

      server.script(jsonAnswer({ scenario: 'x'.repeat(1501) }), jsonAnswer({ wrong: 'field' }));
      assert.equal((await refusal(gemini.suggestScenario({ image: photo.images[0], locale: 'en' }))).code, 'bad_answer');
    });

    it('funnel questions and ideas: product and locale sent; kinds, choices, concepts and repeats checked', async () => {
      const job = { images: [photo.images[0]], productName: 'Lamp', categoryId: 'home', qualities: ['Warm light'], locale: 'en' as const };
      server.script(jsonAnswer({ questions: [
        { id: 'Who buys', text: 'Who buys it?', kind: 'single', choices: ['Me', 'A friend'] },
        { id: 'must', text: 'What must it say?', kind: 'text', choices: ['ignored'] },
        { id: 'must', text: 'What to show?', kind: 'multiple', choices: ['Light', 'Shape'] },
      ] }));
      assert.deepEqual(await gemini.surveyQuestions(job), [
        { id: 'who_buys', text: 'Who buys it?', kind: 'single', choices: ['Me', 'A friend'] },
        { id: 'must', text: 'What must it say?', kind: 'text' },
        { id: 'must_3', text: 'What to show?', kind: 'multiple', choices: ['Light', 'Shape'] },
      ]);
      assert.match(sent(server.requests[0]).prompt, /"Lamp"/);
      const long = 'q'.repeat(45);
      server.script(jsonAnswer({ questions: [1, 2, 3].map((n) => ({ id: long, text: `Q${n}?`, kind: 'text' })) }));
      const ids = (await gemini.surveyQuestions(job)).map((q) => q.id);
      assert.deepEqual(ids, ['q'.repeat(40), `${'q'.repeat(37)}_2`, `${'q'.repeat(37)}_3`], 'repeated long ids stay answerable (40 characters)');
      server.script(jsonAnswer({ questions: [{ id: 'a', text: 'A?', kind: 'single', choices: ['x'] }] }), jsonAnswer({ questions: [] }));
      assert.equal((await refusal(gemini.surveyQuestions(job))).code, 'bad_answer');

      server.script(jsonAnswer({ title: 'Evening glow', description: 'The lamp at dusk.', concept_id: 'HOME_INTERIOR', style: 'cinematic' }));
      assert.deepEqual(await gemini.suggestIdea({ ...job, existingTitles: ['Morning'] }),
        { title: 'Evening glow', description: 'The lamp at dusk.', concept_id: 'home_interior', style: 'cinematic' });
      const { prompt, config } = sent(server.requests.at(-1)!);
      assert.match(prompt, /"Morning"/);
      assert.deepEqual(config.responseJsonSchema.properties.concept_id.enum.slice(0, 1), ['infographic']);
      server.script(
        jsonAnswer({ title: 'morning', description: 'Again.', concept_id: 'infographic', style: 'infographic' }),
        jsonAnswer({ title: 'New', description: 'x', concept_id: 'apparel_on_model', style: 'infographic' }),
      );
      assert.equal((await refusal(gemini.suggestIdea({ ...job, existingTitles: ['Morning'] }))).code, 'bad_answer');
    });

    it('a blocked text request fails at once', async () => {
      server.script(blocked('SAFETY'));
      const err = await refusal(gemini.suggestScenario({ image: photo.images[0], locale: 'en' }));
      assert.deepEqual([err.code, err.retryable], ['blocked', false]);
      assert.equal(server.requests.length, 1);
    });
  });
});

describe('Gemini through the API (photo, card, edit)', function () {
  this.timeout(90_000);
  let server: GeminiServer;
  let stack: Stack;
  let rendered: Buffer;
  let image: string;

  before(async () => {
    rendered = await png(120, 160, '#aa5522');
    image = await jpegBase64(400, 500, '#2060c0');
    server = await startGeminiServer((req) => (req.model === TEXT_MODEL
      ? jsonAnswer({ category_id: 'home', product_name: 'Ceramic mug', qualities: ['Keeps drinks warm', 'Matte glaze'] })
      : imageAnswer(rendered)));
    const gemini = new GeminiProvider({ apiKey: server.apiKey, baseUrl: server.baseUrl, imageModel: IMAGE_MODEL, textModel: TEXT_MODEL, timeoutMs: 10_000 });
    stack = await startStack({ providers: { ...allFrom(new LocalRenderer()), image: gemini, text: gemini } });
  });
  beforeEach(() => void server.requests.splice(0));
  after(async () => {
    await stack.stop();
    await server.close();
  });

  const finish = (actionId: number) => stack.temporal.workflow.getHandle(actionWorkflowId(actionId)).result();
  async function stored(call: ReturnType<typeof apiClient>, actionId: number): Promise<Buffer> {
    const status = (await call('GET', `${V1}/status/${actionId}`)).body;
    assert.equal(status.status, 'completed', JSON.stringify(status));
    return Buffer.from(await (await fetch(status.result_url)).arrayBuffer());
  }
  const charges = async (actionId: number) =>
    (await stack.db.query(`SELECT amount FROM spark_ledger WHERE action_id = $1 AND kind = 'charge'`, [actionId])).map((r: { amount: number }) => r.amount);

  it('a photo without product_name: analysed by the text model, rendered by the image model, stored as answered, charged once', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const res = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], locale: 'en', aspect_ratio: '16:9', resolution: '1K' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.detected, { category_id: 'home', concept_id: 'home_interior', product_name: 'Ceramic mug' });
    await finish(res.body.action_id);
    assert.deepEqual(await stored(call, res.body.action_id), rendered);
    assert.deepEqual(server.requests.map((r) => r.model), [TEXT_MODEL, IMAGE_MODEL]);
    const { prompt, images, config } = sent(server.requests[1]);
    assert.deepEqual(config.imageConfig, { aspectRatio: '16:9', imageSize: '1K' });
    assert.equal(images[0].data, image);
    assert.match(prompt, /Ceramic mug/);
    assert.deepEqual(await charges(res.body.action_id), [-5]);
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 15, available: 15, holds: 0 });
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('a card and an edit of it complete with the bytes Gemini answered', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    const card = await call('POST', `${V1}/generate/card`, { images: [{ data: image }], product_name: 'Mug', category_id: 'home', user_text: 'Keeps warm for 12 hours', locale: 'en' });
    assert.equal(card.status, 200, JSON.stringify(card.body));
    await finish(card.body.action_id);
    assert.deepEqual(await stored(call, card.body.action_id), rendered);
    assert.deepEqual(sent(server.requests[0]).config.imageConfig, { aspectRatio: '3:4', imageSize: '2K' });
    assert.match(sent(server.requests[0]).prompt, /Keeps warm for 12 hours/);

    const edited = await png(120, 160, '#22aa55');
    server.script(imageAnswer(edited));
    const edit = await call('POST', `${V1}/edit/${card.body.action_id}`, { instruction: 'Make it greener' });
    assert.equal(edit.status, 200, JSON.stringify(edit.body));
    await finish(edit.body.action_id);
    assert.deepEqual(await stored(call, edit.body.action_id), edited);
    const editRequest = sent(server.requests[1]);
    assert.deepEqual(Buffer.from(editRequest.images[0].data, 'base64'), rendered, 'the edit sends the card as its source');
    assert.match(editRequest.prompt, /Make it greener/);
    assert.deepEqual([await charges(card.body.action_id), await charges(edit.body.action_id)], [[-5], [-3]]);
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('a refusal (blockReason) fails the action with its message and releases the hold; a v2 job shows the code', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    server.script(blocked('PROHIBITED_CONTENT'), blocked('PROHIBITED_CONTENT'));
    const res = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Mug', category_id: 'home' });
    assert.equal((await finish(res.body.action_id)).status, 'failed');
    const status = (await call('GET', `${V1}/status/${res.body.action_id}`)).body;
    assert.deepEqual([status.status, status.error_message], ['failed', 'Gemini refused the request (blockReason PROHIBITED_CONTENT)']);
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 20, available: 20, holds: 0 });

    const job = (await call('POST', '/api/v2/jobs/generate', { images: [{ data: image }], product_name: 'Mug', category_id: 'home' })).body;
    await stack.temporal.workflow.getHandle(jobWorkflowId(job.job_id)).result();
    const done = (await call('GET', job.status_url)).body;
    assert.deepEqual([done.status, done.retryable, done.error_code], ['failed', false, 'blocked']);
    assert.equal(server.requests.length, 2, 'a refusal is never asked again');
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 20, available: 20, holds: 0 });
    await assertMoneyConsistent(stack.db, accountId);
  });

  it('a 503 and then a success: Temporal retries the activity, the action completes, charged once', async () => {
    const { accountId, apiKey } = await newAccount(stack.db, 20);
    const call = apiClient(stack.baseUrl, apiKey);
    server.script(httpError(503, 'The model is overloaded. Please try again later.'));
    const res = await call('POST', `${V1}/generate/photo`, { images: [{ data: image }], product_name: 'Mug', category_id: 'home' });
    assert.equal((await finish(res.body.action_id)).status, 'completed');
    assert.deepEqual(await stored(call, res.body.action_id), rendered);
    assert.deepEqual(server.requests.map((r) => r.model), [IMAGE_MODEL, IMAGE_MODEL]);
    assert.deepEqual(await charges(res.body.action_id), [-5]);
    assert.deepEqual((await call('GET', `${V1}/balance`)).body, { balance: 15, available: 15, holds: 0 });
    await assertMoneyConsistent(stack.db, accountId);
  });
});
