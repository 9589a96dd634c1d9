/**
 * Terminals: an exec with `tty=true` and stdin kept open. Keystrokes go on channel 0, the terminal's output
 * comes back on channel 1, `resize` sends the size on channel 4 (`{"Width": cols, "Height": rows}`, the
 * first one right away), and the exit code comes from the status channel. The pid is looked up in the
 * pod by the exec's marker; `kill` ends the whole tree.
 */
import type { DriverPty, DriverPtyRequest } from "@sbox/core/spec";
import { shellQuote } from "@sbox/core/spec";
import type { PodExec, PodTarget } from "./kubernetes-exec.js";

const DEFAULT_SHELL = "if command -v bash >/dev/null 2>&1; then exec bash -i; else exec sh -i; fi";

/** Opens a terminal in the pod. */
export async function createPty(
  exec: PodExec,
  target: PodTarget,
  request: DriverPtyRequest,
): Promise<DriverPty> {
  const prefix: string[] = [];
  if (request.cwd) prefix.push(`cd ${shellQuote(request.cwd)} || exit 1;`);
  for (const [key, value] of Object.entries(request.env ?? {}))
    prefix.push(`export ${key}=${shellQuote(value)};`);
  const script = `${prefix.join(" ")} ${request.command ?? DEFAULT_SHELL}`;
  const stop = new AbortController();
  const session = await exec.start(target, {
    argv: ["sh", "-c", script],
    tty: true,
    interactiveStdin: true,
    signal: stop.signal,
    onStdout: (chunk) => request.onData(new Uint8Array(chunk)),
    onStderr: (chunk) => request.onData(new Uint8Array(chunk)),
  });
  await session.resize(request.cols, request.rows);
  const pid = (await exec.pidOf(target, session.marker)) ?? 0;
  return {
    pid,
    write: (data) => session.write(typeof data === "string" ? Buffer.from(data, "utf8") : data),
    resize: (cols, rows) => session.resize(cols, rows),
    async kill() {
      await exec.kill(target, session.marker, "SIGKILL");
    },
    wait: () => session.exit,
  };
}
