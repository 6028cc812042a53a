/**
 * A local S3 server for tests and evaluation: Versity's S3 gateway (versitygw) over a folder (its `posix` backend:
 * a bucket is a sub-folder, an object a file, metadata in extended attributes), built once into the tools folder,
 * started on loopback, with the bucket created, and stopped with the process that started it.
 */
import { mkdirSync } from 'node:fs';
import { log } from '../src/log';
import { ensureGoTools } from './tools/go-tools';
import { httpAnswers, startToolProcess } from './tools/tool-process';
import { ensureBucket } from '../src/storage/s3/s3-asset-store';

export const VERSITYGW_VERSION = 'v1.8.0';
const VERSITYGW_TOOLS = {
  packages: [`github.com/versity/versitygw/cmd/versitygw@${VERSITYGW_VERSION}`],
  binaries: { versitygw: `versitygw-${VERSITYGW_VERSION}` },
};
const HEALTH_PATH = '/health';
const START_TIMEOUT_MS = 30_000;

export interface S3GatewayOptions {
  /** Where the gateway binary is found or built (`TOOLS_DIR`). */
  toolsDir: string;
  /** The gateway's root folder: one sub-folder per bucket (created if missing). */
  dir: string;
  port: number;
  /** The root user's credentials (clients sign with these). */
  accessKey: string;
  secretKey: string;
  /** Created if it does not exist. */
  bucket: string;
  /** Where the gateway's own output goes. */
  logFile: string;
  /** Listen address; loopback unless told otherwise. */
  host?: string;
  region?: string;
}

export interface S3Gateway {
  /** The base URL to give an S3 client (`S3_ENDPOINT`, path-style). */
  endpoint: string;
  region: string;
  stop(): Promise<void>;
}

/** Finds or builds the pinned gateway with `go install` (minutes the first time on a machine, then reused). */
export async function ensureS3Gateway(toolsDir: string): Promise<string> {
  return (await ensureGoTools(toolsDir, VERSITYGW_TOOLS)).versitygw;
}

export async function startS3Gateway(options: S3GatewayOptions): Promise<S3Gateway> {
  const binary = await ensureS3Gateway(options.toolsDir);
  const host = options.host ?? '127.0.0.1';
  const region = options.region ?? 'us-east-1';
  mkdirSync(options.dir, { recursive: true });
  const endpoint = `http://${host.includes(':') ? `[${host}]` : host}:${options.port}`;
  const { stop } = await startToolProcess({
    name: 'the S3 gateway',
    binary,
    args: ['--port', `${host}:${options.port}`, '--region', region, '--health', HEALTH_PATH, '--keep-alive', '--quiet', 'posix', options.dir],
    // The root user as the gateway documents it: through the environment, so the secret is not in `ps`.
    env: { ROOT_ACCESS_KEY_ID: options.accessKey, ROOT_SECRET_ACCESS_KEY: options.secretKey },
    logFile: options.logFile,
    answers: () => httpAnswers(`${endpoint}${HEALTH_PATH}`),
    readyTimeoutMs: START_TIMEOUT_MS,
    pollMs: 100,
  });
  try {
    await ensureBucket({
      bucket: options.bucket, endpoint, region, forcePathStyle: true,
      credentials: { accessKeyId: options.accessKey, secretAccessKey: options.secretKey },
    });
  } catch (err) {
    await stop();
    throw new Error(`the S3 gateway could not create bucket ${options.bucket} (${(err as Error).message}); see ${options.logFile}`);
  }
  log.info('S3 gateway ready', { endpoint, bucket: options.bucket, dir: options.dir });
  return { endpoint, region, stop };
}
