/**
 * docker-compose.yml cannot be run here (no Docker engine), so it is checked as far as that goes without one:
 * against the Compose Specification's own JSON Schema (the file docker compose validates with, from compose-go),
 * and against the service: the images match the versions the cluster runs, every variable it sets is documented,
 * every storage, provider, worker, metrics and tracing variable reaches the containers, and the search attributes are the workflows' own.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { parse } from 'yaml';
import { SEARCH_ATTRIBUTE_REGISTRATIONS } from '../../src/temporal/contract';
import { goModuleDir, TEMPORAL_SERVER_VERSION } from '../../ops/temporal-server';
import { TEMPORAL_UI_VERSION } from '../../ops/ui-server';

const ROOT = path.resolve(__dirname, '../../..');
const COMPOSE_GO = { module: 'github.com/compose-spec/compose-go/v2', version: 'v2.16.2' };

describe('docker-compose.yml', function () {
  this.timeout(120_000); // the schema's module may be downloaded first
  // `merge`: the `<<: *service` keys, resolved as Compose resolves them.
  const compose = parse(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true });

  it('is valid against the Compose Specification schema', async () => {
    const dir = await goModuleDir(COMPOSE_GO.module, COMPOSE_GO.version);
    const schema = JSON.parse(readFileSync(path.join(dir, 'schema', 'compose-spec.json'), 'utf8'));
    const validate = new Ajv2020({ strict: false, allErrors: true, validateFormats: false }).compile(schema);
    assert.ok(validate(compose), JSON.stringify(validate.errors, null, 2));
    const broken = structuredClone(compose) as { services: { api: { ports: unknown } } };
    broken.services.api.ports = 'not a list';
    assert.equal(validate(broken), false, 'the schema does reject a broken file');
  });

  it('depends only on services it defines, and uses the versions the cluster runs', () => {
    const services = compose.services as Record<string, { image?: string; depends_on?: Record<string, unknown> }>;
    for (const [name, service] of Object.entries(services)) {
      for (const dependency of Object.keys(service.depends_on ?? {})) assert.ok(services[dependency], `${name} depends on ${dependency}`);
    }
    assert.equal(services.temporal.image, `temporalio/auto-setup:${TEMPORAL_SERVER_VERSION.slice(1)}`);
    assert.equal(services['temporal-ui'].image, `temporalio/ui:${TEMPORAL_UI_VERSION.slice(1)}`);
  });

  it('sets only variables docs/configuration.md documents, and registers the workflows\' search attributes', () => {
    // The first cells of the tables of docs/configuration.md, where variables are documented (some rows name two).
    const documented = readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8').split('\n')
      .filter((line) => line.startsWith('| `')).map((line) => line.split('|')[1]);
    const passed = Object.keys(compose['x-service'].environment);
    for (const variable of passed) {
      assert.ok(documented.some((cell) => cell.includes(`\`${variable}\``)), `${variable} is in a table of docs/configuration.md`);
    }
    // And the other way round for what a deployment must be able to set: storage, providers, worker queues, metrics, tracing.
    const deploymentVariables = documented.flatMap((cell) => [...cell.matchAll(/`((?:ASSET|S3|GEMINI|RUNWAY|WORKER|METRICS|OTEL)_[A-Z_]+|[A-Z]+_PROVIDER)`/g)].map((m) => m[1]));
    assert.ok(deploymentVariables.length > 15, 'the table was read');
    for (const variable of deploymentVariables) assert.ok(passed.includes(variable), `${variable} reaches the containers`);
    const script: string = compose.services['temporal-setup'].command.join('\n');
    const registered = Object.fromEntries([...script.matchAll(/\b([A-Z][A-Za-z]+)=(Int|Keyword)\b/g)].map((m) => [m[1], m[2]]));
    assert.deepEqual(registered, SEARCH_ATTRIBUTE_REGISTRATIONS);
    // Metrics inside the network only: the API publishes its API port alone.
    assert.deepEqual(compose.services.api.ports, ['3000:3000']);
    for (const name of ['api', 'worker']) assert.deepEqual(compose.services[name].expose, ['9464'], `${name} exposes its metrics port`);
    // The local renderer's 3 s demo pause is npm start's, not a deployment's.
    assert.equal(compose['x-service'].environment.LOCAL_RENDERER_DELAY_MS, '${LOCAL_RENDERER_DELAY_MS:-0}');
  });
});

describe('Dockerfile', () => {
  it('copies every folder the image build compiles (and the dashboard it builds), builds with tsconfig.build.json and runs what it builds', () => {
    const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    const build = JSON.parse(readFileSync(path.join(ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] };
    const copied = [...dockerfile.matchAll(/^COPY (\S+) \.\/\1$/gm)].map((m) => m[1]);
    assert.deepEqual([...build.include, 'web'].sort(), [...copied].sort());
    assert.match(dockerfile, /^RUN npx tsc -p tsconfig\.build\.json && node dist\/ops\/build-web\.js/m);
    const entry = /^ENTRYPOINT \["node", "([^"]+)"\]/m.exec(dockerfile)![1];
    assert.ok(build.include.includes(entry.split('/')[1]), `${entry} is compiled by the image build`);
  });
});
