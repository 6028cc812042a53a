/**
 * Stored files (request inputs and rendered results) under one root folder, addressed by a relative key.
 * The interface is small on purpose so that an object-store adapter can stand beside it later.
 */
import { createReadStream } from 'node:fs';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';

export interface StoredAsset { stream: Readable; size: number; contentType: string }

export interface AssetStore {
  put(key: string, bytes: Buffer): Promise<void>;
  read(key: string): Promise<Buffer>;
  open(key: string): Promise<StoredAsset | undefined>;
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
