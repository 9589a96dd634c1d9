import { type DriverExit, type DriverPty, type DriverPtyRequest, SandboxError } from "@sbox/core/spec";
import type Dockerode from "dockerode";
import type { DockerEngine } from "./docker-engine.js";
import { toDockerError } from "./docker-errors.js";
import { envList, exitOf, killByMarker, newMarker, runHelper, startHijackedExec } from "./docker-exec.js";
import { EXEC_MARKER_VARIABLE } from "./docker-kill.js";

/** The login shell of a pty: bash where the image has it, else sh. */
const DEFAULT_SHELL = "if command -v bash >/dev/null 2>&1; then exec bash -i; else exec sh -i; fi";

const FIND_PID_SCRIPT = `for d in /proc/[0-9]*; do case "$(tr '\\0' '\\n' < "$d/environ" 2>/dev/null)" in *"${EXEC_MARKER_VARIABLE}=$1"*) echo "\${d#/proc/}" ;; esac; done`;

async function findPid(
  engine: DockerEngine,
  container: Dockerode.Container,
  marker: string,
  signal: AbortSignal,
): Promise<number> {
  const out = await runHelper(
    engine,
    container,
    ["sh", "-c", FIND_PID_SCRIPT, "sbox-pid", marker],
    signal,
    "pty pid",
  );
  const pids = out.stdout
    .toString("utf8")
    .split("\n")
    .map(Number)
    .filter((pid) => Number.isInteger(pid) && pid > 0);
  return pids.length > 0 ? Math.min(...pids) : 0;
}

function dimension(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1 || value > 10_000) {
    throw new SandboxError("Validation", `invalid pty ${name} ${String(value)}`);
  }
  return value;
}

/** An interactive terminal: a TTY exec with stdin, resized through the exec resize call. */
export async function createPty(
  engine: DockerEngine,
  container: Dockerode.Container,
  request: DriverPtyRequest,
): Promise<DriverPty> {
  const { signal } = request;
  const cols = dimension(request.cols, "cols");
  const rows = dimension(request.rows, "rows");
  const marker = newMarker();
  const options: Dockerode.ExecCreateOptions = {
    Cmd: ["sh", "-c", request.command ?? DEFAULT_SHELL],
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: true,
    Env: envList(marker, { TERM: "xterm-256color", ...(request.env ?? {}) }),
    ConsoleSize: [rows, cols],
  };
  if (request.cwd !== undefined) options.WorkingDir = request.cwd;
  const { exec, socket, started } = await startHijackedExec(engine, container, "pty", options, {
    stdin: true,
    tty: true,
    signal,
  });
  const ended = new Promise<void>((resolve, reject) => {
    socket.on("data", (data: Buffer) =>
      request.onData(new Uint8Array(data.buffer, data.byteOffset, data.length)),
    );
    socket.once("end", () => resolve());
    socket.once("close", () => resolve());
    socket.once("error", (error) => reject(toDockerError(error, "pty stream")));
  });
  ended.catch(() => undefined);
  const resize = (c: number, r: number) =>
    engine.call("pty resize", AbortSignal.timeout(engine.options.requestTimeoutMs), (_d, bound) =>
      exec.resize({ h: dimension(r, "rows"), w: dimension(c, "cols"), abortSignal: bound }),
    );
  let pid = 0;
  try {
    // Engines before API 1.42 ignore ConsoleSize: size the terminal right away.
    await resize(cols, rows).catch(() => undefined);
    pid = await findPid(engine, container, marker, signal);
    // Found by its environment: the process runs, a pause no longer needs to wait for it.
    started();
  } catch (error) {
    started();
    socket.destroy();
    await killByMarker(engine, container, marker, "KILL");
    throw error;
  }
  let exit: Promise<DriverExit> | undefined;
  return {
    pid,
    async write(data) {
      if (socket.destroyed) throw new SandboxError("InvalidState", "the pty has ended");
      await new Promise<void>((resolve, reject) =>
        socket.write(typeof data === "string" ? Buffer.from(data, "utf8") : data, (error) =>
          error ? reject(toDockerError(error, "pty write")) : resolve(),
        ),
      );
    },
    async resize(c, r) {
      await resize(c, r);
    },
    async kill() {
      await killByMarker(engine, container, marker, "KILL");
    },
    wait() {
      exit ??= ended.then(async () => ({
        exitCode: await exitOf(engine, exec, AbortSignal.timeout(engine.options.requestTimeoutMs * 4)),
      }));
      return exit;
    },
  };
}
