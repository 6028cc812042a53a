import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { apiClient } from '../support/fixtures';
import { Stack, startStack } from '../support/stack';

const ROOT = path.resolve(__dirname, '../../..');

describe('OpenAPI document', function () {
  this.timeout(60_000);
  let stack: Stack;
  let document: any;
  before(async () => {
    stack = await startStack({ withWorker: false });
    const res = await apiClient(stack.baseUrl)('GET', '/openapi.json');
    assert.equal(res.status, 200);
    document = res.body;
  });
  after(() => stack.stop());

  it('is OpenAPI 3.1, version 1.0.0, and passes the Redocly linter with no problem at all', async () => {
    assert.equal(document.openapi, '3.1.0');
    assert.equal(document.info.version, '1.0.0');
    const file = path.join(os.tmpdir(), `openapi-${process.pid}.json`);
    await writeFile(file, JSON.stringify(document));
    const { stdout } = await promisify(execFile)(
      path.join(ROOT, 'node_modules/.bin/redocly'), ['lint', file, '--config', path.join(ROOT, '.redocly.yaml'), '--format', 'json'],
      { cwd: ROOT, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } },
    );
    const report = JSON.parse(stdout);
    assert.deepEqual(report.problems.map((p: { ruleId: string; message: string }) => `${p.ruleId}: ${p.message}`), []);
  });

  it('publishes the very schemas AJV enforces', async () => {
    const photo = document.paths['/api/v1/public/generate/photo'].post;
    const body = photo.requestBody.content['application/json'].schema;
    assert.deepEqual(body.required, ['images']);
    assert.equal(body.properties.images.maxItems, 5);
    assert.equal(body.properties.images.items.$ref, '#/components/schemas/ImageInput');
    assert.ok(document.components.schemas.ImageInput.oneOf);
    assert.equal(photo.responses['422'].content['application/json'].schema.$ref, '#/components/schemas/ValidationError');
    for (const status of ['400', '401', '402', '403', '404', '413', '422', '429', '500', '503']) assert.ok(photo.responses[status], `documents ${status}`);
    const status = document.paths['/api/v1/public/status/{action_id}'].get;
    assert.deepEqual(status.parameters[0], { name: 'action_id', in: 'path', required: true, schema: { type: 'integer', minimum: 1, maximum: 2147483647 } });
    assert.deepEqual(document.security, [{ bearerAuth: [] }]);
  });
});
