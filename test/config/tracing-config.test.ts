/** Tracing's configuration: off unless an OTLP endpoint is set, and a malformed endpoint stops the process. */
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config';
import { withEnv } from '../support/fixtures';

const configWith = (env: Record<string, string>) => withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_SERVICE_NAME: '', ...env }, () => loadConfig());

describe('tracing configuration', () => {
  it('is off without OTEL_EXPORTER_OTLP_ENDPOINT, and names the service product-imagery by default', () => {
    const config = configWith({});
    assert.equal(config.otlpEndpoint, undefined);
    assert.equal(config.otelServiceName, 'product-imagery');
  });

  it('takes an http(s) collector URL (a trailing slash dropped) and a service name', () => {
    const config = configWith({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector:4318/', OTEL_SERVICE_NAME: 'imagery-eu' });
    assert.equal(config.otlpEndpoint, 'http://otel-collector:4318');
    assert.equal(config.otelServiceName, 'imagery-eu');
    assert.equal(configWith({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otlp.example.com/prefix' }).otlpEndpoint, 'https://otlp.example.com/prefix');
  });

  it('refuses an endpoint that is not an http(s) URL', () => {
    for (const bad of ['otel-collector:4318', 'grpc://collector:4317', 'http://', 'http://collector:4318/?x=1', 'http://collector 4318']) {
      assert.throws(() => configWith({ OTEL_EXPORTER_OTLP_ENDPOINT: bad }), /OTEL_EXPORTER_OTLP_ENDPOINT must be an http\(s\) URL/, bad);
    }
  });

  it('refuses credentials in the endpoint, without repeating them, and points to OTEL_EXPORTER_OTLP_HEADERS', () => {
    for (const bad of ['https://user:s3cret-token@otlp.example.com', 'http://s3cret-token@collector:4318/v1']) {
      assert.throws(() => configWith({ OTEL_EXPORTER_OTLP_ENDPOINT: bad }), (err: Error) => {
        assert.match(err.message, /must not carry credentials.*OTEL_EXPORTER_OTLP_HEADERS/);
        assert.ok(!err.message.includes('s3cret-token'), err.message);
        return true;
      }, bad);
    }
    assert.equal(configWith({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otlp.example.com/v1/a@b' }).otlpEndpoint, 'https://otlp.example.com/v1/a@b', 'an @ in the path is no credential');
  });
});
