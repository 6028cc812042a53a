/**
 * Stored files (request inputs and rendered results), addressed by a relative key. The port is small on purpose:
 * `FileAssetStore` (below, one root folder) and `S3AssetStore` (s3/s3-asset-store.ts) stand behind it, chosen by
 * `createAssetStore` from the configuration.
 */
import { mkdir, open as fsOpen, opendir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';

/** What S3 itself accepts as the lifetime of a presigned URL (SigV4: 7 days); configuration checks against it too. */
export const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;

/**
 * Bytes of one object, as an HTTP `Range` asks for them: `start` to `end` inclusive (`end` left out or past the
 * last byte: to the last byte), or the `last` n bytes.
 */
export type ByteRange = { start: number; end?: number } | { last: number };

export interface StoredAsset {
  /** The whole object, or the bytes of `range` when one was asked for. */
  stream: Readable;
  /** The size of the whole object. */
  size: number;
  contentType: string;
  /** The bytes `stream` carries (inclusive) when a range was asked for; a store may serve the whole object instead. */
  range?: { start: number; end: number };
}

export interface StoredObject { key: string; lastModified: Date }

export interface AssetStore {
  put(key: string, bytes: Buffer): Promise<void>;
  /** The whole object; a key that is not there throws `AssetNotFound`. */
  read(key: string): Promise<Buffer>;
  /**
   * A stream of the object (or of `range` of it), undefined when the key is not there. A range that starts past
   * the last byte throws `RangeNotSatisfiable`. The caller must consume or destroy the stream.
   */
  open(key: string, range?: ByteRange): Promise<StoredAsset | undefined>;
  /** Every stored object whose key starts with `prefix`, in no particular order. */
  list(prefix: string): AsyncIterable<StoredObject>;
  /** Deletes one object; a key that is not there is not an error. */
  delete(key: string): Promise<void>;
  /**
   * A URL of the store itself that answers `method` for `key` for `ttlSeconds`, or undefined when the key is not
   * there (stores that can hand out such URLs only: S3).
   */
  presign?(key: string, ttlSeconds: number, method?: 'GET' | 'HEAD'): Promise<string | undefined>;
  /** The origin of the store's presigned URLs (stores that presign). */
  presignedOrigin?(): Promise<string>;
  /** Throws when the store cannot be used (readiness); stores with nothing to reach have none. */
  check?(signal: AbortSignal): Promise<void>;
}

/** `read` of a key that is not stored. */
export class AssetNotFound extends Error {
  constructor(readonly key: string) {
    super(`no asset is stored under ${JSON.stringify(key)}`);
    this.name = 'AssetNotFound';
  }
}

/** `open` with a range that starts past the last byte of an object of `size` bytes. */
export class RangeNotSatisfiable extends Error {
  constructor(readonly size: number) {
    super(`the range starts past the end of the object (${size} bytes)`);
    this.name = 'RangeNotSatisfiable';
  }
}

/** The inclusive bytes of `range` within an object of `size` bytes; throws `RangeNotSatisfiable` when none are. */
export function resolveRange(range: ByteRange, size: number): { start: number; end: number } {
  if ('last' in range) {
    if (range.last <= 0 || size === 0) throw new RangeNotSatisfiable(size);
    return { start: Math.max(0, size - range.last), end: size - 1 };
  }
  if (range.start >= size) throw new RangeNotSatisfiable(size);
  return { start: range.start, end: Math.min(range.end ?? size - 1, size - 1) };
}

const CONTENT_TYPES: Record<string, string> = {
  '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.webp': 'image/webp', '.mp4': 'video/mp4',
};

/** The media type of a key, from its extension. */
export function contentTypeOf(key: string): string {
  return CONTENT_TYPES[path.extname(key)] ?? 'application/octet-stream';
}

/** Keys are relative paths of lowercase letters, digits, `-`, `_`, `.` and `/`; anything else is refused. */
export function isValidAssetKey(key: string): boolean {
  return /^[a-z0-9_-]+(\/[a-z0-9_-][a-z0-9_.-]*)+$/.test(key) && !key.includes('..');
}

export function assertValidAssetKey(key: string): void {
  if (!isValidAssetKey(key)) throw new Error(`invalid asset key ${JSON.stringify(key)}`);
}

/** A `list` prefix: the start of a key (it need not end at a `/`). */
export function assertValidKeyPrefix(prefix: string): void {
  if (!/^[a-z0-9_./-]*$/.test(prefix) || prefix.includes('..')) throw new Error(`invalid asset key prefix ${JSON.stringify(prefix)}`);
}

export class FileAssetStore implements AssetStore {
  constructor(private readonly root: string) {}

  private resolve(key: string): string {
    assertValidAssetKey(key);
    return path.join(this.root, key);
  }

  /**
   * Writes atomically (temp file + rename), so a reader never sees half a file and a retry simply overwrites. The
   * folder is made only when the write finds it missing: most keys go into a folder that exists already.
   */
  async put(key: string, bytes: Buffer): Promise<void> {
    const file = this.resolve(key);
    const tmp = `${file}.${randomUUID()}.tmp`;
    try {
      await writeFile(tmp, bytes);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(tmp, bytes);
    }
    await rename(tmp, file);
  }

  async read(key: string): Promise<Buffer> {
    try {
      return await readFile(this.resolve(key));
    } catch (err) {
      // A folder is not an object (as in a bucket, where `results/1` is only the start of keys).
      if (['ENOENT', 'EISDIR'].includes((err as NodeJS.ErrnoException).code!)) throw new AssetNotFound(key);
      throw err;
    }
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    assertValidKeyPrefix(prefix);
    yield* this.walk(prefix.slice(0, prefix.lastIndexOf('/') + 1), prefix);
  }

  /** The files in folder `folder` (a key prefix ending in `/`, or '' for the root) and below whose keys start with `prefix`. */
  private async *walk(folder: string, prefix: string): AsyncIterable<StoredObject> {
    let entries;
    try {
      entries = await opendir(path.join(this.root, folder));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    for await (const entry of entries) {
      const key = folder + entry.name;
      if (entry.isDirectory() && (`${key}/`.startsWith(prefix) || prefix.startsWith(`${key}/`))) {
        yield* this.walk(`${key}/`, prefix);
      } else if (entry.isFile() && key.startsWith(prefix)) {
        const info = await stat(path.join(this.root, key)).catch(() => undefined); // undefined: deleted meanwhile
        if (info) yield { key, lastModified: info.mtime };
      }
    }
  }

  async delete(key: string): Promise<void> {
    try {
      await rm(this.resolve(key), { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ERR_FS_EISDIR') throw err; // a folder: no object of that key
    }
  }

  async open(key: string, range?: ByteRange): Promise<StoredAsset | undefined> {
    const file = this.resolve(key);
    let handle;
    try {
      handle = await fsOpen(file, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    // The size and the stream come from one open file, so a concurrent put (a rename) cannot mix two versions.
    try {
      const info = await handle.stat();
      if (!info.isFile()) {
        await handle.close();
        return undefined;
      }
      const { size } = info;
      const bytes = range ? resolveRange(range, size) : undefined;
      const stream = handle.createReadStream(bytes ? { start: bytes.start, end: bytes.end } : {});
      return { stream, size, contentType: contentTypeOf(key), ...(bytes ? { range: bytes } : {}) };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }
}
