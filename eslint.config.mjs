// The house rules that a reader should not have to remember (docs/architecture.md):
// - every import points down: app -> api, activities, workflows -> src -> nothing above it; ops only from app and tests;
// - web/ (the dashboard, in the browser) and the service never import each other;
// - a route never imports another route;
// - workflow code is deterministic: no Node built-ins and no package but Temporal's workflow API; from the service,
//   only `import type` and the pure modules of WORKFLOW_SAFE;
// - a promise is awaited, returned or explicitly voided.
// test/lint/lint.test.ts plants a violation of each rule and expects it to be reported.
import importX, { createNodeResolver } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/** Modules of `src/` that workflow code may import values from: constants and types, no I/O, nothing that imports I/O. */
export const WORKFLOW_SAFE = ['src/temporal/contract.ts', 'src/funnels/session.ts'];

/** Packages that workflow code may import values from (the sandbox gives them deterministic behaviour). */
const WORKFLOW_PACKAGES = /^(?!@temporalio\/workflow$|@temporalio\/common$|@opentelemetry\/api$|\.{1,2}\/)/.source;

/** The restricted-imports pattern that keeps workflow code to WORKFLOW_PACKAGES (values; types from anywhere). */
const ONLY_WORKFLOW_PACKAGES = {
  regex: WORKFLOW_PACKAGES,
  allowTypeImports: true,
  message: 'workflow code imports values only from @temporalio/workflow, @temporalio/common and @opentelemetry/api (types from anywhere)',
};

const ABOVE_SRC = ['./app', './ops', './api', './activities', './workflows'];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'clients/**/dist/**', 'test/lint/planted/**'] },
  {
    files: ['**/*.ts', 'web/**/*.tsx'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin, 'import-x': importX },
    // Resolves `./x` to `x.ts`: an import the rules cannot resolve is one they cannot judge.
    settings: { 'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.tsx', '.js', '.json', '.node'] })] },
    rules: {
      // Relative imports only (tsc checks packages): a path the boundary rules cannot resolve is one they cannot judge.
      'import-x/no-unresolved': ['error', { ignore: ['^[^.]'] }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-require-imports': 'error',
      'import-x/no-duplicates': 'error',
      // `./../src/x` is `../src/x`: one spelling per path, so that the path rules below see the real one.
      'import-x/no-useless-path-segments': 'error',
      'import-x/no-restricted-paths': ['error', {
        basePath: import.meta.dirname,
        zones: [
          { target: './migrations', from: ['./src', ...ABOVE_SRC], message: 'migrations stand alone (they run against any later code)' },
          { target: './src', from: ABOVE_SRC, message: 'src/ is the library: it imports nothing above it' },
          { target: './api', from: ['./app', './ops', './activities', './workflows'], message: 'api/ is HTTP over src/: it imports src/ only' },
          { target: './activities', from: ['./app', './ops', './api', './workflows'], message: 'activities/ are adapters over src/: they import src/ only' },
          { target: './workflows', from: ['./app', './ops', './api'], message: 'workflows/ import Temporal, their contract and `import type` only' },
          { target: './api/routes', from: './api/routes', message: 'a route never imports another route: share through src/ or an api/ module' },
          // The dashboard is a program of its own, in the browser: it talks to the service over HTTP only.
          { target: './web', from: ['./src', './test', './bench', ...ABOVE_SRC], message: 'web/ runs in the browser: it reaches the service over HTTP, never by import' },
          { target: ['./src', './test', './bench', ...ABOVE_SRC], from: './web', message: 'nothing of the service imports the dashboard\'s browser code' },
          { target: './clients', from: ['./src', './test', './bench', './web', ...ABOVE_SRC], message: 'the typed client reaches the service over HTTP, never by import (its types come from the OpenAPI document)' },
          { target: ['./src', './bench', './web', ...ABOVE_SRC.filter((dir) => dir !== './ops')], from: './clients', message: 'the service never imports its client (ops/client-types.ts writes it; tests use it)' },
        ],
      }],
    },
  },
  {
    // The typed client runs on Node 20 and in browsers: web platform APIs only, no Node built-in.
    files: ['clients/typescript/src/**/*.ts'],
    rules: {
      'import-x/no-nodejs-modules': 'error',
      'import-x/no-unresolved': 'off', // ES module specifiers name the emitted `.js` files; both tsc builds resolve them
    },
  },
  {
    // Workflow code, and the modules it may import values from, run in Temporal's deterministic sandbox: no Node
    // built-in, no import() (which no rule here could follow).
    files: ['workflows/**/*.ts', ...WORKFLOW_SAFE],
    rules: {
      'import-x/no-nodejs-modules': 'error',
      'no-restricted-syntax': ['error', { selector: 'ImportExpression', message: 'workflow code imports statically (import() escapes the lint and the sandbox)' }],
    },
  },
  {
    // The pure modules of WORKFLOW_SAFE take values only from the allowed packages and from each other.
    files: WORKFLOW_SAFE,
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [
          ONLY_WORKFLOW_PACKAGES,
          {
            regex: '^\\.{1,2}/(?!(temporal/contract|funnels/session|\\.\\./temporal/contract|\\.\\./funnels/session)$)',
            allowTypeImports: true,
            message: `a module workflows import takes values only from the other modules of WORKFLOW_SAFE (${WORKFLOW_SAFE.join(', ')}); types from anywhere`,
          },
        ],
      }],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [
          ONLY_WORKFLOW_PACKAGES,
          {
            regex: `^\\.\\./(?!src/temporal/contract$|src/funnels/session$)`,
            allowTypeImports: true,
            message: `workflow code imports values only from other workflow files and ${WORKFLOW_SAFE.join(', ')} (types from anywhere)`,
          },
        ],
      }],
    },
  },
);
