/**
 * The workflow bundle a worker runs, made once per version of the code instead of at every start: webpack takes
 * about two seconds of a worker's start (four on a slow machine), most of a restart of `npm start`. The bundle is
 * kept in `node_modules/.cache/product-imagery/workflow-bundles/<hash>.js`, named by the hash of every compiled file
 * of the service a workflow may import (`dist/workflows`, `dist/src`: the layering lint keeps workflows to those)
 * and of the installed packages (npm's record of the tree it installed, `node_modules/.package-lock.json`: the
 * SDK, its bundler and every package a bundle takes in), so a changed file or package makes a new bundle. Where the
 * cache cannot be written, the bundle is made in memory, as the SDK does (the image makes its bundle when it is
 * built: see the Dockerfile). Workers with tracing on bundle at start: their bundle holds the interceptor modules too.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { bundleWorkflowCode, type Logger } from '@temporalio/worker';
import { log } from '../src/log';

const ROOT = path.resolve(__dirname, '..', '..');

export interface BundleSources {
  /** The workflows' entry module. */
  workflowsPath: string;
  /** Folders whose `.js` files the bundle may be made from: any change in them makes a new bundle. */
  sources: string[];
  /** The record of the installed packages (a changed package makes a new bundle); read when it exists. */
  packages: string;
  /** Where bundles are kept. */
  cacheDir: string;
}

export const DEFAULT_BUNDLE_SOURCES: BundleSources = {
  workflowsPath: require.resolve('../workflows'),
  sources: [path.join(ROOT, 'dist', 'workflows'), path.join(ROOT, 'dist', 'src')],
  packages: path.join(ROOT, 'node_modules', '.package-lock.json'),
  cacheDir: path.join(ROOT, 'node_modules', '.cache', 'product-imagery', 'workflow-bundles'),
};

async function jsFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.js')).map((e) => path.join(e.parentPath, e.name)).sort();
}

/** The hash of the installed packages' record and of every source file's path and content. */
async function sourcesHash(bundle: BundleSources): Promise<string> {
  const hash = createHash('sha256');
  // Without npm's record (an install by another tool), the SDK's version at least.
  const packages = await readFile(bundle.packages).catch(() => undefined);
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the installed SDK's version, read once
  hash.update(packages ?? `@temporalio/workflow ${(require('@temporalio/workflow/package.json') as { version: string }).version}`).update('\n');
  for (const dir of bundle.sources) {
    for (const file of await jsFiles(dir)) hash.update(`${path.relative(ROOT, file)}\n`).update(await readFile(file)).update('\n');
  }
  return hash.digest('hex').slice(0, 32);
}

/**
 * The bundle for the code as it is: the cached one when its hash matches, else a new one, cached for the next start
 * (written whole and synced under a name of its own, then renamed, so that processes starting together never read
 * half a file; an empty file left by a crash of the machine is made again).
 */
export async function cachedWorkflowBundle(
  bundle: BundleSources = DEFAULT_BUNDLE_SOURCES, logger?: Logger,
): Promise<{ codePath: string } | { code: string }> {
  const codePath = path.join(bundle.cacheDir, `${await sourcesHash(bundle)}.js`);
  if (((await stat(codePath).catch(() => undefined))?.size ?? 0) > 0) return { codePath };
  const { code } = await bundleWorkflowCode({ workflowsPath: bundle.workflowsPath, logger });
  const tmp = `${codePath}.${randomUUID()}.tmp`;
  try {
    await mkdir(bundle.cacheDir, { recursive: true });
    const file = await open(tmp, 'wx');
    try {
      await file.writeFile(code);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(tmp, codePath);
    return { codePath };
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined);
    log.info('the workflow bundle cannot be cached; made in memory at every start', { dir: bundle.cacheDir, error: String(err) });
    return { code };
  }
}
