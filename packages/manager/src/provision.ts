import { posix } from "node:path";
import { redactSecrets, type Sandbox, SandboxError } from "@sbox/core";
import type { PreparedGit, PreparedSpec, PreparedStart, PreparedStep } from "./prepare-spec.js";
import type { RecordError, RecordRuntime } from "./sandbox-record.js";

/** How many bytes of a failing step's output a record keeps. */
export const OUTPUT_TAIL_BYTES = 4096;

/** Directory (relative to the workdir) where the manager keeps its logs inside a sandbox. */
export const MANAGER_STATE_DIR = ".sbox-manager";

/** A provisioning step failed; `detail` is what goes into the record (already redacted). */
export class ProvisionFailure extends Error {
  readonly detail: Omit<RecordError, "at">;
  constructor(detail: Omit<RecordError, "at">, options: { cause?: unknown } = {}) {
    super(detail.message, options.cause === undefined ? {} : { cause: options.cause });
    this.name = "ProvisionFailure";
    this.detail = detail;
  }
}

// Prints the log's current size (so the caller can find this step's output later), writes a header,
// then replaces itself with the command, all output appended to the log.
const STEP_WRAPPER =
  'log=$1; name=$2; shift 2; wc -c <"$log"; printf \'==> %s\\n\' "$name" >>"$log"; exec >>"$log" 2>&1 </dev/null; exec "$@"';
// The main process: output appended to its log, stdin closed.
const START_WRAPPER = 'log=$1; shift; exec >>"$log" 2>&1 </dev/null; exec "$@"';
// Prints up to $3 bytes of file $1 from byte offset $2, base64-encoded (binary-safe through any exec).
const READ_CHUNK = 'f=$1; [ -f "$f" ] || exit 3; tail -c +$(($2 + 1)) "$f" | head -c "$3" | base64';

/** Resolves a sandbox path against the workdir (absolute paths pass unchanged). */
export function resolveIn(base: string | undefined, path: string): string {
  if (path.startsWith("/") || base === undefined) return path;
  return posix.normalize(posix.join(base, path));
}

function failure(
  code: string,
  message: string,
  secrets: readonly string[],
  extra: Partial<Omit<RecordError, "at" | "code" | "message">> = {},
  cause?: unknown,
): ProvisionFailure {
  const detail: Omit<RecordError, "at"> = { code, message: redactSecrets(message, secrets) };
  if (extra.step) detail.step = extra.step;
  if (extra.exitCode !== undefined) detail.exitCode = extra.exitCode;
  if (extra.outputTail !== undefined) detail.outputTail = redactSecrets(extra.outputTail, secrets);
  return new ProvisionFailure(detail, { cause });
}

async function outputTail(sandbox: Sandbox, log: string, offset: number): Promise<string> {
  try {
    const result = await sandbox.commands.run(
      [
        "sh",
        "-c",
        'tail -c +$(($2 + 1)) "$1" | tail -c "$3"',
        "sh",
        log,
        String(offset),
        String(OUTPUT_TAIL_BYTES),
      ],
      { timeoutMs: 30_000 },
    );
    return result.stdout;
  } catch {
    return "";
  }
}

interface StepOutcome {
  exitCode: number | undefined;
  /** What the wrapper itself printed to stderr (before its output went to the log): a cwd problem, say. */
  stderr: string;
  timedOut: boolean;
  offset: number;
  error: SandboxError | undefined;
}

async function runLogged(
  sandbox: Sandbox,
  log: string,
  name: string,
  argv: readonly string[],
  options: {
    cwd?: string | undefined;
    env?: Readonly<Record<string, string>> | undefined;
    timeoutMs: number;
  },
): Promise<StepOutcome> {
  try {
    const result = await sandbox.commands.run(["sh", "-c", STEP_WRAPPER, "sh", log, name, ...argv], {
      cwd: options.cwd,
      env: options.env,
      timeoutMs: options.timeoutMs,
    });
    const offset = Number.parseInt(result.stdout.trim(), 10);
    return {
      exitCode: result.exitCode,
      stderr: result.stderr,
      timedOut: false,
      offset: Number.isFinite(offset) ? offset : 0,
      error: undefined,
    };
  } catch (error) {
    const wrapped = SandboxError.isInstance(error)
      ? error
      : new SandboxError("Provider", String(error), { cause: error });
    return {
      exitCode: undefined,
      stderr: "",
      timedOut: wrapped.code === "Timeout",
      offset: 0,
      error: wrapped,
    };
  }
}

function gitArgv(git: PreparedGit, checkoutDir: string): { clone: string[]; checkout: string[] | undefined } {
  const isCommit = git.ref !== undefined && /^[0-9a-f]{40}([0-9a-f]{24})?$/i.test(git.ref);
  const clone = ["git", "clone", "--no-progress"];
  if (git.depth !== undefined && !isCommit) clone.push("--depth", String(git.depth));
  if (git.ref !== undefined && !isCommit) clone.push("--branch", git.ref);
  clone.push("--", git.url, checkoutDir);
  return {
    clone,
    checkout:
      isCommit && git.ref
        ? ["git", "-C", checkoutDir, "checkout", "--quiet", "--detach", git.ref]
        : undefined,
  };
}

function gitEnv(git: PreparedGit): Record<string, string> {
  // The credential travels as an HTTP header set through git's environment config, so it is on no command
  // line the manager logs and in no file inside the sandbox.
  const env: Record<string, string> = { GIT_TERMINAL_PROMPT: "0" };
  if (git.authorization) {
    env.GIT_CONFIG_COUNT = "1";
    env.GIT_CONFIG_KEY_0 = "http.extraHeader";
    env.GIT_CONFIG_VALUE_0 = git.authorization;
  }
  return env;
}

async function checkStep(
  sandbox: Sandbox,
  log: string,
  outcome: StepOutcome,
  what: {
    code: string;
    label: string;
    step?: { index: number; name: string } | undefined;
    timeoutMs: number;
  },
  secrets: readonly string[],
): Promise<void> {
  if (outcome.exitCode === 0) return;
  const tail = (outcome.stderr + (await outputTail(sandbox, log, outcome.offset))).slice(-OUTPUT_TAIL_BYTES);
  const extra = { step: what.step, exitCode: outcome.exitCode, outputTail: tail };
  if (outcome.timedOut) {
    throw failure(
      what.code,
      `${what.label} timed out after ${what.timeoutMs} ms`,
      secrets,
      extra,
      outcome.error,
    );
  }
  if (outcome.error) {
    throw failure(
      what.code,
      `${what.label} could not run: ${outcome.error.message}`,
      secrets,
      extra,
      outcome.error,
    );
  }
  throw failure(what.code, `${what.label} exited with code ${outcome.exitCode}`, secrets, extra);
}

/** Starts the main process detached, its output appended to `log`; fails when it exits within `graceMs`. */
export async function startMain(
  sandbox: Sandbox,
  start: PreparedStart,
  runtime: RecordRuntime,
  options: { graceMs: number; secrets: readonly string[]; defaultCwd: string | undefined },
): Promise<number> {
  const log = runtime.startLog ?? resolveIn(runtime.workdir, `${MANAGER_STATE_DIR}/start.log`);
  // Paths go to the provider as the user wrote them: relative ones resolve against its workdir.
  const cwd = start.cwd ?? options.defaultCwd;
  let processHandle: Awaited<ReturnType<Sandbox["commands"]["spawn"]>>;
  try {
    processHandle = await sandbox.commands.spawn(["sh", "-c", START_WRAPPER, "sh", log, ...start.argv], {
      cwd,
      env: start.env,
    });
  } catch (error) {
    const message = SandboxError.isInstance(error) ? error.message : String(error);
    throw failure("StartFailed", `start could not be spawned: ${message}`, options.secrets, {}, error);
  }
  const exited = await Promise.race([
    processHandle.wait().then(
      (exit) => exit,
      () => undefined,
    ),
    new Promise<"running">((resolve) => setTimeout(() => resolve("running"), options.graceMs).unref()),
  ]);
  if (exited !== "running" && exited !== undefined) {
    const tail = await outputTail(sandbox, log, 0);
    throw failure(
      "StartFailed",
      `start exited with code ${exited.exitCode} right after starting`,
      options.secrets,
      {
        exitCode: exited.exitCode,
        outputTail: tail,
      },
    );
  }
  return processHandle.pid;
}

/** Whether the main process with this pid is still running (false when the provider cannot tell). */
export async function isMainRunning(sandbox: Sandbox, pid: number | undefined): Promise<boolean> {
  if (pid === undefined) return false;
  try {
    const processes = await sandbox.commands.list();
    return processes.some((p) => p.pid === pid && p.running);
  } catch {
    return false;
  }
}

/**
 * Brings a fresh sandbox to the state its spec describes: checkout, files, setup steps, main process,
 * ports. Throws a {@link ProvisionFailure} naming the step; every message and output tail is redacted.
 */
export async function provision(
  sandbox: Sandbox,
  spec: PreparedSpec,
  options: {
    startGraceMs: number;
    /** Called once the workdir and the setup log are known, so that the log can be followed while setup runs. */
    onRuntime?: ((runtime: RecordRuntime) => Promise<void>) | undefined;
  },
): Promise<RecordRuntime> {
  const secrets = spec.secrets;
  let workdir: string;
  try {
    const pwd = await sandbox.commands.run(
      ["sh", "-c", 'pwd; mkdir -p "$1" && : >>"$1/setup.log"', "sh", MANAGER_STATE_DIR],
      {
        timeoutMs: 60_000,
      },
    );
    if (pwd.exitCode !== 0)
      throw new SandboxError("Provider", `preparing ${MANAGER_STATE_DIR} failed: ${pwd.stderr.trim()}`);
    workdir = pwd.stdout.split("\n")[0]?.trim() || "/";
  } catch (error) {
    const message = SandboxError.isInstance(error) ? error.message : String(error);
    throw failure("SetupFailed", `preparing the sandbox failed: ${message}`, secrets, {}, error);
  }
  const runtime: RecordRuntime = {
    workdir,
    setupLog: resolveIn(workdir, `${MANAGER_STATE_DIR}/setup.log`),
  };
  const log = runtime.setupLog!;
  await options.onRuntime?.({ ...runtime });

  if (spec.git) {
    const checkoutDir = resolveIn(workdir, spec.git.dir);
    const { clone, checkout } = gitArgv(spec.git, spec.git.dir);
    const env = gitEnv(spec.git);
    const timeoutMs = 30 * 60_000;
    const label = `git clone ${spec.git.url}`;
    await checkStep(
      sandbox,
      log,
      await runLogged(sandbox, log, label, clone, { env, timeoutMs }),
      { code: "GitFailed", label, timeoutMs },
      secrets,
    );
    if (checkout) {
      const checkoutLabel = `git checkout ${spec.git.ref}`;
      await checkStep(
        sandbox,
        log,
        await runLogged(sandbox, log, checkoutLabel, checkout, { env, timeoutMs }),
        { code: "GitFailed", label: checkoutLabel, timeoutMs },
        secrets,
      );
    }
    runtime.checkoutDir = checkoutDir;
  }

  for (const file of spec.files) {
    const path = file.path;
    try {
      await sandbox.files.write(path, file.content, file.mode === undefined ? {} : { mode: file.mode });
    } catch (error) {
      const wrapped = SandboxError.isInstance(error) ? error : new SandboxError("Provider", String(error));
      throw failure(wrapped.code, `files: writing ${path} failed: ${wrapped.message}`, secrets, {}, error);
    }
  }

  const defaultCwd = spec.git?.dir;
  for (const [index, step] of spec.setup.entries()) {
    await runStep(sandbox, log, step, index, step.cwd ?? defaultCwd, secrets);
  }

  if (spec.start) {
    runtime.startLog = resolveIn(workdir, `${MANAGER_STATE_DIR}/start.log`);
    runtime.startPid = await startMain(sandbox, spec.start, runtime, {
      graceMs: options.startGraceMs,
      secrets,
      defaultCwd,
    });
  }

  if (spec.ports.length > 0) {
    const urls: Record<string, string> = {};
    for (const port of spec.ports) {
      if (!sandbox.ports)
        throw failure("NotSupported", `ports: provider ${sandbox.provider} cannot expose ports`, secrets);
      try {
        urls[String(port)] = (await sandbox.ports.expose(port)).url;
      } catch (error) {
        const wrapped = SandboxError.isInstance(error) ? error : new SandboxError("Provider", String(error));
        throw failure(wrapped.code, `ports: exposing ${port} failed: ${wrapped.message}`, secrets, {}, error);
      }
    }
    runtime.urls = urls;
  }
  return runtime;
}

async function runStep(
  sandbox: Sandbox,
  log: string,
  step: PreparedStep,
  index: number,
  cwd: string | undefined,
  secrets: readonly string[],
): Promise<void> {
  const outcome = await runLogged(sandbox, log, step.name, step.argv, {
    cwd,
    env: step.env,
    timeoutMs: step.timeoutMs,
  });
  await checkStep(
    sandbox,
    log,
    outcome,
    {
      code: "SetupFailed",
      label: `setup step ${index + 1} (${step.name})`,
      step: { index, name: step.name },
      timeoutMs: step.timeoutMs,
    },
    secrets,
  );
}

/** Reads up to `maxBytes` of a sandbox file from `offset`; `undefined` when the file does not exist (yet). */
export async function readLogChunk(
  sandbox: Sandbox,
  path: string,
  offset: number,
  maxBytes: number,
  signal?: AbortSignal,
): Promise<Uint8Array | undefined> {
  const result = await sandbox.commands.run(
    ["sh", "-c", READ_CHUNK, "sh", path, String(offset), String(maxBytes)],
    {
      timeoutMs: 60_000,
      signal,
    },
  );
  if (result.exitCode === 3) return undefined;
  if (result.exitCode !== 0) {
    throw new SandboxError(
      "Provider",
      `reading log ${path} failed (exit ${result.exitCode}): ${result.stderr.trim()}`,
    );
  }
  return new Uint8Array(Buffer.from(result.stdout, "base64"));
}
