import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { CLIENT_DIR, clientFiles } from '../../ops/client-types';
import { apiClient } from '../support/fixtures';
import { startStack } from '../support/stack';

describe('typed client: its package', function () {
  this.timeout(120_000);

  it('has the types of the document the service serves (`npm run client:types` when this fails)', async () => {
    const stack = await startStack({ withWorker: false });
    try {
      const served = (await apiClient(stack.baseUrl)('GET', '/openapi.json')).body;
      for (const [file, text] of await clientFiles(served)) {
        assert.equal(await readFile(file, 'utf8'), text, `${path.relative(CLIENT_DIR, file)} is stale: run \`npm run client:types\` and commit it`);
      }
    } finally {
      await stack.stop();
    }
  });

  it('packs with `npm pack`: its build, the document and the README, and loads as an ES module', async () => {
    const run = promisify(execFile);
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts=false'], { cwd: CLIENT_DIR, env: { ...process.env, npm_config_loglevel: 'error' } });
    const [packed] = JSON.parse(stdout.slice(stdout.indexOf('[')));
    const files = packed.files.map((f: { path: string }) => f.path).sort();
    assert.equal(packed.name, '@product-imagery/client');
    for (const file of ['README.md', 'openapi.json', 'package.json', 'dist/index.js', 'dist/index.d.ts', 'dist/client.js', 'dist/schema.d.ts', 'dist/webhooks.js']) {
      assert.ok(files.includes(file), `${file} in the package (${files.join(', ')})`);
    }
    assert.deepEqual(files.filter((f: string) => f.startsWith('src/') || f.includes('tsconfig')), [], 'sources and build settings stay out');
    // The built entry, as an ES module under Node (its dependencies resolve from the repository's node_modules here).
    const { stdout: exported } = await run(process.execPath, ['--input-type=module', '-e',
      `const m = await import(${JSON.stringify(path.join(CLIENT_DIR, 'dist', 'index.js'))}); console.log(Object.keys(m).sort().join(','))`]);
    assert.equal(exported.trim(), 'ApiError,DEFAULT_RETRY,WebhookVerificationError,createClient,verifyWebhook');
  });
});
