import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cachedWorkflowBundle, DEFAULT_BUNDLE_SOURCES } from '../../app/workflow-bundle';

describe('the workflow bundle, made once per version of the code', function () {
  this.timeout(120_000);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'imagery-bundle-'));
  const extra = mkdtempSync(path.join(os.tmpdir(), 'imagery-bundle-sources-'));
  const sources = { ...DEFAULT_BUNDLE_SOURCES, sources: [...DEFAULT_BUNDLE_SOURCES.sources, extra], cacheDir: path.join(dir, 'cache') };
  after(() => [dir, extra].forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('is kept under the hash of its sources, found again at the next start, and made anew when a source changes', async () => {
    writeFileSync(path.join(extra, 'a.js'), 'module.exports = 1;\n');
    const first = await cachedWorkflowBundle(sources);
    assert.ok('codePath' in first && first.codePath.startsWith(sources.cacheDir), JSON.stringify(first).slice(0, 200));
    const made = statSync(first.codePath);
    assert.ok(made.size > 0);
    assert.deepEqual(await cachedWorkflowBundle(sources), first);
    assert.equal(statSync(first.codePath).mtimeMs, made.mtimeMs, 'found, not bundled again');
    writeFileSync(path.join(extra, 'a.js'), 'module.exports = 2;\n');
    const changed = await cachedWorkflowBundle(sources);
    assert.ok('codePath' in changed && changed.codePath !== first.codePath);
  });

  it('is made again when a crash of the machine left its file empty', async () => {
    const first = await cachedWorkflowBundle(sources);
    assert.ok('codePath' in first);
    writeFileSync(first.codePath, '');
    assert.deepEqual(await cachedWorkflowBundle(sources), first);
    assert.ok(statSync(first.codePath).size > 0);
  });

  it('is made in memory where the cache cannot be written', async () => {
    const file = path.join(dir, 'a-file');
    writeFileSync(file, '');
    const bundle = await cachedWorkflowBundle({ ...sources, cacheDir: path.join(file, 'cache') });
    assert.ok('code' in bundle && bundle.code.includes('actionWorkflow'));
  });
});
