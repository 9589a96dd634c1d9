/**
 * Drives the real built binary (`dist/sbox.js`) as a child process, with its own SBOX_HOME, the way a
 * user's shell would. Nothing here imports the CLI's source.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The binary under test. */
export const SBOX_BIN: string = resolve(dirname(fileURLToPath(import.meta.url)), "../dist/sbox.js");

/** What a finished `sbox` invocation produced. */
export interface SboxResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  stdoutBytes: Buffer;
}

/** Options of one invocation. */
export interface SboxOptions {
  /** Bytes or text for stdin; stdin is closed after it. Without it stdin is /dev/null. */
  input?: string | Uint8Array | undefined;
  env?: Record<string, string | undefined> | undefined;
  cwd?: string | undefined;
  /** Kill the CLI (SIGKILL) after this long and fail; default 60 s. */
  timeoutMs?: number | undefined;
}

/** A private state root for one test file. `cleanup()` removes every sandbox left in it, then the directory. */
export interface SboxHome {
  readonly dir: string;
  readonly env: Record<string, string>;
  run(args: readonly string[], options?: SboxOptions): Promise<SboxResult>;
  start(args: readonly string[], options?: SboxOptions): ChildProcess;
  cleanup(): Promise<void>;
}

function baseEnv(): Record<string, string | undefined> {
  // A predictable environment: no colour, no inherited provider choice.
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1", FORCE_COLOR: undefined };
  delete env.SBOX_PROVIDER;
  delete env.SBOX_DEBUG;
  return env;
}

/** Spawns `node dist/sbox.js ARGS` and collects its output. */
export function runSbox(args: readonly string[], options: SboxOptions = {}): Promise<SboxResult> {
  if (!existsSync(SBOX_BIN))
    throw new Error(`${SBOX_BIN} is missing: run pnpm --filter @sbox/cli build first`);
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [SBOX_BIN, ...args], {
      env: { ...baseEnv(), ...options.env } as NodeJS.ProcessEnv,
      cwd: options.cwd,
      stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout!.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr!.on("data", (chunk: Buffer) => err.push(chunk));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`sbox ${args.join(" ")} did not finish in ${options.timeoutMs ?? 60_000} ms`));
    }, options.timeoutMs ?? 60_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const stdoutBytes = Buffer.concat(out);
      resolvePromise({
        code,
        signal,
        stdout: stdoutBytes.toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
        stdoutBytes,
      });
    });
    if (options.input !== undefined) {
      child.stdin!.on("error", () => {});
      child.stdin!.end(options.input);
    }
  });
}

/**
 * Makes a temporary SBOX_HOME and returns helpers bound to it. `cleanupLabel` limits the final sweep to
 * sandboxes with that label: a shared backend (a Docker Engine) holds other people's sandboxes too, and
 * the sweep must never touch them.
 */
export function makeSboxHome(extraEnv: Record<string, string> = {}, cleanupLabel?: string): SboxHome {
  const dir = mkdtempSync(join(tmpdir(), "sbox-cli-test-"));
  const env = { SBOX_HOME: dir, ...extraEnv };
  const home: SboxHome = {
    dir,
    env,
    run: (args, options = {}) => runSbox(args, { ...options, env: { ...env, ...options.env } }),
    start(args, options = {}) {
      return spawn(process.execPath, [SBOX_BIN, ...args], {
        env: { ...baseEnv(), ...env, ...options.env } as NodeJS.ProcessEnv,
        stdio: ["ignore", "pipe", "pipe"],
      });
    },
    async cleanup() {
      const filter = cleanupLabel === undefined ? [] : ["--label", cleanupLabel];
      await runSbox(["rm", "--all", ...filter, "--yes", "--force"], { env }).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return home;
}

/** Parses `sbox ls --json` output into ids. */
export function idsOf(result: SboxResult): string[] {
  if (result.code !== 0) throw new Error(`sbox ls failed (${result.code}): ${result.stderr}`);
  return (JSON.parse(result.stdout) as { id: string }[]).map((info) => info.id);
}

/** Command lines of this machine's processes (for leak checks). */
export function processCommandLines(): string[] {
  return execFileSync("ps", ["-eo", "args="], { encoding: "utf8" }).split("\n");
}

/** Polls `check` every 50 ms until it returns true or `timeoutMs` passes. */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolveWait) => setTimeout(resolveWait, 50));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}
