import type { IncomingMessage } from 'node:http';
import type { Context, Middleware } from 'koa';
import { AppError, badRequest, generationUnavailable, ValidationFailed, type ValidationIssue } from '../../src/errors';
import type { BodyBytesInFlight, BodyReservation } from './body-bytes-in-flight';
import { MIN_BODY_BYTES_PER_SECOND, watchBodyPace } from './body-pace';

/** Deepest nesting of arrays and objects a body may have (the deepest legal one has 3 levels). */
export const MAX_JSON_DEPTH = 32;
/** Most array elements plus object members a body may have (a legal one has a few dozen). */
export const MAX_JSON_VALUES = 10_000;

const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why Postgres cannot store a string, if it cannot: text refuses U+0000, json an unpaired surrogate (`"\ud800"`). */
function unstorable(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain the NUL character';
  if (UNPAIRED_SURROGATE.test(text)) return 'must not contain an unpaired UTF-16 surrogate';
  return undefined;
}

/** The first string (value or key) of a request value that Postgres could not store, as a 422 issue. */
export function findUnstorable(value: unknown, loc: (string | number)[]): ValidationIssue | undefined {
  // Depth-first with its own stack; each step points at its parent, so the path is built only for a hit.
  interface Step { value: unknown; key?: string | number; parent?: Step }
  const pathOf = (step: Step) => {
    const keys: (string | number)[] = [];
    for (let at: Step | undefined = step; at?.parent; at = at.parent) keys.push(at.key!);
    return [...loc, ...keys.reverse()];
  };
  const pending: Step[] = [{ value }];
  while (pending.length > 0) {
    const step = pending.pop()!;
    const item = step.value;
    if (typeof item === 'string') {
      const msg = unstorable(item);
      if (msg) return { loc: pathOf(step), msg, type: 'pattern' };
    } else if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) pending.push({ value: item[i], key: i, parent: step });
    } else if (item && typeof item === 'object') {
      for (const [key, child] of Object.entries(item).reverse()) {
        pending.push({ value: child, key, parent: step }, { value: key, key, parent: step }); // the key is checked first
      }
    }
  }
  return undefined;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Index of the quote that closes the string opened at `start` (text.length when there is none). */
function stringEnd(text: string, start: number): number {
  for (let at = text.indexOf('"', start + 1); at >= 0; at = text.indexOf('"', at + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
  return text.length;
}

/**
 * Why JSON text is too deep or too wide to parse, if it is: counted on the text (strings skipped), so a hostile
 * body costs neither heap for millions of values nor stack in the walks that follow.
 */
function jsonShapeIssue(text: string, maxValues = MAX_JSON_VALUES): { msg: string; type: string } | undefined {
  return jsonShape(text, maxValues).issue;
}

/** jsonShapeIssue's walk: the issue, if any, and the values counted (up to where it stopped). */
function jsonShape(text: string, maxValues: number): { issue?: { msg: string; type: string }; values: number } {
  let depth = 0;
  let values = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = stringEnd(text, i);
    else if (c === 0x5b || c === 0x7b) { // [ {
      if (++depth > MAX_JSON_DEPTH) return { issue: { msg: `must not be nested more than ${MAX_JSON_DEPTH} levels deep`, type: 'maxDepth' }, values };
      values++;
    } else if (c === 0x5d || c === 0x7d) depth--; // ] }
    else if (c === 0x2c) values++; // ,
    if (values > maxValues) return { issue: { msg: `must not hold more than ${maxValues} values`, type: 'maxValues' }, values };
  }
  return { values };
}

/** Seconds a request refused for lack of body room is asked to wait (`Retry-After`). */
const BODY_BUSY_RETRY_AFTER_SECONDS = 5;

const tooLarge = (limit: { bytes: number; code: string }) =>
  new AppError(413, limit.code, `The request body is over ${limit.bytes} bytes, the limit of this endpoint`);
/**
 * A body that stalled or trickled: 408 with `Connection: close`, so the connection ends with the answer (the rest
 * of the body is never read) and gives back its socket.
 */
const timedOut = (idleMs: number) => new AppError(408, 'request_timeout',
  `The request body stopped arriving: nothing for ${idleMs / 1000} s, or under ${MIN_BODY_BYTES_PER_SECOND / 1024} KiB/s on average after the first ${idleMs / 1000} s`,
  undefined, { Connection: 'close' });
const noRoom = () => generationUnavailable(
  'The server is receiving as many large request bodies as it can hold at once; try again shortly', BODY_BUSY_RETRY_AFTER_SECONDS);

/**
 * Reads the request up to `limit` bytes, each byte reserved before it is kept: 'over_limit' past the limit, 'busy'
 * when the process has no room left for it. A refused body's rest is dropped as it arrives (as Node drops any body
 * left unread), never buffered: the connection stays whole, so the client can finish sending and read the answer.
 * With a Content-Length the bytes go straight into one buffer of that size, so no chunk list is copied into a second.
 */
function readCapped(req: IncomingMessage, limit: number, declared: number, reservation: BodyReservation, idleMs: number): Promise<Buffer | 'over_limit' | 'busy' | 'timed_out'> {
  return new Promise((resolve, reject) => {
    const whole = declared > 0 ? Buffer.allocUnsafe(declared) : undefined;
    let chunks: Buffer[] = [];
    let size = 0;
    const pace = watchBodyPace(idleMs, () => finish('timed_out'));
    const finish = (result?: Buffer | 'over_limit' | 'busy' | 'timed_out', err?: Error) => {
      pace.stop();
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onError);
      if (err) reject(err);
      else resolve(result!);
    };
    const onData = (chunk: Buffer) => {
      pace.arrived(chunk.length);
      const total = size + chunk.length;
      const refusal = total > limit ? 'over_limit' : total > reservation.bytes && !reservation.take(total - reservation.bytes) ? 'busy' : undefined;
      if (refusal) {
        finish(refusal);
        req.resume();
        return;
      }
      if (whole) chunk.copy(whole, size);
      else chunks.push(chunk);
      size = total;
    };
    const onEnd = () => {
      if (whole) return finish(whole.subarray(0, size));
      const body = Buffer.concat(chunks, size);
      chunks = [];
      finish(body);
    };
    const onError = () => finish(undefined, badRequest('The request body was cut short'));
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onError);
  });
}

/** The body as text; only the text outlives this call, so the bytes can be collected while the JSON is parsed. */
async function readText(req: IncomingMessage, limit: { bytes: number; code: string }, declared: number, reservation: BodyReservation, idleMs: number): Promise<string> {
  const raw = await readCapped(req, limit.bytes, declared, reservation, idleMs);
  if (raw === 'over_limit') throw tooLarge(limit);
  if (raw === 'busy') throw noRoom();
  if (raw === 'timed_out') throw timedOut(idleMs);
  return raw.toString('utf8');
}

/** What a route's body may be besides its byte limit: more JSON values, or NDJSON lines (Route). */
export interface BodyShape { values?: number; ndjsonLines?: number }

/** NDJSON issues reported at most (a body of 10,000 broken lines answers the first ones and how many there are). */
const MAX_LINE_ISSUES = 100;

/**
 * An NDJSON body as `{items}`: each non-empty line one JSON object, each checked as a JSON body is; every broken
 * line is reported at once (422, `loc` `["body", <line number>]`, from 1), and more lines than `maxLines` is 422.
 */
function parseNdjson(text: string, maxLines: number, maxValues: number): { body: { items: unknown[] }; lines: NdjsonLines } {
  const issues: { loc: (string | number)[]; msg: string; type: string }[] = [];
  const items: unknown[] = [];
  const numbers: number[] = [];
  const bytes: number[] = [];
  let broken = 0;
  let values = 0;
  const report = (issue: { loc: (string | number)[]; msg: string; type: string }) => {
    broken++;
    if (issues.length < MAX_LINE_ISSUES) issues.push(issue);
  };
  // Line by line without splitting the text into an array first; every line counts (a blank one too), so that a
  // body of newlines is refused as soon as it passes the limit.
  let number = 0;
  for (let from = 0; from < text.length;) {
    const newline = text.indexOf('\n', from);
    const to = newline < 0 ? text.length : newline;
    const raw = text.slice(from, to);
    from = to + 1;
    if (++number > maxLines) {
      throw new ValidationFailed([{ loc: ['body'], msg: `must not hold more than ${maxLines} lines (line ${number} is one more)`, type: 'maxItems' }]);
    }
    const line = raw.trim();
    if (line === '') continue;
    const shape = jsonShape(line, MAX_JSON_VALUES);
    if (shape.issue) {
      report({ loc: ['body', number], ...shape.issue });
      continue;
    }
    values += shape.values;
    if (values > maxValues) throw new ValidationFailed([{ loc: ['body'], msg: `must not hold more than ${maxValues} values in all`, type: 'maxValues' }]);
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      report({ loc: ['body', number], msg: 'is not valid JSON', type: 'json' });
      continue;
    }
    if (!value || typeof value !== 'object' || Array.isArray(value)) {
      report({ loc: ['body', number], msg: 'must be a JSON object', type: 'type' });
      continue;
    }
    const unfit = findUnstorable(value, ['body', number]);
    if (unfit) {
      report(unfit);
      continue;
    }
    items.push(value);
    numbers.push(number);
    bytes.push(Buffer.byteLength(line));
  }
  if (broken > issues.length) issues.push({ loc: ['body'], msg: `${broken - issues.length} more lines are broken`, type: 'json' });
  if (issues.length > 0) throw new ValidationFailed(issues);
  if (items.length === 0) throw new ValidationFailed([{ loc: ['body'], msg: 'must hold at least one line', type: 'minItems' }]);
  return { body: { items }, lines: { numbers, bytes } };
}

/** Where each item of an NDJSON body was: its line number and its length in bytes (`ctx.state.ndjson`). */
export interface NdjsonLines { numbers: number[]; bytes: number[] }

/** The parsed body (undefined when empty), checked for shape and storable strings; the text dies with this call. */
async function readJson(
  ctx: Context, limit: { bytes: number; code: string }, declared: number, reservation: BodyReservation, idleMs: number, shapeOf: BodyShape,
): Promise<unknown> {
  const text = await readText(ctx.req, limit, declared, reservation, idleMs);
  if (text.trim() === '') return undefined;
  if (shapeOf.ndjsonLines && ctx.is('application/x-ndjson')) {
    const { body, lines } = parseNdjson(text, shapeOf.ndjsonLines, shapeOf.values ?? MAX_JSON_VALUES);
    ctx.state.ndjson = lines;
    return body;
  }
  if (!ctx.is('application/json', 'json', '+json') && ctx.get('Content-Type')) {
    throw badRequest(`Content-Type must be application/json${shapeOf.ndjsonLines ? ' or application/x-ndjson' : ''}`);
  }
  const shape = jsonShapeIssue(text, shapeOf.values);
  if (shape) throw new ValidationFailed([{ loc: ['body'], ...shape }]);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw badRequest('The request body is not valid JSON');
  }
  const unfit = findUnstorable(body, ['body']);
  if (unfit) throw new ValidationFailed([unfit]);
  return body;
}

/**
 * Reads a JSON body into `ctx.request.body`, refusing (413 `limit.code`) one over `limit.bytes` by its
 * Content-Length or while streaming, (503) one the process has no room for in `inFlight` (by its Content-Length,
 * before reading, or while streaming), and (422) JSON nested deeper than MAX_JSON_DEPTH or holding more than
 * MAX_JSON_VALUES values, before it is parsed; (408, the connection closed) one that sends nothing for `idleMs`, or
 * falls more than `idleMs` behind MIN_BODY_BYTES_PER_SECOND. The body's bytes stay reserved until the handler has
 * finished.
 */
export function jsonBody(limit: { bytes: number; code: string }, inFlight: BodyBytesInFlight, idleMs: number, shape: BodyShape = {}): Middleware {
  return async (ctx, next) => {
    if (!['POST', 'PUT', 'PATCH'].includes(ctx.method)) return next();
    const declared = Number(ctx.get('Content-Length') || 0);
    if (declared > limit.bytes) throw tooLarge(limit);
    const reservation = inFlight.reserve();
    try {
      if (!reservation.take(declared)) throw noRoom();
      (ctx.request as { body?: unknown }).body = await readJson(ctx, limit, declared, reservation, idleMs, shape);
      await next();
    } finally {
      reservation.release();
    }
  };
}
