/**
 * Configuration, read once at start from the environment. Every variable is documented in the table of docs/configuration.md.
 */
import os from 'node:os';
import path from 'node:path';
import { configuredSecret } from './secrets';
import { MAX_PRESIGN_SECONDS } from './storage/asset-store';

/** SANDBOX_SPARKS when unset: what a sandbox starts with and is topped up to each day (UTC). */
export const DEFAULT_SANDBOX_SPARKS = 1000;
/** SANDBOX_SLOW_SECONDS when unset: how long the `slow` drill keeps a sandbox render `processing`. */
export const DEFAULT_SANDBOX_SLOW_SECONDS = 30;

/**
 * BATCH_ITEMS_IN_FLIGHT, BATCH_ACCOUNT_ITEMS_IN_FLIGHT and BATCH_YIELD_AT when unset: a batch's items running at
 * once, an account's batches' together, and the interactive demand at which batches yield to it (the requests in
 * flight on average across the API processes, plus the interactive jobs in progress: src/batches/interactive-demand.ts).
 */
export const DEFAULT_BATCH_LIMITS = { itemsInFlight: 50, accountItemsInFlight: 100, yieldAt: 1 };

export interface Config {
  port: number;
  publicBaseUrl: string;
  databaseUrl: string;
  /** When set, the service connects there and never starts a dev server. */
  temporalAddress: string | undefined;
  temporalNamespace: string;
  taskQueue: string;
  /** Local working data: Temporal dev-server database, stored assets, the signing secret. */
  dataDir: string;
  assetsDir: string;
  /** Where the `temporal` CLI is built when none is found; outside the clone so it is reused. */
  toolsDir: string;
  temporalCliPath: string | undefined;
  temporalUiPort: number;
  /** HMAC key for signed asset URLs (32+ characters, no placeholder); when unset a random one is kept in `dataDir`. */
  assetSigningSecret: string | undefined;
  rateLimitPerMinute: number;
  /** Request-body bytes the API process holds at once across all requests; past it, 503 before reading. */
  maxBodyBytesInFlight: number;
  /** The request line and headers must arrive within this many seconds of their first byte (408 and closed). */
  httpHeadersTimeoutSeconds: number;
  /** The whole request, headers and body, must arrive within this many seconds (408 and closed). */
  httpRequestTimeoutSeconds: number;
  /** A request body that sends nothing, or a reader of a streamed answer that takes nothing, for this long is cut. */
  httpIdleTimeoutSeconds: number;
  /** A kept-alive connection with no request for this long is closed. */
  httpKeepAliveTimeoutSeconds: number;
  /** Time the local renderer takes per image, so that processing, cancel and restart can be observed. */
  localRendererDelayMs: number;
  /** `zero`: the benchmark's mode, the local renderer returns a small precomputed asset without work (never production). */
  localRendererCost: 'normal' | 'zero';
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** Encrypts stored secrets (webhook secrets; 32+ characters, no placeholder); when unset a random one is kept in `dataDir`. */
  secretsKey: string | undefined;
  /** First retry interval of webhook deliveries (then doubling). */
  webhookRetryInitialMs: number;
  /** A sandbox's sparks: what it starts with and is topped up to each day (UTC) by housekeeping. */
  sandboxSparks: number;
  /** How long a sandbox render with the `slow` drill stays `processing`. */
  sandboxSlowSeconds: number;
  /** Provider attempts of a v2 job before it ends in `dead_letter`. */
  jobMaxAttempts: number;
  /**
   * A batch's items running at once, the items of an account's running batches together (split among them), and
   * the interactive demand at which batches yield (`null`: they never do; src/batches/interactive-demand.ts).
   */
  batchLimits: { itemsInFlight: number; accountItemsInFlight: number; yieldAt: number | null };
  /** First backoff between a v2 job's attempts (then doubling). */
  jobRetryBackoffMs: number;
  /** The ffmpeg binary of the local renderer; else one on PATH, else the one shipped in node_modules. */
  ffmpegPath: string | undefined;
  /** How old an open action must be before the reconciler fails it for a closed or missing workflow. */
  reconcileGraceSeconds: number;
  /** Seconds a funnel session waits for its next step before it ends by itself. */
  funnelIdleTimeoutSeconds: number;
  /** Which provider serves each capability (`local` keeps everything in-process). */
  imageProvider: 'local' | 'gemini';
  textProvider: 'local' | 'gemini';
  videoProvider: 'local' | 'runway';
  /** Concurrency and rate caps of each provider's task queue (`<NAME>_MAX_CONCURRENCY`, `<NAME>_MAX_PER_SECOND`). */
  providerLimits: (providerName: string) => { maxConcurrent: number; maxPerSecond: number };
  /** Whether `<NAME>_MAX_CONCURRENCY` is set for this provider (else its cap is `PROVIDER_MAX_CONCURRENCY`'s or the default's). */
  providerConcurrencySet: (providerName: string) => boolean;
  /** Runway (`VIDEO_PROVIDER=runway`); without a key the video provider is "not configured". */
  runwayApiKey: string | undefined;
  runwayBaseUrl: string;
  /** Runway's image-to-video model; it decides which ratios exist and whether a last frame can be sent. */
  runwayVideoModel: 'gen4_turbo' | 'gen4.5' | 'gemini_omni_flash_1.1';
  /** Seconds between two polls of a Runway task (Runway asks for no more than one every 5 s). */
  runwayPollIntervalSeconds: number;
  /** Deadline of one Runway API request (submit, poll, cancel). */
  runwayTimeoutMs: number;
  /** Gemini (`IMAGE_PROVIDER` / `TEXT_PROVIDER` `gemini`); without a key a selected Gemini is not configured. */
  geminiApiKey: string | undefined;
  geminiBaseUrl: string;
  geminiImageModel: string;
  geminiTextModel: string;
  /** Deadline of one Gemini request (connect to the last byte of the answer). */
  geminiTimeoutMs: number;
  /** CIDR ranges outbound fetches may reach although they are private or local (empty: none). */
  outboundAllowCidrs: string[];
  /** Where assets are stored: the `assetsDir` folder, or an S3-compatible bucket (the `s3*` settings). */
  assetStore: 'file' | 's3';
  /** Required when `assetStore` is `s3`. */
  s3Bucket: string | undefined;
  /** The S3-compatible service's URL (R2, GCS, MinIO); unset means AWS S3 in `s3Region`. */
  s3Endpoint: string | undefined;
  s3Region: string;
  s3ForcePathStyle: boolean;
  /** Both or neither; neither means the SDK's default credential chain. */
  s3AccessKeyId: string | undefined;
  s3SecretAccessKey: string | undefined;
  /** Keys are stored under this prefix of the bucket ('' or ending in `/`). */
  s3Prefix: string;
  /** How `/assets/<key>` answers with an S3 store: a redirect to a presigned URL, or the bytes through the API. */
  assetDelivery: 'redirect' | 'stream';
  /** Lifetime of the presigned URLs of redirects (1 s to 7 days). */
  s3PresignSeconds: number;
  /** What a worker process serves: `main` (workflows, bookkeeping) and provider names; undefined: all of them. */
  workerQueues: string[] | undefined;
  /** OTLP/HTTP collector (traces go to `<it>/v1/traces`); unset: tracing off, nothing installed. */
  otlpEndpoint: string | undefined;
  /** The `service.name` of the traces. */
  otelServiceName: string;
  /** `GET /metrics` (Prometheus) on its own listener, never on the API's port; undefined: not served. */
  metricsPort: number | undefined;
  /** Where that listener binds: loopback by default, so only the machine (or a sidecar scraper) reads it. */
  metricsHost: string;
  /** Loopback port of the Temporal SDK's own exporter in worker processes, merged into /metrics (METRICS_PORT + 1 by default). */
  temporalMetricsPort: number | undefined;
  /** Live-progress streams (Server-Sent Events) of one API process. */
  liveStreams: LiveStreamLimits;
  /** The account dashboard under `/dashboard` (`DASHBOARD`, on by default). */
  dashboard: DashboardSettings;
  /** Where the dashboard's one-time links are mailed (`SMTP_URL`, nodemailer's URL form); unset: the service log. */
  smtpUrl: string | undefined;
  /** The From of those mails (`MAIL_FROM`; `Product imagery <no-reply@host of PUBLIC_BASE_URL>` by default). */
  mailFrom: string;
}

/** On, sessions idle for 8 hours or 7 days old end, no open sign-up. */
export const DEFAULT_DASHBOARD_SETTINGS: DashboardSettings = {
  enabled: true, sessionIdleSeconds: 8 * 3600, sessionAbsoluteSeconds: 7 * 24 * 3600, trustedProxyHops: 0, signUp: false, signUpSparks: 0,
};

/** The account dashboard's settings (`DASHBOARD_*` variables). */
export interface DashboardSettings {
  enabled: boolean;
  /** A session not used for this long ends (`DASHBOARD_SESSION_IDLE_MINUTES`). */
  sessionIdleSeconds: number;
  /** A session ends this long after sign-in, used or not (`DASHBOARD_SESSION_MAX_HOURS`). */
  sessionAbsoluteSeconds: number;
  /** Proxies in front of the API that append to X-Forwarded-For (`TRUSTED_PROXY_HOPS`): where a client's address is read. */
  trustedProxyHops: number;
  /** Whether anyone may make an account from the sign-in page (`DASHBOARD_SIGN_UP`, off by default). */
  signUp: boolean;
  /** Sparks granted to an account made by sign-up (`DASHBOARD_SIGN_UP_SPARKS`, 0 by default). */
  signUpSparks: number;
}

/** What one API process allows its live-progress streams (`LIVE_*` variables; see api/live/). */
export interface LiveStreamLimits {
  /** A heartbeat comment on an idle stream this often, under the usual proxies' 60 s idle cut. */
  heartbeatSeconds: number;
  /** Streams one API key may hold open in one process; past it, 429 `too_many_streams`. */
  perKey: number;
  /** Streams one process holds open, all keys together; past it, 503 with Retry-After. */
  perProcess: number;
  /** A stream is ended after this long (the client resumes with Last-Event-ID), so none is held for ever. */
  maxSeconds: number;
}

/** The defaults of `LiveStreamLimits` (also the test stacks'). */
export const DEFAULT_LIVE_STREAM_LIMITS: LiveStreamLimits = { heartbeatSeconds: 15, perKey: 100, perProcess: 10_000, maxSeconds: 3600 };

function liveStreamLimits(): LiveStreamLimits {
  const d = DEFAULT_LIVE_STREAM_LIMITS;
  const limits = {
    heartbeatSeconds: timerSeconds('LIVE_HEARTBEAT_SECONDS', d.heartbeatSeconds),
    perKey: int('LIVE_STREAMS_PER_KEY', d.perKey),
    perProcess: int('LIVE_STREAMS_PER_PROCESS', d.perProcess),
    maxSeconds: timerSeconds('LIVE_STREAM_MAX_SECONDS', d.maxSeconds),
  };
  for (const [name, value] of [['LIVE_STREAMS_PER_KEY', limits.perKey], ['LIVE_STREAMS_PER_PROCESS', limits.perProcess]] as const) {
    if (value < 1) throw new Error(`${name} must be at least 1, got ${value}`);
  }
  return limits;
}

/** A non-negative number, fractions allowed (intervals in seconds). */
function num(name: string, fallback: number): number {
  return nonNegative(name, fallback, Number.isFinite, 'number');
}

/** Node's timers hold at most 2^31 - 1 ms; a longer one fires after 1 ms instead (a heartbeat would flood its stream). */
const MAX_TIMER_MS = 2 ** 31 - 1;
const MAX_TIMER_SECONDS = Math.floor(MAX_TIMER_MS / 1000);

/**
 * Seconds for a timer or a deadline: 0.01 s at least (0 would switch a deadline off, in Node as here, which is what
 * these settings exist to prevent) and at most MAX_TIMER_SECONDS (about 24.8 days).
 */
function timerSeconds(name: string, fallback: number): number {
  return within(name, num(name, fallback), 0.01, MAX_TIMER_SECONDS, 'seconds');
}

/** Whole milliseconds for a timer or a deadline, from `min` to MAX_TIMER_MS. */
function timerMs(name: string, fallback: number, min = 1): number {
  return within(name, int(name, fallback), min, MAX_TIMER_MS, 'milliseconds');
}

/** `value` of `name` when it is from `min` to `max`; else the process stops, naming the variable. */
function within(name: string, value: number, min: number, max: number, unit: string): number {
  if (value < min || value > max) throw new Error(`${name} must be from ${min} to ${max} (${unit}), got ${value}`);
  return value;
}

function int(name: string, fallback: number): number {
  return nonNegative(name, fallback, Number.isInteger, 'integer');
}

/** The variable as a number that passes `kind` and is not negative, `fallback` when unset; else the process stops. */
function nonNegative(name: string, fallback: number, kind: (value: number) => boolean, what: 'number' | 'integer'): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!kind(value) || value < 0) throw new Error(`${name} must be a non-negative ${what}, got "${raw}"`);
  return value;
}

/** One of `choices` (the first is the default); anything else stops the process. */
function oneOf<T extends string>(name: string, choices: readonly T[]): T {
  const raw = str(name) ?? choices[0];
  if (!choices.includes(raw as T)) throw new Error(`${name} must be one of ${choices.join(', ')}, got "${raw}"`);
  return raw as T;
}

function str(name: string): string | undefined {
  const raw = process.env[name];
  return raw === undefined || raw === '' ? undefined : raw;
}

/** `true`/`1` or `false`/`0`; anything else stops the process. */
function bool(name: string, fallback: boolean): boolean {
  const raw = str(name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new Error(`${name} must be true or false, got "${raw}"`);
}

/** The S3 settings, checked together: a bucket for `ASSET_STORE=s3`, both keys or neither, a sane prefix and lifetime. */
function s3Settings(assetStore: Config['assetStore']) {
  const bucket = str('S3_BUCKET');
  if (assetStore === 's3' && !bucket) throw new Error('ASSET_STORE=s3 needs S3_BUCKET');
  const endpoint = str('S3_ENDPOINT')?.replace(/\/+$/, '');
  if (endpoint !== undefined && !/^https?:\/\/[^/?#]+(\/[^?#]*)?$/.test(endpoint)) throw new Error(`S3_ENDPOINT must be an http(s) URL, got "${endpoint}"`);
  const accessKeyId = str('S3_ACCESS_KEY_ID');
  const secretAccessKey = str('S3_SECRET_ACCESS_KEY');
  if (!accessKeyId !== !secretAccessKey) throw new Error('set both S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY, or neither (the default credential chain)');
  const prefix = (str('S3_PREFIX') ?? '').replace(/^\/+|\/+$/g, '');
  if (prefix && (!/^[A-Za-z0-9!_.*'()\/-]+$/.test(prefix) || prefix.split('/').some((part) => part === '' || part === '.' || part === '..'))) {
    throw new Error(`S3_PREFIX must be path segments of letters, digits and !_.*'()-, got "${prefix}"`);
  }
  const presignSeconds = int('S3_PRESIGN_SECONDS', 300);
  if (presignSeconds < 1 || presignSeconds > MAX_PRESIGN_SECONDS) {
    throw new Error(`S3_PRESIGN_SECONDS must be 1 to ${MAX_PRESIGN_SECONDS} (7 days, what S3 allows), got ${presignSeconds}`);
  }
  return {
    s3Bucket: bucket,
    s3Endpoint: endpoint,
    s3Region: str('S3_REGION') ?? 'us-east-1',
    s3ForcePathStyle: bool('S3_FORCE_PATH_STYLE', endpoint !== undefined),
    s3AccessKeyId: accessKeyId,
    s3SecretAccessKey: secretAccessKey,
    s3Prefix: prefix ? `${prefix}/` : '',
    s3PresignSeconds: presignSeconds,
  };
}

/**
 * The API's deadlines for its clients (see api/server.ts). Defaults: headers in 20 s (a real client sends them in
 * one packet; 20 s covers a lossy mobile link's retransmissions); a whole request in 15 minutes (four 15 MB images in
 * base64, 84 MB, fit at 0.75 Mbit/s; the largest legal body, 127 MB, at 1.2 Mbit/s); 30 s without a byte of a body
 * or without the reader taking a byte of an answer; 65 s for an idle kept-alive connection (past the 60 s of the
 * usual load balancers).
 */
/** `HTTP_IDLE_TIMEOUT_SECONDS` by default (also where an API's configuration leaves it out). */
export const DEFAULT_HTTP_IDLE_TIMEOUT_SECONDS = 30;

function httpTimeouts() {
  const timeouts = {
    httpHeadersTimeoutSeconds: timerSeconds('HTTP_HEADERS_TIMEOUT_SECONDS', 20),
    httpRequestTimeoutSeconds: timerSeconds('HTTP_REQUEST_TIMEOUT_SECONDS', 900),
    httpIdleTimeoutSeconds: timerSeconds('HTTP_IDLE_TIMEOUT_SECONDS', DEFAULT_HTTP_IDLE_TIMEOUT_SECONDS),
    httpKeepAliveTimeoutSeconds: timerSeconds('HTTP_KEEP_ALIVE_TIMEOUT_SECONDS', 65),
  };
  if (timeouts.httpHeadersTimeoutSeconds > timeouts.httpRequestTimeoutSeconds) {
    throw new Error(`HTTP_HEADERS_TIMEOUT_SECONDS (${timeouts.httpHeadersTimeoutSeconds}) must not be over HTTP_REQUEST_TIMEOUT_SECONDS (${timeouts.httpRequestTimeoutSeconds})`);
  }
  return timeouts;
}

/**
 * `OTEL_EXPORTER_OTLP_ENDPOINT`: an http(s) URL without query or fragment (a typo would otherwise lose every trace
 * quietly), and without credentials: a URL is logged and shown in errors, so they go in `OTEL_EXPORTER_OTLP_HEADERS`
 * (read by the exporter itself), and the refusal does not repeat the URL.
 */
function otlpEndpoint(): string | undefined {
  const raw = str('OTEL_EXPORTER_OTLP_ENDPOINT')?.trim().replace(/\/+$/, '');
  if (raw !== undefined && /^[^:/?#]*:\/\/[^/?#]*@/.test(raw)) {
    throw new Error('OTEL_EXPORTER_OTLP_ENDPOINT must not carry credentials (user:password@host): send them as headers in '
      + 'OTEL_EXPORTER_OTLP_HEADERS, e.g. "Authorization=Basic <base64>"');
  }
  if (raw !== undefined && !/^https?:\/\/[^/?#\s]+(\/[^?#\s]*)?$/.test(raw)) throw new Error(`OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL, got "${raw}"`);
  return raw || undefined;
}

/** METRICS_PORT, METRICS_HOST, TEMPORAL_METRICS_PORT, checked together: ports in range and apart from PORT and each other. */
function metricsSettings(port: number) {
  const portOf = (name: string, fallback?: number) => {
    const value = str(name) === undefined ? fallback : int(name, 0);
    if (value !== undefined && (value < 1 || value > 65535)) throw new Error(`${name} must be a port (1 to 65535), got ${value}`);
    if (value !== undefined && value === port) throw new Error(`${name} must differ from PORT (${port}): metrics are never served on the API's port`);
    return value;
  };
  const metricsPort = portOf('METRICS_PORT');
  const temporalMetricsPort = metricsPort === undefined ? undefined : portOf('TEMPORAL_METRICS_PORT', metricsPort < 65535 ? metricsPort + 1 : undefined);
  if (metricsPort !== undefined && temporalMetricsPort === metricsPort) throw new Error('TEMPORAL_METRICS_PORT must differ from METRICS_PORT');
  const metricsHost = str('METRICS_HOST') ?? '127.0.0.1';
  if (!/^[A-Za-z0-9.:-]+$/.test(metricsHost)) throw new Error(`METRICS_HOST must be a host name or IP address, got "${metricsHost}"`);
  return { metricsPort, metricsHost, temporalMetricsPort };
}

/**
 * Set by `npm run bench` for the processes it starts, and by nothing else: the one way to run the local renderer at
 * zero cost (a grey square for every render, charged at full price), so that no deployment can take it by mistake.
 */
export const BENCH_HARNESS_FLAG = 'IMAGERY_BENCH_HARNESS';

function localRendererCost(): 'normal' | 'zero' {
  const cost = oneOf('LOCAL_RENDERER_COST', ['normal', 'zero'] as const);
  if (cost === 'zero' && str(BENCH_HARNESS_FLAG) !== '1') {
    throw new Error('LOCAL_RENDERER_COST=zero is for the benchmark harness only (npm run bench sets it): every render would charge full price for a grey square');
  }
  return cost;
}

/** A secret variable: unset stays unset (a random one is kept in DATA_DIR); a short or placeholder value stops the process. */
function secret(name: string): string | undefined {
  return configuredSecret(name, str(name));
}

export function loadConfig(overrides: Partial<Config> = {}): Config {
  const port = int('PORT', 3000);
  const dataDir = path.resolve(str('DATA_DIR') ?? '.data');
  const assetStore = oneOf('ASSET_STORE', ['file', 's3'] as const);
  const publicBaseUrl = (str('PUBLIC_BASE_URL') ?? `http://localhost:${port}`).replace(/\/+$/, '');
  const config: Config = {
    port,
    publicBaseUrl,
    databaseUrl: str('DATABASE_URL') ?? 'postgres://postgres@127.0.0.1:5432/imagery',
    temporalAddress: str('TEMPORAL_ADDRESS'),
    temporalNamespace: str('TEMPORAL_NAMESPACE') ?? 'default',
    taskQueue: str('TEMPORAL_TASK_QUEUE') ?? 'imagery',
    dataDir,
    assetsDir: path.resolve(str('ASSETS_DIR') ?? path.join(dataDir, 'assets')),
    toolsDir: path.resolve(str('TOOLS_DIR') ?? path.join(os.homedir(), '.cache', 'product-imagery', 'tools')),
    temporalCliPath: str('TEMPORAL_CLI_PATH'),
    temporalUiPort: int('TEMPORAL_UI_PORT', 8233),
    assetSigningSecret: secret('ASSET_SIGNING_SECRET'),
    rateLimitPerMinute: int('RATE_LIMIT_PER_MINUTE', 100),
    maxBodyBytesInFlight: int('MAX_BODY_BYTES_IN_FLIGHT', 400 * 1024 * 1024),
    ...httpTimeouts(),
    localRendererDelayMs: timerMs('LOCAL_RENDERER_DELAY_MS', 3000, 0),
    localRendererCost: localRendererCost(),
    logLevel: (str('LOG_LEVEL') as Config['logLevel']) ?? 'info',
    ffmpegPath: str('FFMPEG_PATH'),
    secretsKey: secret('SECRETS_KEY'),
    sandboxSparks: int('SANDBOX_SPARKS', DEFAULT_SANDBOX_SPARKS),
    // Well within a render activity's 10 minutes (TIMEOUTS.provider): a longer wait would be a timeout, not `slow`.
    sandboxSlowSeconds: within('SANDBOX_SLOW_SECONDS', int('SANDBOX_SLOW_SECONDS', DEFAULT_SANDBOX_SLOW_SECONDS), 1, 300, 'seconds'),
    jobMaxAttempts: int('JOB_MAX_ATTEMPTS', 3),
    batchLimits: {
      itemsInFlight: within('BATCH_ITEMS_IN_FLIGHT', int('BATCH_ITEMS_IN_FLIGHT', DEFAULT_BATCH_LIMITS.itemsInFlight), 1, 1000, 'items'),
      accountItemsInFlight: within('BATCH_ACCOUNT_ITEMS_IN_FLIGHT', int('BATCH_ACCOUNT_ITEMS_IN_FLIGHT', DEFAULT_BATCH_LIMITS.accountItemsInFlight), 1, 2000, 'items'),
      yieldAt: str('BATCH_YIELD_AT') === 'off' ? null
        : within('BATCH_YIELD_AT', num('BATCH_YIELD_AT', DEFAULT_BATCH_LIMITS.yieldAt), 0.1, 100_000, 'requests and jobs'),
    },
    jobRetryBackoffMs: int('JOB_RETRY_BACKOFF_MS', 5_000),
    webhookRetryInitialMs: int('WEBHOOK_RETRY_INITIAL_MS', 10_000),
    reconcileGraceSeconds: int('RECONCILE_GRACE_SECONDS', 120),
    funnelIdleTimeoutSeconds: Math.max(1, int('FUNNEL_IDLE_TIMEOUT_SECONDS', 86_400)),
    imageProvider: oneOf('IMAGE_PROVIDER', ['local', 'gemini'] as const),
    textProvider: oneOf('TEXT_PROVIDER', ['local', 'gemini'] as const),
    videoProvider: oneOf('VIDEO_PROVIDER', ['local', 'runway'] as const),
    providerLimits: (name) => ({
      maxConcurrent: Math.max(1, int(`${name.toUpperCase()}_MAX_CONCURRENCY`, int('PROVIDER_MAX_CONCURRENCY', 4))),
      maxPerSecond: int(`${name.toUpperCase()}_MAX_PER_SECOND`, int('PROVIDER_MAX_PER_SECOND', 0)),
    }),
    providerConcurrencySet: (name) => str(`${name.toUpperCase()}_MAX_CONCURRENCY`) !== undefined,
    runwayApiKey: str('RUNWAY_API_KEY')?.trim() || undefined,
    runwayBaseUrl: (str('RUNWAY_BASE_URL') ?? 'https://api.dev.runwayml.com').replace(/\/+$/, ''),
    runwayVideoModel: oneOf('RUNWAY_VIDEO_MODEL', ['gen4_turbo', 'gen4.5', 'gemini_omni_flash_1.1'] as const),
    runwayPollIntervalSeconds: num('RUNWAY_POLL_INTERVAL_SECONDS', 6),
    runwayTimeoutMs: timerMs('RUNWAY_TIMEOUT_MS', 30_000),
    geminiApiKey: str('GEMINI_API_KEY'),
    geminiBaseUrl: (str('GEMINI_BASE_URL') ?? 'https://generativelanguage.googleapis.com').replace(/\/+$/, ''),
    geminiImageModel: str('GEMINI_IMAGE_MODEL') ?? 'gemini-3.1-flash-image',
    geminiTextModel: str('GEMINI_TEXT_MODEL') ?? 'gemini-3.5-flash',
    geminiTimeoutMs: timerMs('GEMINI_TIMEOUT_MS', 120_000),
    outboundAllowCidrs: (str('OUTBOUND_ALLOW_CIDRS') ?? '').split(',').map((c) => c.trim()).filter(Boolean),
    assetStore,
    ...s3Settings(assetStore),
    assetDelivery: oneOf('ASSET_DELIVERY', ['redirect', 'stream'] as const),
    workerQueues: str('WORKER_QUEUES')?.split(',').map((q) => q.trim()).filter(Boolean),
    otlpEndpoint: otlpEndpoint(),
    otelServiceName: str('OTEL_SERVICE_NAME') ?? 'product-imagery',
    ...metricsSettings(port),
    liveStreams: liveStreamLimits(),
    dashboard: {
      enabled: oneOf('DASHBOARD', ['on', 'off'] as const) === 'on',
      // At least 5 minutes: a session's last use is written at most once a minute.
      sessionIdleSeconds: Math.max(5, int('DASHBOARD_SESSION_IDLE_MINUTES', DEFAULT_DASHBOARD_SETTINGS.sessionIdleSeconds / 60)) * 60,
      sessionAbsoluteSeconds: Math.max(1, int('DASHBOARD_SESSION_MAX_HOURS', DEFAULT_DASHBOARD_SETTINGS.sessionAbsoluteSeconds / 3600)) * 3600,
      trustedProxyHops: int('TRUSTED_PROXY_HOPS', 0),
      signUp: oneOf('DASHBOARD_SIGN_UP', ['off', 'on'] as const) === 'on',
      signUpSparks: int('DASHBOARD_SIGN_UP_SPARKS', 0),
    },
    smtpUrl: str('SMTP_URL'),
    mailFrom: str('MAIL_FROM') ?? `Product imagery <no-reply@${new URL(publicBaseUrl).hostname}>`,
  };
  return { ...config, ...overrides };
}
