/**
 * The third part of `npm run build`: the dashboard (web/) type-checked and built by Vite into `dist/web/`, only when its sources or
 * the packages it is built from changed since the last build (their hash is kept in `dist/web/.source-hash`), so
 * that a restart of an unchanged checkout builds nothing. `node dist/ops/build-web.js` from the project's root.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** What the build depends on: every file under web/, the lockfile and this script. */
export function webSourceHash(root: string): string {
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules') walk(file);
        continue;
      }
      hash.update(path.relative(root, file)).update('\0').update(readFileSync(file)).update('\0');
    }
  };
  walk(path.join(root, 'web'));
  hash.update(readFileSync(path.join(root, 'package-lock.json'))).update(readFileSync(path.join(root, 'ops', 'build-web.ts')));
  return hash.digest('hex');
}

export function buildWeb(root: string): boolean {
  const out = path.join(root, 'dist', 'web');
  const stamp = path.join(out, '.source-hash');
  const sources = webSourceHash(root);
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === sources && existsSync(path.join(out, 'index.html'))) return false;
  const bin = (pkg: string, file: string) => path.join(path.dirname(require.resolve(`${pkg}/package.json`, { paths: [root] })), 'bin', file); // exports list no bin/
  // Vite strips types without checking them: the browser code's types are checked first, as the service's are.
  execFileSync(process.execPath, [bin('typescript', 'tsc'), '-p', 'web', '--noEmit'], { cwd: root, stdio: 'inherit' });
  execFileSync(process.execPath, [bin('vite', 'vite.js'), 'build', 'web', '--logLevel', 'warn'], { cwd: root, stdio: 'inherit' });
  writeFileSync(stamp, sources);
  return true;
}

if (require.main === module) {
  const root = path.resolve(__dirname, '..', '..');
  if (buildWeb(root)) process.stderr.write('build: the dashboard was built into dist/web\n');
}
