/**
 * The AI SDK's `Experimental_SandboxSession` over any sbox sandbox: what `generateText({
 * experimental_sandbox })` hands to tools, implemented once for every provider. Relative paths resolve
 * against the sandbox's working directory; a missing path is `null` (or `false` for `deleteFile`), as the
 * interface says; every other failure rejects with a `SandboxError`.
 */
import { posix } from "node:path";
import { type Sandbox, SandboxError } from "@sbox/core";
import type {
  Experimental_SandboxDirectoryEntry,
  Experimental_SandboxFileStat,
  Experimental_SandboxProcess,
  Experimental_SandboxSession,
} from "ai";
import { CommandPolicy, type CommandRules } from "../policy/command-rules.js";

/** Options of {@link createSandboxSession}. */
export interface SandboxSessionOptions {
  /** Extra text for `description` (appended), e.g. what the project in the sandbox is. */
  description?: string | undefined;
  /** Command rules `run` and `spawn` are held to (a denied or asked command rejects before it starts). */
  commands?: CommandRules | undefined;
}

const encoder = new TextEncoder();

function isNotFound(error: unknown): boolean {
  return SandboxError.isInstance(error) && error.code === "NotFound";
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new SandboxError("Aborted", "aborted");
}

/** Encodes text for `writeTextFile`/decodes for `readTextFile`, in the encodings Node knows. */
function encodingOf(encoding: string | undefined): BufferEncoding {
  const name = (encoding ?? "utf-8").toLowerCase();
  const known: Record<string, BufferEncoding> = {
    "utf-8": "utf8",
    utf8: "utf8",
    "utf-16le": "utf16le",
    utf16le: "utf16le",
    latin1: "latin1",
    "iso-8859-1": "latin1",
    ascii: "ascii",
    "us-ascii": "ascii",
  };
  const found = known[name];
  if (!found) throw new SandboxError("Validation", `unsupported text encoding ${JSON.stringify(encoding)}`);
  return found;
}

/** Lines `start..end` (1-based, inclusive) of `text`, each with its line break. */
function lineRange(text: string, start: number | undefined, end: number | undefined): string {
  if (start === undefined && end === undefined) return text;
  const from = start ?? 1;
  if (!Number.isInteger(from) || from < 1)
    throw new SandboxError("Validation", "startLine must be an integer >= 1");
  if (end !== undefined && (!Number.isInteger(end) || end < from)) {
    throw new SandboxError("Validation", "endLine must be an integer >= startLine");
  }
  const lines = text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  return lines.slice(from - 1, end).join("");
}

/** A readable byte stream fed from an async iterable of strings. */
function byteStream(chunks: AsyncIterable<string>): ReadableStream<Uint8Array> {
  const iterator = chunks[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await iterator.next();
      if (done) controller.close();
      else if (value !== "") controller.enqueue(encoder.encode(value));
    },
    async cancel() {
      await iterator.return?.();
    },
  });
}

/**
 * Creates the session. It asks the sandbox for its working directory once (the base of relative paths),
 * so it resolves asynchronously.
 */
export async function createSandboxSession(
  sandbox: Sandbox,
  options: SandboxSessionOptions = {},
): Promise<Experimental_SandboxSession> {
  const probe = await sandbox.commands.run(["sh", "-c", "pwd -P"]);
  const base = probe.stdout.replace(/\n$/, "");
  if (probe.exitCode !== 0 || !base.startsWith("/")) {
    throw new SandboxError("Provider", "the sandbox's working directory could not be determined");
  }
  const commands = new CommandPolicy(options.commands);
  const resolve = (path: string): string => {
    if (typeof path !== "string" || path === "" || path.includes("\0")) {
      throw new SandboxError("Validation", "path must be a non-empty string without NUL bytes");
    }
    return posix.resolve(base, path);
  };
  const guard = (command: string): void => {
    if (typeof command !== "string" || command === "")
      throw new SandboxError("Validation", "command must be a non-empty string");
    const decision = commands.check(command);
    if (decision.action !== "allow")
      throw new SandboxError("Unauthorized", `command refused: ${decision.reason}`);
  };
  const cwdOf = (workingDirectory: string | undefined) =>
    workingDirectory === undefined ? base : resolve(workingDirectory);
  /** lstat that answers undefined for a missing path. */
  const lstat = async (path: string) => {
    try {
      return await sandbox.files.stat(path);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };
  /** The target of a symlink chain, or undefined when it dangles. */
  const follow = async (path: string): Promise<string | undefined> => {
    const result = await sandbox.commands.run(["sh", "-c", 'readlink -f -- "$1" && printf x', "sh", path]);
    if (result.exitCode !== 0 || !result.stdout.endsWith("\nx")) return undefined;
    return result.stdout.slice(0, -2);
  };
  const stat = async (path: string) => {
    const info = await lstat(path);
    if (info?.type !== "symlink") return info;
    const target = await follow(path);
    return target === undefined ? undefined : lstat(target);
  };
  const readBytes = async (path: string): Promise<Uint8Array | null> => {
    try {
      return await sandbox.files.read(path);
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  };
  const spawn = async (spawnOptions: {
    command: string;
    workingDirectory?: string;
    env?: Record<string, string>;
    abortSignal?: AbortSignal;
    stdin?: boolean;
  }): Promise<Experimental_SandboxProcess & { stdin?: WritableStream<Uint8Array> }> => {
    guard(spawnOptions.command);
    const signal = spawnOptions.abortSignal;
    if (signal?.aborted) throw abortError(signal);
    let stdinPipe: TransformStream<Uint8Array, Uint8Array> | undefined;
    if (spawnOptions.stdin === true) {
      if (sandbox.capabilities.map.stdin === "unsupported") {
        throw new SandboxError(
          "NotSupported",
          `writable stdin is not supported by provider ${sandbox.provider}`,
        );
      }
      stdinPipe = new TransformStream<Uint8Array, Uint8Array>();
    }
    const handle = sandbox.commands.run(spawnOptions.command, {
      cwd: cwdOf(spawnOptions.workingDirectory),
      env: spawnOptions.env,
      signal,
      collectOutput: false,
      // Without stdin: true, standard input is closed (empty).
      stdin: stdinPipe ? stdinPipe.readable : "",
    });
    const out: { push(chunk: string): void; end(): void; chunks: AsyncIterable<string> }[] = [
      channel(),
      channel(),
    ];
    const [stdout, stderr] = out as [(typeof out)[0], (typeof out)[0]];
    const exit = (async () => {
      try {
        for await (const event of handle) {
          if (event.type === "stdout") stdout.push(event.data);
          else if (event.type === "stderr") stderr.push(event.data);
        }
        const result = await handle;
        return { exitCode: result.exitCode };
      } finally {
        stdout.end();
        stderr.end();
      }
    })();
    exit.catch(() => undefined);
    let killed = false;
    const process: Experimental_SandboxProcess & { stdin?: WritableStream<Uint8Array> } = {
      stdout: byteStream(stdout.chunks),
      stderr: byteStream(stderr.chunks),
      wait: async () => {
        try {
          return await exit;
        } catch (error) {
          if (signal?.aborted) throw abortError(signal);
          throw error;
        }
      },
      kill: async () => {
        if (killed) return;
        killed = true;
        await handle.kill().catch(() => undefined);
        await exit.catch(() => undefined);
      },
    };
    if (stdinPipe) Object.defineProperty(process, "stdin", { value: stdinPipe.writable, enumerable: true });
    return process;
  };

  const description = [
    `An sbox sandbox (provider ${sandbox.provider}, id ${sandbox.id}). Commands run with sh; the working directory is ${base}, and relative paths resolve against it.`,
    sandbox.can("exposePort") ? "Servers inside can be reached from outside once their port is exposed." : "",
    options.description ?? "",
  ]
    .filter(Boolean)
    .join(" ");

  return {
    description,
    async run({ command, workingDirectory, env, abortSignal }) {
      guard(command);
      const result = await sandbox.commands.run(command, {
        cwd: cwdOf(workingDirectory),
        env,
        signal: abortSignal,
      });
      return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr };
    },
    spawn: spawn as Experimental_SandboxSession["spawn"],
    async readFile({ path }) {
      const target = resolve(path);
      const info = await stat(target);
      if (!info) return null;
      if (info.type === "dir") throw new SandboxError("Validation", `${target} is a directory`);
      return sandbox.files.readStream(target);
    },
    async readBinaryFile({ path }) {
      const target = resolve(path);
      const info = await stat(target);
      if (!info) return null;
      if (info.type === "dir") throw new SandboxError("Validation", `${target} is a directory`);
      return readBytes(target);
    },
    async readTextFile({ path, encoding, startLine, endLine }) {
      const target = resolve(path);
      const bufferEncoding = encodingOf(encoding);
      const info = await stat(target);
      if (!info) return null;
      if (info.type === "dir") throw new SandboxError("Validation", `${target} is a directory`);
      const bytes = await readBytes(target);
      if (bytes === null) return null;
      return lineRange(Buffer.from(bytes).toString(bufferEncoding), startLine, endLine);
    },
    async writeFile({ path, content }) {
      const target = resolve(path);
      if ((await stat(target))?.type === "dir")
        throw new SandboxError("Validation", `${target} is a directory`);
      await sandbox.files.write(target, content);
    },
    async writeBinaryFile({ path, content }) {
      const target = resolve(path);
      if ((await stat(target))?.type === "dir")
        throw new SandboxError("Validation", `${target} is a directory`);
      await sandbox.files.write(target, content);
    },
    async writeTextFile({ path, content, encoding }) {
      const target = resolve(path);
      const bytes = Buffer.from(content, encodingOf(encoding));
      if ((await stat(target))?.type === "dir")
        throw new SandboxError("Validation", `${target} is a directory`);
      await sandbox.files.write(target, new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    },
    async stat({ path }): Promise<Experimental_SandboxFileStat | null> {
      const info = await stat(resolve(path));
      if (!info) return null;
      return {
        type: info.type === "file" ? "file" : info.type === "dir" ? "directory" : "other",
        size: info.size,
      };
    },
    async listDirectory({ path }): Promise<Experimental_SandboxDirectoryEntry[] | null> {
      const target = resolve(path);
      const info = await stat(target);
      if (!info) return null;
      if (info.type !== "dir") throw new SandboxError("Validation", `${target} is not a directory`);
      const entries = await sandbox.files.list(target);
      return entries.map((entry) => ({
        name: entry.name,
        type: entry.type === "dir" ? "directory" : entry.type,
      }));
    },
    async deleteFile({ path }) {
      const target = resolve(path);
      const info = await lstat(target);
      if (!info) return false;
      if (info.type === "dir") throw new SandboxError("Validation", `${target} is a directory`);
      await sandbox.files.remove(target);
      return true;
    },
  };
}

/** An unbounded single-consumer channel of strings (the process output is read by the AI SDK tool). */
function channel(): { push(chunk: string): void; end(): void; chunks: AsyncIterable<string> } {
  const queue: string[] = [];
  let ended = false;
  let wake: (() => void) | undefined;
  return {
    push(chunk) {
      queue.push(chunk);
      wake?.();
    },
    end() {
      ended = true;
      wake?.();
    },
    chunks: {
      async *[Symbol.asyncIterator]() {
        for (;;) {
          if (queue.length > 0) {
            yield queue.shift()!;
            continue;
          }
          if (ended) return;
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = undefined;
        }
      },
    },
  };
}
