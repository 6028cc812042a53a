/**
 * Stored files (request inputs and rendered results) under one root folder, addressed by a relative key.
 * The interface is small on purpose so that an object-store adapter can stand beside it later.
 */
import { createReadStream } from 'node:fs';
import { mkdir, opendir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';

export interface StoredAsset { stream: Readable; size: number; contentType: string }

export interface StoredObject { key: string; lastModified: Date }

export interface AssetStore {
  put(key: string, bytes: Buffer): Promise<void>;
  read(key: string): Promise<Buffer>;
  open(key: string): Promise<StoredAsset | undefined>;
  /** Every stored object whose key starts with `prefix`, in no particular order. */
  list(prefix: string): AsyncIterable<StoredObject>;
  /** Deletes one object; a key that is not there is not an error. */
  delete(key: string): Promise<void>;
}

const CONTENT_TYPES: Record<string, string> = {
  '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.webp': 'image/webp', '.mp4': 'video/mp4',
};

/** Keys are relative paths of lowercase letters, digits, `-`, `_`, `.` and `/`; anything else is refused. */
export function isValidAssetKey(key: string): boolean {
  return /^[a-z0-9_-]+(\/[a-z0-9_-][a-z0-9_.-]*)+$/.test(key) && !key.includes('..');
}

export class FileAssetStore implements AssetStore {
  constructor(private readonly root: string) {}

  private resolve(key: string): string {
    if (!isValidAssetKey(key)) throw new Error(`invalid asset key ${JSON.stringify(key)}`);
    return path.join(this.root, key);
  }

  /** Writes atomically (temp file + rename), so a reader never sees half a file and a retry simply overwrites. */
  async put(key: string, bytes: Buffer): Promise<void> {
    const file = this.resolve(key);
    await mkdir(path.dirname(file), { recursive: true });
    const tmp = `${file}.${randomUUID()}.tmp`;
    await writeFile(tmp, bytes);
    await rename(tmp, file);
  }

  async read(key: string): Promise<Buffer> {
    return readFile(this.resolve(key));
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    if (!/^[a-z0-9_./-]*$/.test(prefix) || prefix.includes('..')) throw new Error(`invalid asset key prefix ${JSON.stringify(prefix)}`);
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
    await rm(this.resolve(key), { force: true });
  }

  async open(key: string): Promise<StoredAsset | undefined> {
    const file = this.resolve(key);
    try {
      const info = await stat(file);
      return {
        stream: createReadStream(file),
        size: info.size,
        contentType: CONTENT_TYPES[path.extname(file)] ?? 'application/octet-stream',
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }
}
