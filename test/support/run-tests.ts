/**
 * `npm test`: makes a throwaway certificate authority and a `localhost` certificate for the suite's HTTPS
 * servers, then runs mocha with `NODE_EXTRA_CA_CERTS` pointing at that authority (Node reads it only at start)
 * and `OUTBOUND_ALLOW_CIDRS` allowing loopback. Extra arguments go to mocha; `--exec <script>` runs a script of
 * the test tools under the same environment instead (the history recorder does).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The certificate names `localhost` and `*.rebind.test` (names the suite's own DNS server answers: dns-server.ts). */
function makeCertificates(dir: string): void {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca-key.pem', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=imagery test CA');
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'localhost-key.pem', '-out', 'localhost.csr', '-subj', '/CN=localhost');
  writeFileSync(path.join(dir, 'san.ext'), 'subjectAltName=DNS:localhost,DNS:*.rebind.test,IP:127.0.0.1,IP:::1\nbasicConstraints=CA:FALSE\n');
  openssl('x509', '-req', '-in', 'localhost.csr', '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-CAcreateserial',
    '-out', 'localhost-cert.pem', '-days', '2', '-extfile', 'san.ext');
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'imagery-test-tls-'));
makeCertificates(dir);
const args = process.argv.slice(2);
const command = args[0] === '--exec' ? args.slice(1) : [require.resolve('mocha/bin/mocha.js'), ...args];
const mocha = spawn(process.execPath, command, {
  stdio: 'inherit',
  env: {
    ...process.env,
    NODE_EXTRA_CA_CERTS: path.join(dir, 'ca.pem'),
    TEST_TLS_DIR: dir,
    OUTBOUND_ALLOW_CIDRS: process.env.OUTBOUND_ALLOW_CIDRS ?? '127.0.0.0/8,::1/128',
  },
});
mocha.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
