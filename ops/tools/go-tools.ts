/**
 * Pinned Go programs the project runs beside itself (the Temporal CLI and server, the S3 gateway used for tests and
 * evaluation): found in the tools folder, else built once with `go install` from the Go module proxy. The tools
 * folder lives outside the clone, so every checkout and CI run on a machine reuses the same builds.
 */
import { execFile } from 'node:child_process';
import { accessSync, constants, mkdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { log } from '../../src/log';

export interface GoTools {
  /** `go install` arguments: packages of one module at one version, e.g. `go.temporal.io/server/cmd/server@v1.29.1`. */
  packages: string[];
  /** The name `go install` gives each binary → its name in `<tools>/bin` (versioned where the own name is generic). */
  binaries: Record<string, string>;
}

export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The environment a spawned tool gets: what locates programs, files and time, and `own`; nothing else of ours
 * (the service's secrets and provider keys stay out of the tool's /proc/<pid>/environ).
 */
export function toolEnv(own: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const inherited = ['PATH', 'HOME', 'TMPDIR', 'TZ', 'LANG', 'SSL_CERT_FILE', 'SSL_CERT_DIR'];
  return { ...Object.fromEntries(inherited.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]])), ...own };
}

export function toolPath(toolsDir: string, binary: string): string {
  return path.join(toolsDir, 'bin', binary);
}

/**
 * The path of each binary of `tools` (one `go install` of one module), building them when any is missing.
 * The build goes to a private folder first and is moved in place, so concurrent builders never see half a binary.
 */
export async function ensureGoTools(toolsDir: string, tools: GoTools): Promise<Record<string, string>> {
  const targets = Object.fromEntries(Object.entries(tools.binaries).map(([built, name]) => [built, toolPath(toolsDir, name)]));
  if (Object.values(targets).every(isExecutable)) return targets;
  const bin = path.join(toolsDir, 'bin');
  const staging = path.join(toolsDir, `.build-${randomUUID()}`);
  mkdirSync(bin, { recursive: true });
  mkdirSync(staging, { recursive: true });
  log.info('building a pinned tool with go install (once; kept in the tools folder)', { packages: tools.packages, into: bin });
  try {
    await promisify(execFile)('go', ['install', ...tools.packages], {
      env: { ...process.env, GOBIN: staging },
      maxBuffer: 16 * 1024 * 1024,
    });
    for (const [built, target] of Object.entries(targets)) renameSync(path.join(staging, built), target);
  } catch (err) {
    throw new Error(`could not build ${tools.packages.join(' ')} with "go install" (${(err as Error).message.trim()})`);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return targets;
}
