/**
 * The second half of `npm run build`: the TypeScript compile is incremental (its build info in `dist/`), so a
 * restart of an unchanged checkout compiles nothing; this removes what an incremental compile leaves behind, the
 * output of a source that was deleted or renamed since (a stale test file would still run, a stale module still
 * load). `node dist/ops/prune-dist.js` from the project's root.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';

const OUTPUT = /\.(js|js\.map|d\.ts)$/;

/** Removes every compiled file under `dist` whose source (`<root>/<same path>.ts`) is gone; answers what it removed. */
export function pruneDist(root: string, dist = path.join(root, 'dist')): string[] {
  const removed: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (file === path.join(dist, 'web')) continue; // the dashboard's own build (ops/build-web.ts)
        walk(file);
        if (readdirSync(file).length === 0) rmSync(file, { recursive: true });
        continue;
      }
      if (!OUTPUT.test(entry.name)) continue; // the build info
      const source = path.join(root, path.relative(dist, file)).replace(OUTPUT, '.ts');
      if (!existsSync(source)) {
        rmSync(file);
        removed.push(path.relative(root, file));
      }
    }
  };
  if (existsSync(dist)) walk(dist);
  return removed;
}

if (require.main === module) {
  const removed = pruneDist(path.resolve(__dirname, '..', '..'));
  if (removed.length > 0) process.stderr.write(`build: removed ${removed.length} compiled file(s) whose source is gone\n`);
}
