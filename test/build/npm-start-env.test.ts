/** npm start and the processes the harnesses start (cluster, benchmark, faults) run the service alike. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { NPM_START_ENV } from '../../ops/cluster/service-process';

const ROOT = path.resolve(__dirname, '../../..');

describe("npm start's variables", () => {
  it('are set by every npm script that runs the service, overridable, with the values the harnesses give their processes', () => {
    const scripts: Record<string, string> = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts;
    assert.deepEqual(NPM_START_ENV, { MALLOC_ARENA_MAX: '2' });
    for (const [name, mode] of [['start', 'all'], ['start:api', 'api'], ['start:worker', 'worker']]) {
      const assignments = Object.entries(NPM_START_ENV).map(([key, value]) => `${key}=\${${key}:-${value}} `).join('');
      assert.ok(scripts[name].endsWith(`&& ${assignments}node dist/app/main.js ${mode}`), `${name}: ${scripts[name]}`);
    }
  });
});
