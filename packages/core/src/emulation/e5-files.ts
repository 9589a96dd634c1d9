/**
 * E5: every file operation over the exec primitive. Bytes travel as base64 (exec may carry only text),
 * writes go to a temporary file beside the target that is moved into place at the end, and no command line
 * carries more than {@link MAX_COMMAND_LINE_BYTES}. Only tools and flags that GNU and busybox share are used.
 */

import { SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import type { DirEntry, FileInfo } from "../spec/files-types.js";
import type { DriverSandbox, ProviderDriver } from "../spec/provider-spec.js";
import { concatBytes } from "./concat-bytes.js";
import { decodeBase64, encodeBase64 } from "./e5-base64.js";
import { FILE_EXIT, type FileErrorContext, fileError, GONE_FUNCTION, stderrTail } from "./e5-file-errors.js";
import {
  absolutePath,
  baseName,
  joinPath,
  normalizePath,
  parentOf,
  randomToken,
  shellPath,
} from "./e5-paths.js";
import {
  fileInfoOf,
  findStart,
  PWD_RECORD,
  parseStatRecords,
  statOneCommand,
  statTreeCommand,
} from "./e5-stat-records.js";
import { type EmulationContext, MAX_COMMAND_LINE_BYTES, type ShellResult } from "./emulation-context.js";
import { shellQuote } from "./shell-quote.js";

/** The file methods E5 provides. */
export type EmulatedFileMethods = Required<
  Pick<
    ProviderDriver,
    | "doReadFile"
    | "doWriteFile"
    | "doReadFileStream"
    | "doWriteFileStream"
    | "doListFiles"
    | "doStat"
    | "doMkdir"
    | "doRemove"
    | "doRename"
  >
>;

/** Bytes read per exec: `dd` blocks of 64 KiB, 64 of them. */
const READ_BLOCK = 64 * 1024;
const READ_BLOCKS = 64;
const READ_CHUNK = READ_BLOCK * READ_BLOCKS;
/** Raw bytes per exec when the data travels on stdin (sent as base64 text). */
const STDIN_CHUNK = 8 * 1024 * 1024;
/**
 * What a write script may use of the command line when the data travels on it: the rest of the 64 KiB is
 * left to wrappers added by other emulations (cwd/env, exit-code marker).
 */
const INLINE_SCRIPT_BUDGET = MAX_COMMAND_LINE_BYTES - 4 * 1024;
const READ_FAILED = "sbox-read-failed";
const encoder = new TextEncoder();

/** Builds the E5 file methods on top of `ctx.exec`. */
export function emulatedFiles(ctx: EmulationContext): EmulatedFileMethods {
  const exec = async (
    sandbox: DriverSandbox,
    script: string,
    signal: AbortSignal,
    operation: string,
    stdin?: Uint8Array,
  ): Promise<ShellResult> => {
    try {
      return await ctx.exec(sandbox, script, stdin === undefined ? { signal } : { signal, stdin });
    } catch (error) {
      throw toSandboxError(error, { provider: ctx.provider, operation });
    }
  };
  const errorContext = (operation: string, path: string, messages?: FileErrorContext["messages"]) => ({
    provider: ctx.provider,
    operation,
    path,
    messages,
  });
  const check = (result: ShellResult, context: FileErrorContext): ShellResult => {
    if (result.exitCode !== 0) throw fileError(context, result);
    if (new TextDecoder().decode(result.stderr).includes(READ_FAILED)) {
      throw new SandboxError(
        "Provider",
        `${context.operation} ${JSON.stringify(context.path)}: ${stderrTail(result)}`,
        {
          provider: ctx.provider,
          retryable: false,
        },
      );
    }
    return result;
  };

  /** Reads a file chunk by chunk; the first exec also checks the path and reports the size. */
  const openRead = async (sandbox: DriverSandbox, rawPath: string, signal: AbortSignal) => {
    const path = normalizePath(rawPath);
    const context = errorContext("files.read", path);
    const arg = shellPath(path);
    const first = check(
      await exec(
        sandbox,
        `${GONE_FUNCTION}f=${arg}
if [ ! -e "$f" ]; then sbox_gone "$f"; fi
if [ -d "$f" ]; then exit ${FILE_EXIT.isDirectory}; fi
[ -f "$f" ] || exit ${FILE_EXIT.notRegular}
[ -r "$f" ] || exit ${FILE_EXIT.denied}
s=$(stat -L -c %s "$f") || exit 1
printf '%s\\n' "$s"
if [ "$s" -gt 0 ]; then { dd if="$f" bs=${READ_BLOCK} count=${READ_BLOCKS} 2>/dev/null || echo ${READ_FAILED} >&2; } | base64
else { cat "$f" || echo ${READ_FAILED} >&2; } | base64; fi`,
        signal,
        "files.read",
      ),
      context,
    );
    const newline = first.stdout.indexOf(0x0a);
    const size = Number(new TextDecoder().decode(first.stdout.subarray(0, Math.max(newline, 0))));
    if (newline < 0 || !Number.isSafeInteger(size)) {
      throw new SandboxError(
        "Provider",
        `files.read ${JSON.stringify(path)}: unexpected output from the sandbox`,
        {
          provider: ctx.provider,
        },
      );
    }
    const firstChunk = decodeBase64(first.stdout.subarray(newline + 1));
    let total = firstChunk.length;
    let lastLength = firstChunk.length;
    return {
      size,
      first: firstChunk,
      /** The next chunk, or undefined at the end (the size seen by the first exec, or a short chunk). */
      async next(chunkSignal: AbortSignal): Promise<Uint8Array | undefined> {
        // A size of 0 means the content was read whole by `cat` (e.g. /proc files report size 0).
        if (size === 0 || total >= size || lastLength < READ_CHUNK) return undefined;
        const result = check(
          await exec(
            sandbox,
            `f=${arg}
[ -f "$f" ] || exit ${FILE_EXIT.notFound}
{ dd if="$f" bs=${READ_BLOCK} skip=${total / READ_BLOCK} count=${READ_BLOCKS} 2>/dev/null || echo ${READ_FAILED} >&2; } | base64`,
            chunkSignal,
            "files.read",
          ),
          context,
        );
        const chunk = decodeBase64(result.stdout);
        total += chunk.length;
        lastLength = chunk.length;
        return chunk.length > 0 ? chunk : undefined;
      },
    };
  };

  /** One upload: a temporary file beside the target, appended chunk by chunk, moved into place at the end. */
  const openUpload = (
    sandbox: DriverSandbox,
    rawPath: string,
    mode: number | undefined,
    signal: AbortSignal,
  ) => {
    const path = normalizePath(rawPath);
    if (path === "/" || path === "." || path === ".." || path.endsWith("/.") || path.endsWith("/..")) {
      throw new SandboxError("Validation", `files.write ${JSON.stringify(path)}: not a file path`, {
        provider: ctx.provider,
        retryable: false,
      });
    }
    if (mode !== undefined && (!Number.isInteger(mode) || mode < 0 || mode > 0o7777)) {
      throw new SandboxError("Validation", `files.write: mode must be an integer between 0 and 0o7777`, {
        provider: ctx.provider,
        retryable: false,
      });
    }
    const context = errorContext("files.write", path, {
      [FILE_EXIT.isDirectory]: "the path is a directory",
    });
    const tmp = shellPath(joinPath(parentOf(path), `.sbox-write-${randomToken()}.tmp`));
    const head = `t=${shellPath(path)}; d=${shellPath(parentOf(path))}; tmp=${tmp}\n`;
    const begin = `if [ -d "$t" ]; then exit ${FILE_EXIT.isDirectory}; fi
if [ ! -d "$d" ]; then e=$(mkdir -p "$d" 2>&1) || { case $e in *"ot a directory"*|*"ile exists"*) exit ${FILE_EXIT.parentNotDirectory};; *ermission*) exit ${FILE_EXIT.denied};; esac; printf '%s\\n' "$e" >&2; exit 1; }; fi
`;
    const octal = mode === undefined ? undefined : `0${mode.toString(8)}`;
    const keepMode =
      octal === undefined
        ? `if [ -f "$t" ] && [ ! -L "$t" ]; then m=$(stat -c %a "$t") && chmod "$m" "$tmp"; fi\n`
        : `chmod ${octal} "$tmp" || { rm -f "$tmp"; exit 1; }\n`;
    const finish = `if [ -d "$t" ]; then rm -f "$tmp"; exit ${FILE_EXIT.isDirectory}; fi
${keepMode}if [ -L "$t" ]; then cat "$tmp" > "$t" || { rm -f "$tmp"; exit 1; }; rm -f "$tmp"${octal === undefined ? "" : `; chmod ${octal} "$t"`}
else mv -f "$tmp" "$t" || { rm -f "$tmp"; exit 1; }; fi
`;
    const script = (first: boolean, final: boolean, data: string): string =>
      head +
      (first ? begin : `[ -f "$tmp" ] || exit ${FILE_EXIT.tempVanished}\n`) +
      data +
      (final ? finish : "");
    const sink = (first: boolean) => `${first ? ">" : ">>"} "$tmp" || { rm -f "$tmp"; exit 1; }\n`;

    let chunkSize = STDIN_CHUNK;
    if (!ctx.execAcceptsStdin) {
      const overhead = encoder.encode(script(true, true, `printf '%s' '' | base64 -d ${sink(true)}`)).length;
      chunkSize = Math.floor((INLINE_SCRIPT_BUDGET - overhead) / 4) * 3;
      if (chunkSize < 3 * 1024) {
        throw new SandboxError(
          "Validation",
          `files.write ${JSON.stringify(path)}: path too long to write over exec`,
          {
            provider: ctx.provider,
            retryable: false,
          },
        );
      }
    }
    let first = true;
    let attempted = false;
    return {
      chunkSize,
      /** Sends one chunk (at most `chunkSize` bytes); `final` moves the file into place. */
      async push(data: Uint8Array, final: boolean): Promise<void> {
        if (signal.aborted)
          throw toSandboxError(signal.reason ?? new Error("aborted"), { provider: ctx.provider });
        attempted = true;
        let result: ShellResult;
        if (data.length === 0) {
          result = await exec(
            sandbox,
            script(first, final, first ? `: ${sink(true)}` : ""),
            signal,
            "files.write",
          );
        } else if (ctx.execAcceptsStdin) {
          result = await exec(
            sandbox,
            script(first, final, `base64 -d ${sink(first)}`),
            signal,
            "files.write",
            encoder.encode(encodeBase64(data)),
          );
        } else {
          result = await exec(
            sandbox,
            script(first, final, `printf '%s' '${encodeBase64(data)}' | base64 -d ${sink(first)}`),
            signal,
            "files.write",
          );
        }
        check(result, context);
        first = false;
      },
      /** Removes the temporary file after a failure (best effort: the original error is what matters). */
      async discard(): Promise<void> {
        if (!attempted) return;
        try {
          await ctx.exec(sandbox, `rm -f ${tmp}`, { signal: AbortSignal.timeout(30_000) });
        } catch {
          // The sandbox may be gone; the failure that got us here is reported instead.
        }
      },
    };
  };

  const writeBytes = async (
    sandbox: DriverSandbox,
    path: string,
    data: Uint8Array,
    mode: number | undefined,
    signal: AbortSignal,
  ): Promise<void> => {
    if (!(data instanceof Uint8Array)) {
      throw new SandboxError("Validation", "files.write: data must be a Uint8Array", { retryable: false });
    }
    const upload = openUpload(sandbox, path, mode, signal);
    try {
      if (data.length === 0) return await upload.push(data, true);
      for (let offset = 0; offset < data.length; offset += upload.chunkSize) {
        const end = Math.min(offset + upload.chunkSize, data.length);
        await upload.push(data.subarray(offset, end), end >= data.length);
      }
    } catch (error) {
      await upload.discard();
      throw toSandboxError(error, { provider: ctx.provider, operation: "files.write" });
    }
  };

  const statPath = async (
    sandbox: DriverSandbox,
    rawPath: string,
    signal: AbortSignal,
  ): Promise<FileInfo> => {
    const path = normalizePath(rawPath);
    const context = errorContext("files.stat", path);
    const result = check(
      await exec(
        sandbox,
        `${GONE_FUNCTION}p=${shellPath(path)}
[ -e "$p" ] || [ -L "$p" ] || sbox_gone "$p"
{ ${PWD_RECORD}; ${statOneCommand('"$p"')}; } | base64`,
        signal,
        "files.stat",
      ),
      context,
    );
    const parsed = parseStatRecords(decodeBase64(result.stdout));
    const record = parsed.records[0];
    if (!record) {
      throw new SandboxError(
        "Provider",
        `files.stat ${JSON.stringify(path)}: ${stderrTail(result) || "no output"}`,
        {
          provider: ctx.provider,
        },
      );
    }
    return fileInfoOf(baseName(path), absolutePath(path, parsed.cwd ?? "/"), record.line);
  };

  return {
    async doReadFile(sandbox, path, options) {
      const reader = await openRead(sandbox, path, options.signal);
      if (reader.size === 0 || reader.first.length < READ_CHUNK) return reader.first;
      const chunks = [reader.first];
      for (let chunk = await reader.next(options.signal); chunk; chunk = await reader.next(options.signal)) {
        chunks.push(chunk);
      }
      return concatBytes(chunks);
    },

    async doReadFileStream(sandbox, path, options) {
      const reader = await openRead(sandbox, path, options.signal);
      const cancelled = new AbortController();
      const signal = AbortSignal.any([options.signal, cancelled.signal]);
      let pending: Uint8Array | undefined = reader.first.length > 0 ? reader.first : undefined;
      return new ReadableStream<Uint8Array>(
        {
          async pull(controller) {
            if (pending) {
              controller.enqueue(pending);
              pending = undefined;
              return;
            }
            const chunk = await reader.next(signal);
            if (chunk) controller.enqueue(chunk);
            else controller.close();
          },
          cancel() {
            cancelled.abort();
          },
        },
        { highWaterMark: 0 },
      );
    },

    async doWriteFile(sandbox, path, data, options) {
      await writeBytes(sandbox, path, data, options.mode, options.signal);
    },

    async doWriteFileStream(sandbox, path, data, options) {
      const upload = openUpload(sandbox, path, options.mode, options.signal);
      const reader = data.getReader();
      const pending: Uint8Array[] = [];
      let pendingBytes = 0;
      const take = (count: number): Uint8Array => {
        const out = new Uint8Array(count);
        let at = 0;
        while (at < count) {
          const head = pending[0]!;
          const need = count - at;
          if (head.length <= need) {
            out.set(head, at);
            at += head.length;
            pending.shift();
          } else {
            out.set(head.subarray(0, need), at);
            pending[0] = head.subarray(need);
            at += need;
          }
        }
        pendingBytes -= count;
        return out;
      };
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          if (!(value instanceof Uint8Array)) {
            throw new SandboxError("Validation", "files.write: the stream must yield Uint8Array chunks", {
              provider: ctx.provider,
              retryable: false,
            });
          }
          pending.push(value);
          pendingBytes += value.length;
          while (pendingBytes >= upload.chunkSize) await upload.push(take(upload.chunkSize), false);
        }
        await upload.push(take(pendingBytes), true);
      } catch (error) {
        reader.cancel(error).catch(() => {});
        await upload.discard();
        throw toSandboxError(error, { provider: ctx.provider, operation: "files.write" });
      } finally {
        reader.releaseLock();
      }
    },

    async doListFiles(sandbox, rawPath, options): Promise<DirEntry[]> {
      const path = normalizePath(rawPath);
      const context = errorContext("files.list", path);
      const arg = path.startsWith("-") ? `./${path}` : path;
      const result = check(
        await exec(
          sandbox,
          `${GONE_FUNCTION}d=${shellQuote(arg)}
[ -e "$d" ] || [ -L "$d" ] || sbox_gone "$d"
[ -d "$d" ] || exit ${FILE_EXIT.notDirectory}
{ [ -r "$d" ] && [ -x "$d" ]; } || exit ${FILE_EXIT.denied}
{ ${PWD_RECORD}; ${statTreeCommand(arg, false)}; } | base64`,
          options.signal,
          "files.list",
        ),
        context,
      );
      if (new TextDecoder().decode(result.stderr).includes("sbox-find-failed")) {
        throw new SandboxError("Provider", `files.list ${JSON.stringify(path)}: ${stderrTail(result)}`, {
          provider: ctx.provider,
        });
      }
      const parsed = parseStatRecords(decodeBase64(result.stdout));
      const dir = absolutePath(path, parsed.cwd ?? "/");
      const prefix = `${findStart(arg)}/`;
      return parsed.records
        .filter((record) => record.path.startsWith(prefix))
        .map((record) => {
          const name = record.path.slice(prefix.length);
          return fileInfoOf(name, joinPath(dir, name), record.line);
        })
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },

    async doStat(sandbox, path, options) {
      return statPath(sandbox, path, options.signal);
    },

    async doMkdir(sandbox, rawPath, options) {
      const path = normalizePath(rawPath);
      const p = shellPath(path);
      const script = options.recursive
        ? `p=${p}
if [ -d "$p" ]; then exit 0; fi
if [ -e "$p" ] || [ -L "$p" ]; then exit ${FILE_EXIT.exists}; fi
e=$(mkdir -p "$p" 2>&1) || { case $e in *"ot a directory"*|*"ile exists"*) exit ${FILE_EXIT.parentNotDirectory};; *ermission*) exit ${FILE_EXIT.denied};; esac; printf '%s\\n' "$e" >&2; exit 1; }`
        : `${GONE_FUNCTION}p=${p}; d=${shellPath(parentOf(path))}
if [ -e "$p" ] || [ -L "$p" ]; then exit ${FILE_EXIT.exists}; fi
[ -e "$d" ] || sbox_gone "$d"
[ -d "$d" ] || exit ${FILE_EXIT.parentNotDirectory}
mkdir "$p" || exit 1`;
      check(
        await exec(sandbox, script, options.signal, "files.mkdir"),
        errorContext("files.mkdir", path, {
          [FILE_EXIT.exists]: options.recursive ? "exists and is not a directory" : "already exists",
          [FILE_EXIT.notFound]: "the parent directory does not exist (use recursive)",
        }),
      );
    },

    async doRemove(sandbox, rawPath, options) {
      const path = normalizePath(rawPath);
      if (path === "/") {
        throw new SandboxError("Validation", "files.remove: refusing to remove the root directory", {
          provider: ctx.provider,
          retryable: false,
        });
      }
      const body = options.recursive
        ? `rm -rf "$p" || exit 1`
        : `rmdir "$p" 2>/dev/null || { for f in "$p"/* "$p"/.[!.]* "$p"/..?*; do if [ -e "$f" ] || [ -L "$f" ]; then exit ${FILE_EXIT.notEmpty}; fi; done; rmdir "$p" || exit 1; }`;
      check(
        await exec(
          sandbox,
          `${GONE_FUNCTION}p=${shellPath(path)}
[ -e "$p" ] || [ -L "$p" ] || sbox_gone "$p"
if [ -d "$p" ] && [ ! -L "$p" ]; then ${body}
else rm -f "$p" || exit 1; fi`,
          options.signal,
          "files.remove",
        ),
        errorContext("files.remove", path),
      );
    },

    async doRename(sandbox, rawFrom, rawTo, options) {
      const from = normalizePath(rawFrom, "source path");
      const to = normalizePath(rawTo, "destination path");
      check(
        await exec(
          sandbox,
          `${GONE_FUNCTION}f=${shellPath(from)}; t=${shellPath(to)}; d=${shellPath(parentOf(to))}
[ -e "$f" ] || [ -L "$f" ] || sbox_gone "$f"
if [ "$f" = "$t" ]; then exit 0; fi
[ -e "$d" ] || exit ${FILE_EXIT.destinationParentMissing}
[ -d "$d" ] || exit ${FILE_EXIT.parentNotDirectory}
if [ -d "$t" ] && [ ! -L "$t" ]; then exit ${FILE_EXIT.exists}; fi
if [ -d "$f" ] && [ ! -L "$f" ] && { [ -e "$t" ] || [ -L "$t" ]; }; then exit ${FILE_EXIT.exists}; fi
mv -f "$f" "$t" || exit 1`,
          options.signal,
          "files.rename",
        ),
        errorContext("files.rename", `${from} -> ${to}`, {
          [FILE_EXIT.exists]: "the destination exists and one of the two is a directory",
        }),
      );
    },
  };
}
