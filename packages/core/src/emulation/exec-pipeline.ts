import type { CapabilityLevel } from "../capabilities/capability-names.js";
import { SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import { exitCodeForSignal, normalizeSignal } from "../sandbox/signal-names.js";
import type {
  DriverCommand,
  DriverExecRequest,
  DriverExit,
  DriverOutputCallbacks,
  ProviderDriver,
} from "../spec/provider-spec.js";
import { concatBytes } from "./concat-bytes.js";
import { applyEnvCwd, commandScript } from "./e1-env-cwd.js";
import { createExitMarker, type ExitMarker } from "./e2-exit-marker.js";
import type { ShellExec, ShellResult } from "./emulation-context.js";

const encoder = new TextEncoder();

/** Output as bytes: strings (from text-only exec primitives) are encoded as UTF-8. */
export function toBytes(data: Uint8Array | string): Uint8Array {
  return typeof data === "string" ? encoder.encode(data) : data;
}

/**
 * One user command as the facade hands it over (validated, stdin as bytes or a stream), before E1: `cwd`
 * and `env` are the user's, whatever the provider honours.
 */
export type PipelineRequest = DriverExecRequest & DriverOutputCallbacks;

/** How a command ended, with the exit code always known. */
export type PipelineExit = DriverExit & { exitCode: number };

/** What the pipeline is built from: the provider's exec primitives under the effective capabilities. */
export interface ExecPipelineOptions {
  /** Provider name, for error messages. */
  readonly provider: string;
  /** The effective exec flags (both false in primitives-only mode). */
  readonly flags: { readonly perCommandEnvCwd: boolean; readonly exitCodeNative: boolean };
  /** The buffered primitive. */
  readonly doExec: ProviderDriver["doExec"];
  /** The provider's own streaming exec, when `streaming` is native. */
  readonly doExecStream?: ProviderDriver["doExecStream"] | undefined;
  /** Effective level of `streaming`. */
  readonly streaming: CapabilityLevel;
  /** Effective level of `stdin`: without a native one, live stdin goes through E3's stdin file. */
  readonly stdin: CapabilityLevel;
  /** Whether the provider's own exec primitives hand over a way to signal a running command (`onStarted`). */
  readonly execSignals: boolean;
  /** E3, built lazily over {@link ExecPipeline.shell}. */
  readonly emulatedStream: () => NonNullable<ProviderDriver["doExecStream"]>;
}

/** The one place that turns a command into driver calls: E1, E2 and the choice of the streaming path. */
export interface ExecPipeline {
  /** Runs a script with `sh -c` through the buffered primitive, E1 and E2 applied: what emulations build on. */
  readonly shell: ShellExec;
  /** Runs a user command to its end, streaming output as produced where the capability levels allow. */
  run(sandbox: Parameters<ProviderDriver["doExec"]>[0], request: PipelineRequest): Promise<PipelineExit>;
  /**
   * How `run` lets a running command be signalled (`request.onStarted`): `"native"` the provider's exec
   * hands over its own means, `"emulated"` E3 signals the detached command's process group, `"abort"`
   * nothing can: `onStarted` is never called and only aborting the exec ends the command.
   */
  signalling(request: Pick<PipelineRequest, "stdin">): "native" | "emulated" | "abort";
  /**
   * The command, cwd and env for a path that does or does not honour cwd/env itself: E1 puts them into the
   * command when it does not. Paths that apply E1 inside a detached command (E3, E4) honour them.
   */
  prepare(
    command: DriverCommand,
    options: { cwd?: string | undefined; env?: Readonly<Record<string, string>> | undefined },
    honoursEnvCwd: boolean,
  ): { command: DriverCommand; cwd?: string | undefined; env?: Readonly<Record<string, string>> | undefined };
}

/**
 * Builds the exec pipeline of one provider runtime.
 *
 * - E1: when the path does not honour cwd/env, they are put into the command (a `cd` that aborts on
 *   failure, quoted exports); an argv command stays argv when there is nothing to put in.
 * - E2: when the provider reports no exit code, a per-call random marker is appended and parsed off the end
 *   of stdout, incrementally on a streaming path.
 * - Streaming: native `doExecStream`, else E3 when streaming is emulated (or stdin must be fed from a file),
 *   else the buffered primitive, whose output arrives at the end.
 */
export function createExecPipeline(options: ExecPipelineOptions): ExecPipeline {
  const { flags } = options;

  const prepare: ExecPipeline["prepare"] = (command, envCwd, honoursEnvCwd) => {
    const needsPrefix =
      !honoursEnvCwd && (envCwd.cwd !== undefined || (envCwd.env && Object.keys(envCwd.env).length > 0));
    return {
      command: needsPrefix ? { shell: applyEnvCwd(command, envCwd) } : command,
      cwd: honoursEnvCwd ? envCwd.cwd : undefined,
      env: honoursEnvCwd ? envCwd.env : undefined,
    };
  };

  /** The exit code from the marker, the provider, or the signal that ended the command. */
  const requireExitCode = (exit: DriverExit, marker: ExitMarker | undefined): PipelineExit => {
    if (typeof exit.exitCode === "number") return exit as PipelineExit;
    if (exit.signal !== undefined) {
      let code: number;
      try {
        code = exitCodeForSignal(normalizeSignal(exit.signal, "SIGKILL"));
      } catch {
        code = exitCodeForSignal(exit.signal);
      }
      return { ...exit, exitCode: code };
    }
    throw new SandboxError(
      "Provider",
      marker
        ? "exec: the exit code was lost (the exit-code marker was not the last output of the command)"
        : "exec: the provider did not report the command's exit code",
      { provider: options.provider },
    );
  };

  /** E1 and E2 around one call of the buffered or the native streaming primitive. */
  const direct = async (
    sandbox: Parameters<ProviderDriver["doExec"]>[0],
    request: PipelineRequest,
    stream: boolean,
  ): Promise<PipelineExit & { textStdout: boolean }> => {
    const prepared = prepare(request.command, request, flags.perCommandEnvCwd);
    const marker = flags.exitCodeNative ? undefined : createExitMarker();
    const driverRequest: { -readonly [K in keyof DriverExecRequest]: DriverExecRequest[K] } = {
      command: marker ? { shell: marker.wrap(commandScript(prepared.command)) } : prepared.command,
      signal: request.signal,
    };
    if (prepared.cwd !== undefined) driverRequest.cwd = prepared.cwd;
    if (prepared.env !== undefined) driverRequest.env = prepared.env;
    if (request.stdin !== undefined) driverRequest.stdin = request.stdin;
    if (request.user !== undefined) driverRequest.user = request.user;
    if (request.onStarted !== undefined && options.execSignals) driverRequest.onStarted = request.onStarted;
    const parser = marker?.createParser();
    // Whether the provider gave stdout as text: then it is not raw bytes (`ShellResult.rawStdout`).
    let textStdout = false;
    const stdoutOf = (chunk: Uint8Array | string) => {
      if (typeof chunk === "string") textStdout = true;
      return parser ? parser.push(toBytes(chunk)) : chunk;
    };
    let exit: DriverExit;
    if (stream && options.doExecStream) {
      exit = await options.doExecStream(sandbox, {
        ...driverRequest,
        onStdout: (chunk) => request.onStdout(stdoutOf(chunk)),
        onStderr: request.onStderr,
        ...(request.ready ? { ready: request.ready } : {}),
      });
    } else {
      const result = await options.doExec(sandbox, driverRequest);
      request.onStdout(stdoutOf(result.stdout));
      request.onStderr(result.stderr);
      exit = { exitCode: result.exitCode, signal: result.signal };
    }
    if (parser) {
      const { rest, exitCode } = parser.finish();
      request.onStdout(rest);
      exit = { ...exit, exitCode };
    }
    return { ...requireExitCode(exit, marker), textStdout };
  };

  const shell: ShellExec = async (sandbox, script, shellOptions): Promise<ShellResult> => {
    const stdout: Uint8Array[] = [];
    const stderr: Uint8Array[] = [];
    let exit: PipelineExit & { textStdout: boolean };
    try {
      exit = await direct(
        sandbox,
        {
          command: { shell: script },
          cwd: shellOptions.cwd,
          env: shellOptions.env,
          stdin: shellOptions.stdin,
          signal: shellOptions.signal,
          onStdout: (chunk) => stdout.push(toBytes(chunk)),
          onStderr: (chunk) => stderr.push(toBytes(chunk)),
        },
        false,
      );
    } catch (error) {
      throw toSandboxError(error, { provider: options.provider, operation: "exec" });
    }
    return {
      stdout: concatBytes(stdout),
      stderr: concatBytes(stderr),
      exitCode: exit.exitCode,
      rawStdout: !exit.textStdout,
    };
  };

  /** Whether a user command runs on E3: live stdin needs the provider's own stdin, else E3 feeds it from a file. */
  const runsOnE3 = (request: Pick<PipelineRequest, "stdin">): boolean =>
    (request.stdin !== undefined && options.stdin !== "native") || options.streaming === "emulated";

  return {
    shell,
    prepare,
    signalling: (request) => (runsOnE3(request) ? "emulated" : options.execSignals ? "native" : "abort"),
    async run(sandbox, request) {
      if (runsOnE3(request)) {
        const { command, cwd, env } = prepare(request.command, request, true);
        const exit = await options.emulatedStream()(sandbox, { ...request, command, cwd, env });
        return requireExitCode(exit, undefined);
      }
      const { textStdout: _, ...exit } = await direct(sandbox, request, options.streaming === "native");
      return exit;
    },
  };
}
