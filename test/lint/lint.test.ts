/**
 * The lint guards (eslint.config.mjs), each proved by a planted violation: a file that breaks the rule, linted as
 * if it stood in the tree, must be reported with that rule; the same file made right must pass. So a guard cannot
 * quietly stop guarding (a renamed folder, a plugin update, a rule turned off).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { ESLint } from 'eslint';

const ROOT = path.resolve(__dirname, '../../..');

/** Lints `code` as the file `file` (a path in the repository that need not exist); answers the rules reported. */
async function rulesReported(eslint: ESLint, file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  return result.messages.map((m) => m.ruleId ?? `fatal: ${m.message}`);
}

describe('lint: the house rules fire on planted violations', function () {
  this.timeout(120_000);
  let eslint: ESLint;

  before(() => {
    eslint = new ESLint({
      cwd: ROOT,
      // The planted files are not in tsconfig's program: the type-aware rules get them through the default project.
      overrideConfig: { languageOptions: { parserOptions: { projectService: { allowDefaultProject: ['*/planted.ts', '*/*/planted.ts'], maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: 16 } } } },
    });
  });

  const cases: Array<{ rule: string; file: string; bad: string; good: string }> = [
    {
      rule: 'import-x/no-restricted-paths', file: 'src/actions/planted.ts',
      bad: `import { V1_PREFIX } from '../../api/route';\nexport const prefix = V1_PREFIX;\n`,
      good: `import { log } from '../log';\nexport const logger = log;\n`,
    },
    {
      rule: 'import-x/no-restricted-paths', file: 'src/planted.ts',
      bad: `import { startDevServer } from '../ops/dev-server';\nexport const start = startDevServer;\n`,
      good: `import { loadConfig } from './config';\nexport const load = loadConfig;\n`,
    },
    {
      rule: 'import-x/no-restricted-paths', file: 'api/routes/planted.ts',
      bad: `import { editRoutes } from './edit';\nexport const routes = editRoutes;\n`,
      good: `import { V1_PREFIX } from '../route';\nexport const prefix = V1_PREFIX;\n`,
    },
    {
      rule: 'import-x/no-restricted-paths', file: 'activities/planted.ts',
      bad: `import { createApp } from '../api/app';\nexport const app = createApp;\n`,
      good: `import { sqlRow } from '../src/db/sql';\nexport const row = sqlRow;\n`,
    },
    {
      rule: 'import-x/no-restricted-paths', file: 'web/src/planted.ts',
      bad: `import { MAX_ACTIVE_KEYS } from '../../src/accounts/accounts';\nexport const max = MAX_ACTIVE_KEYS;\n`,
      good: `import { API } from './api';\nexport const base = API;\n`,
    },
    {
      rule: 'import-x/no-restricted-paths', file: 'api/dashboard/planted.ts',
      bad: `import { API } from '../../web/src/api';\nexport const base = API;\n`,
      good: `import { DASHBOARD_API_PREFIX } from './session-guard';\nexport const base = DASHBOARD_API_PREFIX;\n`,
    },
    {
      rule: 'import-x/no-restricted-paths', file: 'migrations/planted.ts',
      bad: `import { log } from '../src/log';\nexport const logger = log;\n`,
      good: `import type { MigrationInterface } from 'typeorm';\nexport type M = MigrationInterface;\n`,
    },
    {
      rule: 'import-x/no-unresolved', file: 'api/planted.ts',
      bad: `import { V1_PREFIX } from './routes/route';\nexport const prefix = V1_PREFIX;\n`,
      good: `import { V1_PREFIX } from './route';\nexport const prefix = V1_PREFIX;\n`,
    },
    {
      rule: 'import-x/no-nodejs-modules', file: 'workflows/planted.ts',
      bad: `import { readFileSync } from 'node:fs';\nexport async function plantedWorkflow(): Promise<string> { return readFileSync('x', 'utf8'); }\n`,
      good: `import { sleep } from '@temporalio/workflow';\nexport async function plantedWorkflow(): Promise<void> { await sleep(1); }\n`,
    },
    {
      rule: '@typescript-eslint/no-restricted-imports', file: 'workflows/planted.ts',
      bad: `import { DataSource } from 'typeorm';\nexport async function plantedWorkflow(): Promise<unknown> { return DataSource; }\n`,
      good: `import type { DataSource } from 'typeorm';\nexport async function plantedWorkflow(db?: DataSource): Promise<unknown> { return db; }\n`,
    },
    {
      rule: '@typescript-eslint/no-restricted-imports', file: 'workflows/planted.ts',
      bad: `import { sqlRow } from '../src/db/sql';\nexport async function plantedWorkflow(): Promise<unknown> { return sqlRow; }\n`,
      good: `import { TIMEOUTS } from '../src/temporal/contract';\nexport async function plantedWorkflow(): Promise<unknown> { return TIMEOUTS; }\n`,
    },
    {
      rule: 'import-x/no-useless-path-segments', file: 'workflows/planted.ts',
      bad: `import { sqlRow } from './../src/db/sql';\nexport async function plantedWorkflow(): Promise<unknown> { return sqlRow; }\n`,
      good: `import type { sqlRow } from '../src/db/sql';\nexport async function plantedWorkflow(f?: typeof sqlRow): Promise<unknown> { return f; }\n`,
    },
    {
      rule: 'no-restricted-syntax', file: 'workflows/planted.ts',
      bad: `export async function plantedWorkflow(): Promise<unknown> { return (await import('../src/db/sql')).sqlRow; }\n`,
      good: `import { TIMEOUTS } from '../src/temporal/contract';\nexport async function plantedWorkflow(): Promise<unknown> { return TIMEOUTS; }\n`,
    },
    {
      rule: '@typescript-eslint/no-restricted-imports', file: 'src/temporal/contract.ts',
      bad: `import { sqlRow } from '../db/sql';\nexport const row = sqlRow;\n`,
      good: `import { MAX_FUNNEL_IDEAS } from '../funnels/session';\nimport type { sqlRow } from '../db/sql';\nexport const most = MAX_FUNNEL_IDEAS;\nexport type Row = typeof sqlRow;\n`,
    },
    {
      rule: 'import-x/no-nodejs-modules', file: 'src/temporal/contract.ts',
      bad: `import { randomUUID } from 'node:crypto';\nexport const id = randomUUID();\n`,
      good: `export const id = 'fixed';\n`,
    },
    {
      rule: '@typescript-eslint/no-floating-promises', file: 'workflows/planted.ts',
      bad: `import { sleep } from '@temporalio/workflow';\nexport async function plantedWorkflow(): Promise<void> { sleep(1); }\n`,
      good: `import { sleep } from '@temporalio/workflow';\nexport async function plantedWorkflow(): Promise<void> { await sleep(1); }\n`,
    },
    {
      rule: '@typescript-eslint/no-require-imports', file: 'app/planted.ts',
      bad: `export const config = require('../src/config');\n`,
      good: `export const later = import('../src/config');\n`,
    },
  ];

  for (const { rule, file, bad, good } of cases) {
    it(`${rule} refuses a planted ${file} and passes it made right`, async () => {
      assert.ok((await rulesReported(eslint, file, bad)).includes(rule), `${rule} on ${file}`);
      assert.deepEqual(await rulesReported(eslint, file, good), []);
    });
  }

  it('the tree as committed passes', async () => {
    const results = await new ESLint({ cwd: ROOT }).lintFiles(['.']);
    const problems = results.flatMap((r) => r.messages.map((m) => `${path.relative(ROOT, r.filePath)}:${m.line} ${m.ruleId}: ${m.message}`));
    assert.deepEqual(problems, []);
  });
});
