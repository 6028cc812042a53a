import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pruneDist } from '../../ops/prune-dist';

describe('npm run build: the incremental compile leaves no output of a deleted source behind', () => {
  it('removes the compiled files (and folders left empty) whose source is gone, keeps the rest and the build info', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'imagery-prune-'));
    const put = (file: string) => {
      mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      writeFileSync(path.join(root, file), '');
    };
    for (const file of ['src/kept.ts', 'dist/src/kept.js', 'dist/src/kept.js.map', 'dist/.tsbuildinfo',
      'dist/src/renamed.js', 'dist/src/renamed.js.map', 'dist/test/gone/old.test.js']) put(file);
    const removed = pruneDist(root).sort();
    assert.deepEqual(removed, ['dist/src/renamed.js', 'dist/src/renamed.js.map', 'dist/test/gone/old.test.js']);
    assert.deepEqual(readdirSync(path.join(root, 'dist')).sort(), ['.tsbuildinfo', 'src']);
    assert.deepEqual(readdirSync(path.join(root, 'dist', 'src')).sort(), ['kept.js', 'kept.js.map']);
  });
});
