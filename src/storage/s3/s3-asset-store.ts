/**
 * The asset store on an S3-compatible object store: AWS S3, Cloudflare R2, Google Cloud Storage (XML interop),
 * MinIO, Versity's gateway. Keys live in one bucket, under an optional prefix. The only file that speaks S3: the
 * SDK's errors become the port's (`AssetNotFound`, `RangeNotSatisfiable`, undefined for a missing object) here.
 */
import { Readable } from 'node:stream';
import {
  CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, HeadObjectCommand,
  ListObjectsV2Command, PutObjectCommand, S3Client, type GetObjectCommandOutput,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import {
  AssetNotFound, type AssetStore, assertValidAssetKey, assertValidKeyPrefix, type ByteRange, contentTypeOf,
  MAX_PRESIGN_SECONDS, RangeNotSatisfiable, resolveRange, type StoredAsset, type StoredObject,
} from '../asset-store';

export interface S3Location {
  bucket: string;
  /** The service's base URL (R2, GCS, MinIO, a gateway); left out for AWS S3 in `region`. */
  endpoint?: string;
  region: string;
  /** `https://host/bucket/key` instead of `https://bucket.host/key` (what most S3-compatible servers want). */
  forcePathStyle: boolean;
  /** Static credentials; left out, the SDK's default chain (environment, profile, instance or task role) answers. */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

export interface S3AssetStoreOptions extends S3Location {
  /** Streamed downloads (`open`) in flight at once; more wait for a socket (default 256). */
  maxStreams?: number;
  /** A streamed download whose reader takes nothing for this long is dropped (default 30 s). */
  streamIdleTimeoutMs?: number;
  /** Keys are stored as `<prefix><key>`; a prefix ends in `/` (added when missing). */
  prefix?: string;
  /** Keys per ListObjectsV2 page (S3's own default and maximum: 1000). */
  listPageSize?: number;
}

/** How long a socket to S3 may carry nothing before it is closed (a stalled upload, download or reader). */
const SOCKET_IDLE_TIMEOUT_MS = 30_000;

/**
 * One client per location, with what keeps non-AWS servers working. `sockets` and `idleTimeoutMs` size its pool:
 * streamed downloads get a pool of their own, so that slow readers can never starve uploads, presigning or the
 * readiness check (each stream holds a socket for as long as its reader takes).
 */
export function s3Client(location: S3Location, pool: { sockets?: number; idleTimeoutMs?: number } = {}): S3Client {
  const agent = { keepAlive: true, maxSockets: pool.sockets ?? 50 };
  return new S3Client({
    region: location.region,
    ...(location.endpoint ? { endpoint: location.endpoint } : {}),
    forcePathStyle: location.forcePathStyle,
    ...(location.credentials ? { credentials: location.credentials } : {}),
    // Checksums only where an operation requires them: the newer default (CRC32 on every upload, validated on every
    // download) is refused or mishandled by some S3-compatible services (GCS interop, older MinIO and R2).
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: { connectionTimeout: 5_000, socketTimeout: pool.idleTimeoutMs ?? SOCKET_IDLE_TIMEOUT_MS, httpAgent: agent, httpsAgent: agent },
  });
}

/** The HTTP status S3 answered with, when the error is an answer of S3 (not a network failure). */
function s3Status(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

function isMissingObject(err: unknown): boolean {
  const name = (err as { name?: string }).name;
  return name === 'NoSuchKey' || name === 'NotFound' || (s3Status(err) === 404 && name !== 'NoSuchBucket');
}

/** Creates `bucket` unless it exists already (the local gateway of tests and evaluation). */
export async function ensureBucket(location: S3Location): Promise<void> {
  const client = s3Client(location);
  try {
    await client.send(new HeadBucketCommand({ Bucket: location.bucket }));
  } catch (err) {
    if (s3Status(err) !== 404) throw err;
    await client.send(new CreateBucketCommand({ Bucket: location.bucket })).catch((created) => {
      const name = (created as { name?: string }).name;
      if (name !== 'BucketAlreadyOwnedByYou' && name !== 'BucketAlreadyExists') throw created;
    });
  } finally {
    client.destroy();
  }
}

export class S3AssetStore implements AssetStore {
  readonly client: S3Client;
  /** `open`'s own pool (see `s3Client`). */
  private readonly streams: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly listPageSize: number | undefined;

  constructor(options: S3AssetStoreOptions) {
    this.client = s3Client(options);
    this.streams = s3Client(options, { sockets: options.maxStreams ?? 256, idleTimeoutMs: options.streamIdleTimeoutMs });
    this.bucket = options.bucket;
    this.prefix = options.prefix ? options.prefix.replace(/\/*$/, '/') : '';
    this.listPageSize = options.listPageSize;
  }

  /** Closes both connection pools (tests; a process that ends needs nothing). */
  destroy(): void {
    this.client.destroy();
    this.streams.destroy();
  }

  private objectKey(key: string): string {
    assertValidAssetKey(key);
    return this.prefix + key;
  }

  async put(key: string, bytes: Buffer): Promise<void> {
    // One PUT replaces the object at once: a reader sees the old bytes or the new ones, never a mix.
    await this.client.send(new PutObjectCommand({
      Bucket: this.bucket, Key: this.objectKey(key), Body: bytes, ContentLength: bytes.length, ContentType: contentTypeOf(key),
    }));
  }

  async read(key: string): Promise<Buffer> {
    let answer: GetObjectCommandOutput;
    try {
      answer = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
    } catch (err) {
      if (isMissingObject(err)) throw new AssetNotFound(key);
      throw err;
    }
    const bytes = await answer.Body!.transformToByteArray();
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  async open(key: string, range?: ByteRange): Promise<StoredAsset | undefined> {
    const objectKey = this.objectKey(key);
    if (range && 'last' in range && range.last <= 0) {
      // `bytes=-0` is not a header S3 takes; it selects nothing of any object.
      const size = await this.size(objectKey);
      if (size === undefined) return undefined;
      throw new RangeNotSatisfiable(size);
    }
    let answer: GetObjectCommandOutput;
    try {
      answer = await this.streams.send(new GetObjectCommand({ Bucket: this.bucket, Key: objectKey, Range: range ? rangeHeader(range) : undefined }));
    } catch (err) {
      if (isMissingObject(err)) return undefined;
      if (s3Status(err) === 416) {
        const size = await this.size(objectKey);
        if (size === undefined) return undefined;
        throw new RangeNotSatisfiable(size);
      }
      throw err;
    }
    const stream = answer.Body as Readable;
    const served = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(answer.ContentRange ?? '');
    if (range && served) {
      return { stream, size: Number(served[3]), contentType: contentTypeOf(key), range: { start: Number(served[1]), end: Number(served[2]) } };
    }
    // No range asked, or a server that ignored it (HTTP allows that) and sent the whole object.
    const size = answer.ContentLength ?? 0;
    if (range) {
      try {
        resolveRange(range, size);
      } catch (err) {
        stream.destroy();
        throw err;
      }
    }
    return { stream, size, contentType: contentTypeOf(key) };
  }

  /** The size of an object, undefined when it is not there. */
  private async size(objectKey: string): Promise<number | undefined> {
    try {
      return (await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: objectKey }))).ContentLength ?? 0;
    } catch (err) {
      if (isMissingObject(err)) return undefined;
      throw err;
    }
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    assertValidKeyPrefix(prefix);
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({
        Bucket: this.bucket, Prefix: this.prefix + prefix, ContinuationToken: token, MaxKeys: this.listPageSize,
      }));
      for (const object of page.Contents ?? []) {
        if (object.Key?.startsWith(this.prefix)) yield { key: object.Key.slice(this.prefix.length), lastModified: object.LastModified ?? new Date(0) };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async delete(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
    } catch (err) {
      if (!isMissingObject(err)) throw err; // S3 itself answers 204 for a missing key; some compatible servers 404
    }
  }

  /**
   * A presigned URL that answers `method` for `ttlSeconds` (at most 7 days, as SigV4 allows); undefined when the
   * object is not there (asked with HeadObject first, so the caller answers its own 404 rather than S3's XML).
   */
  async presign(key: string, ttlSeconds: number, method: 'GET' | 'HEAD' = 'GET'): Promise<string | undefined> {
    if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_PRESIGN_SECONDS) {
      throw new Error(`a presigned URL lives 1 to ${MAX_PRESIGN_SECONDS} s, not ${ttlSeconds}`);
    }
    const objectKey = this.objectKey(key);
    if ((await this.size(objectKey)) === undefined) return undefined;
    const input = { Bucket: this.bucket, Key: objectKey };
    const command = method === 'HEAD' ? new HeadObjectCommand(input) : new GetObjectCommand(input);
    return getSignedUrl(this.client, command, { expiresIn: ttlSeconds });
  }

  /** The origin of this store's presigned URLs (the dashboard's Content-Security-Policy lets pages load from it). */
  async presignedOrigin(): Promise<string> {
    return new URL(await getSignedUrl(this.client, new GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey('origin') }), { expiresIn: 60 })).origin;
  }

  /** The bucket answers to these credentials (HeadBucket): wrong credentials or a missing bucket throw. */
  async check(signal: AbortSignal): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal: signal });
  }
}

function rangeHeader(range: ByteRange): string {
  if ('last' in range) return `bytes=-${range.last}`;
  return `bytes=${range.start}-${range.end ?? ''}`;
}
