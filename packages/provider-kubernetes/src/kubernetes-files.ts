/**
 * Whole-file transfers over exec, binary-safe and streamed: the bytes travel on the exec's stdout (read)
 * or stdin (write, closed with the v5 close signal), which carry raw bytes, so nothing is encoded and
 * nothing is held in memory beyond a chunk. `kubectl cp` wraps files in tar because it copies trees; one
 * file needs no archive. Each transfer is one exec of a short POSIX sh script run inside the pod as the
 * container's user, whose exit code says what went wrong (missing path, a directory, no permission).
 * Listing, stat, mkdir, remove and rename are the core's exec emulation.
 */
import type { SandboxError } from "@sbox/core/spec";
import { kubernetesError } from "./kubernetes-errors.js";
import type { PodExec, PodTarget } from "./kubernetes-exec.js";

const EXIT = { notFound: 44, isDirectory: 45, denied: 50, parentNotDirectory: 51, failed: 55 } as const;

const READ_SCRIPT = `f=$1
if [ ! -e "$f" ]; then [ -L "$f" ] && exit ${EXIT.notFound}; d=$(dirname -- "$f"); [ -e "$d" ] && [ ! -r "$d" ] && exit ${EXIT.denied}; exit ${EXIT.notFound}; fi
[ -d "$f" ] && exit ${EXIT.isDirectory}
[ -r "$f" ] || exit ${EXIT.denied}
exec cat -- "$f"`;

const WRITE_SCRIPT = `f=$1 m=$2
d=$(dirname -- "$f")
if [ ! -d "$d" ]; then
  [ -e "$d" ] && exit ${EXIT.parentNotDirectory}
  mkdir -p -- "$d" 2>/dev/null || { cat >/dev/null; exit ${EXIT.parentNotDirectory}; }
fi
if [ -d "$f" ]; then cat >/dev/null; exit ${EXIT.isDirectory}; fi
cat > "$f" || exit ${EXIT.denied}
if [ -n "$m" ]; then chmod "$m" "$f" || exit ${EXIT.failed}; fi
exit 0`;

function fileError(code: number, operation: string, path: string, stderr: string): SandboxError {
  const where = `kubernetes ${operation} ${JSON.stringify(path)}`;
  if (code === EXIT.notFound) return kubernetesError("NotFound", `${where}: no such file or directory`);
  if (code === EXIT.isDirectory) return kubernetesError("Validation", `${where}: is a directory`);
  if (code === EXIT.denied) return kubernetesError("Unauthorized", `${where}: permission denied`);
  if (code === EXIT.parentNotDirectory)
    return kubernetesError("Validation", `${where}: a parent path exists and is not a directory`);
  const detail = stderr.trim().slice(-400);
  return kubernetesError("Provider", `${where}: failed with exit code ${code}${detail ? `: ${detail}` : ""}`);
}

/** Reads a file as a stream. */
export async function readFileStream(
  exec: PodExec,
  target: PodTarget,
  path: string,
  signal: AbortSignal,
): Promise<ReadableStream<Uint8Array>> {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let stderr = "";
  let started = false;
  let startedResolve!: () => void;
  const firstByte = new Promise<void>((resolve) => {
    startedResolve = resolve;
  });
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
  });
  const session = await exec.start(target, {
    argv: ["sh", "-c", READ_SCRIPT, "sbox-read", path],
    signal,
    onStdout: (chunk) => {
      if (!started) {
        started = true;
        startedResolve();
      }
      controller.enqueue(new Uint8Array(chunk));
    },
    onStderr: (chunk) => {
      if (stderr.length < 4096) stderr += Buffer.from(chunk).toString("utf8");
    },
  });
  const ended = session.exit.then(
    (exit) => {
      const code = exit.exitCode ?? 0;
      if (code === 0) {
        controller.close();
        return undefined;
      }
      const error = fileError(code, "files.read", path, stderr);
      controller.error(error);
      return error;
    },
    (error: unknown) => {
      controller.error(error);
      return error;
    },
  );
  // Errors that come before any byte (a missing file) reject the call itself, as NotFound.
  const early = await Promise.race([firstByte.then(() => undefined), ended]);
  if (early) throw early;
  return stream;
}

/** Reads a whole file. */
export async function readFile(
  exec: PodExec,
  target: PodTarget,
  path: string,
  signal: AbortSignal,
): Promise<Uint8Array> {
  const stream = await readFileStream(exec, target, path, signal);
  const parts: Uint8Array[] = [];
  const reader = stream.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    parts.push(value);
  }
  return Buffer.concat(parts);
}

/** Writes a file from bytes or a stream (parents created, mode set when given). */
export async function writeFile(
  exec: PodExec,
  target: PodTarget,
  path: string,
  data: Uint8Array | ReadableStream<Uint8Array>,
  mode: number | undefined,
  signal: AbortSignal,
): Promise<void> {
  if (mode !== undefined && !(Number.isInteger(mode) && mode >= 0 && mode <= 0o7777)) {
    throw kubernetesError("Validation", `invalid file mode ${String(mode)}`);
  }
  let stderr = "";
  const exit = await exec.run(target, {
    argv: ["sh", "-c", WRITE_SCRIPT, "sbox-write", path, mode === undefined ? "" : mode.toString(8)],
    stdin: data,
    signal,
    onStdout: () => {},
    onStderr: (chunk) => {
      if (stderr.length < 4096) stderr += Buffer.from(chunk).toString("utf8");
    },
  });
  const code = exit.exitCode ?? 0;
  if (code !== 0) throw fileError(code, "files.write", path, stderr);
}
