import { redactError } from "../errors/redact-error.js";
import { NotSupportedError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import type { DriverOutputCallbacks, DriverProcess } from "../spec/provider-spec.js";
import { AsyncQueue } from "./async-queue.js";
import { ITERATOR_HIGH_WATER_MARK } from "./command-handle.js";
import { runCommand, toDriverCommand, validateRunOptions } from "./command-run.js";
import { killGracefully, planKill, settlesWithin, stopsWithin } from "./graceful-kill.js";
import { resolveCwd } from "./resolve-cwd.js";
import { callOptions, gatedMethod, guard, invalidInput, type SandboxContext } from "./sandbox-context.js";
import type { CommandsApi, SandboxProcess } from "./sandbox-types.js";
import { exitCodeForSignal } from "./signal-names.js";
import { Utf8StreamDecoder } from "./utf8-stream-decoder.js";

export { toDriverCommand } from "./command-run.js";

function validPid(pid: number): number {
  if (!Number.isInteger(pid) || pid <= 0) throw invalidInput("pid must be a positive integer");
  return pid;
}

/** The commands namespace of one sandbox. */
export function createCommandsApi(context: SandboxContext): CommandsApi {
  const { runtime, handle } = context;
  const { map, flags } = runtime.capabilities;
  return {
    run: (command, options = {}) => runCommand(context, command, options),
    spawn: (command, options = {}) =>
      guard(context, "commands.spawn", async () => {
        const spawn = gatedMethod(context, "background", "doSpawn");
        validateRunOptions(options);
        const driverCommand = toDriverCommand(command);
        if (options.stdin instanceof ReadableStream) {
          throw invalidInput("spawn takes stdin as a string or bytes; write more with process.writeStdin()");
        }
        const stdin =
          typeof options.stdin === "string" ? new TextEncoder().encode(options.stdin) : options.stdin;
        // E4 applies cwd/env inside its detached command; a native spawn gets them when it honours them.
        const honoursEnvCwd = map.background === "emulated" || flags.perCommandEnvCwd;
        const output = outputQueues();
        const cwd = await resolveCwd(context, options.cwd);
        const process = await spawn(handle, {
          ...runtime.exec.prepare(driverCommand, { cwd, env: options.env }, honoursEnvCwd),
          stdin,
          user: options.user,
          ...callOptions(options.signal),
          ...output.callbacks,
        });
        return wrapProcess(context, process, output);
      }),
    list: () =>
      guard(context, "commands.list", async () =>
        gatedMethod(context, "background", "doListProcesses")(handle, callOptions()),
      ),
    connect: (pid) =>
      guard(context, "commands.connect", async () => {
        const connect = gatedMethod(context, "background", "doConnectProcess");
        const output = outputQueues();
        const process = await connect(handle, validPid(pid), { ...callOptions(), ...output.callbacks });
        return wrapProcess(context, process, output);
      }),
    kill: (pid, signal, options) =>
      guard(context, "commands.kill", async () => {
        const send = gatedMethod(context, "killProcess", "doKillProcess");
        const target = validPid(pid);
        const plan = planKill(signal, options);
        const listProcesses = runtime.driver.doListProcesses;
        // Whether the process still runs, where the provider can list processes (else the grace period is waited out).
        const isRunning =
          map.background === "unsupported" || !listProcesses
            ? undefined
            : async () =>
                (await listProcesses(handle, callOptions())).some(
                  (process) => process.pid === target && process.running,
                );
        await killGracefully(
          plan,
          (name) => send(handle, target, name, callOptions()),
          (ms) => stopsWithin(isRunning, ms),
        );
      }),
  };
}

/** Queues of decoded output for one process, and the driver callbacks that fill them. */
interface OutputQueues {
  readonly stdout: AsyncQueue<string>;
  readonly stderr: AsyncQueue<string>;
  readonly callbacks: DriverOutputCallbacks;
  /** Delivers text held back by the decoders (a character split at the very end). */
  flush(): void;
}

/**
 * A background process's output queues: bounded while someone iterates them (a slow reader pauses the
 * process's output at its source), unbounded before, since nobody may ever read them and `wait()` must
 * still resolve.
 */
function outputQueues(): OutputQueues {
  const options = {
    highWaterMark: ITERATOR_HIGH_WATER_MARK,
    sizeOf: (text: string) => text.length,
    pauseBeforeIteration: false,
  };
  const stdout = new AsyncQueue<string>(options);
  const stderr = new AsyncQueue<string>(options);
  const out = new Utf8StreamDecoder();
  const err = new Utf8StreamDecoder();
  const push = (queue: AsyncQueue<string>, text: string): void => {
    if (text) queue.push(text);
  };
  return {
    stdout,
    stderr,
    callbacks: {
      onStdout: (chunk) => push(stdout, out.write(chunk)),
      onStderr: (chunk) => push(stderr, err.write(chunk)),
      ready: () => stdout.ready() ?? stderr.ready(),
    },
    flush: () => {
      push(stdout, out.end());
      push(stderr, err.end());
    },
  };
}

function wrapProcess(
  context: SandboxContext,
  driverProcess: DriverProcess,
  output: OutputQueues,
): SandboxProcess {
  const { stdout, stderr } = output;
  const exited = driverProcess.wait().then(
    (exit) => {
      output.flush();
      stdout.end();
      stderr.end();
      const exitCode =
        typeof exit.exitCode === "number" ? exit.exitCode : exitCodeForSignal(exit.signal ?? "SIGKILL");
      return exit.signal === undefined ? { exitCode } : { exitCode, signal: exit.signal };
    },
    (error: unknown) => {
      const wrapped = redactError(
        toSandboxError(error, { provider: context.runtime.name, operation: "process.wait" }),
        context.runtime.secrets(),
      );
      stdout.fail(wrapped);
      stderr.fail(wrapped);
      throw wrapped;
    },
  );
  exited.catch(() => {});
  return {
    pid: driverProcess.pid,
    stdout,
    stderr,
    wait: () => exited,
    kill: (signal, options) =>
      guard(context, "process.kill", async () =>
        killGracefully(
          planKill(signal, options),
          (name) => driverProcess.kill(name),
          (ms) => settlesWithin(exited, ms),
        ),
      ),
    writeStdin: (data) =>
      guard(context, "process.writeStdin", async () => {
        if (!driverProcess.writeStdin) throw new NotSupportedError("stdin", context.runtime.name);
        await driverProcess.writeStdin(typeof data === "string" ? new TextEncoder().encode(data) : data);
      }),
    closeStdin: () =>
      guard(context, "process.closeStdin", async () => {
        if (!driverProcess.closeStdin) throw new NotSupportedError("stdin", context.runtime.name);
        await driverProcess.closeStdin();
      }),
  };
}
