/** The analysis under the figures quotes only the run it sits under. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { literalFigures, resolveAnalysis } from '../../bench/analysis';
import { backendReport } from '../../bench/report';
import { settingsFor } from '../../bench/settings';

const ROOT = path.resolve(__dirname, '../../..');
const template = readFileSync(path.join(ROOT, 'bench', 'analysis.md'), 'utf8');

describe('benchmark analysis (bench/analysis.md)', () => {
  it('writes out no figure of its own: every one is a placeholder of the run', () => {
    assert.deepEqual(literalFigures(template), []);
    assert.deepEqual(literalFigures('took 12 ms, then 3.5/s and 1,000 MiB; 2 cores'), ['12 ms', '3.5/s', '1,000 MiB']);
  });

  it('fills every placeholder from the report, and says n/a for what the run did not measure', () => {
    const dev = backendReport('dev', { 'svc.status': { values: [900], p50: [], p99: [], max: [], failed: 0 }, 'floor.select': { values: [1000], p50: [], p99: [], max: [], failed: 0 } },
      settingsFor('smoke'), []);
    const text = resolveAnalysis(template, { backends: [dev] });
    assert.doesNotMatch(text, /\{\{/);
    assert.match(text, /`GET \/status\/\{id\}` at 0\.90 and n\/a of it/);
    assert.throws(() => resolveAnalysis('{{dev svc.nothing median}}', { backends: [dev] }), /no figure svc.nothing/);
    assert.throws(() => resolveAnalysis('{{dev svc.status mean}}', { backends: [dev] }), /no field mean/);
  });
});
