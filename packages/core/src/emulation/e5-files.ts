/**
 * E5: every file operation over the exec primitive. Contents move through `e5-transfer.ts` (pipelined,
 * raw on stdin where the exec takes it, base64 otherwise); metadata comes back as base64 stat records; no
 * command line carries more than `MAX_COMMAND_LINE_BYTES`. Only tools and flags that GNU and busybox share
 * are used.
 */

import { SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import type { DirEntry, FileInfo } from "../spec/files-types.js";
import type { DriverSandbox, ProviderDriver } from "../spec/provider-spec.js";
import { concatBytes } from "./concat-bytes.js";
import { decodeBase64 } from "./e5-base64.js";
import { FILE_EXIT, type FileErrorContext, fileError, GONE_FUNCTION, stderrTail } from "./e5-file-errors.js";
import { absolutePath, baseName, joinPath, normalizePath, parentOf, shellPath } from "./e5-paths.js";
import {
  fileInfoOf,
  findStart,
  PWD_RECORD,
  parseStatRecords,
  statOneCommand,
  statTreeCommand,
} from "./e5-stat-records.js";
import {
  openRead,
  openUpload,
  READ_FAILED,
  readPieces,
  slices,
  type TransferShell,
  writePieces,
} from "./e5-transfer.js";
import { type EmulationContext, noteStdoutKind, type ShellResult, stdoutIsRaw } from "./emulation-context.js";
import { pieces } from "./shell-exec-upload.js";
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

/** Builds the E5 file methods on top of `ctx.exec`. */
export function emulatedFiles(ctx: EmulationContext): EmulatedFileMethods {
  const exec = async (
    sandbox: DriverSandbox,
    script: string,
    signal: AbortSignal,
    operation: string,
    stdin?: Uint8Array,
  ): Promise<ShellResult> => {
    let result: ShellResult;
    try {
      result = await ctx.exec(sandbox, script, stdin === undefined ? { signal } : { signal, stdin });
    } catch (error) {
      throw toSandboxError(error, { provider: ctx.provider, operation });
    }
    noteStdoutKind(ctx, result);
    return result;
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

  const shell: TransferShell = { ctx, exec, check, errorContext, rawStdout: () => stdoutIsRaw(ctx) };

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
    const upload = openUpload(shell, sandbox, path, mode, signal);
    await writePieces(shell, upload, slices(data, upload.pieceSize));
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
      const open = await openRead(shell, sandbox, path, options.signal, "whole");
      if (open.more === 0) return open.first;
      const pieces = readPieces(open, options.signal);
      // One buffer of the size the first exec saw; a file that changed meanwhile is joined piece by piece.
      const whole = new Uint8Array(open.size);
      whole.set(open.first);
      let length = open.first.length;
      const extra: Uint8Array[] = [];
      try {
        for (let piece = await pieces.next(); piece; piece = await pieces.next()) {
          if (extra.length === 0 && length + piece.length <= whole.length) whole.set(piece, length);
          else extra.push(piece);
          length += piece.length;
        }
      } finally {
        pieces.cancel();
      }
      if (extra.length === 0) return length === whole.length ? whole : whole.slice(0, length);
      const start = length - extra.reduce((sum, piece) => sum + piece.length, 0);
      return concatBytes([whole.subarray(0, start), ...extra]);
    },

    async doReadFileStream(sandbox, path, options) {
      const open = await openRead(shell, sandbox, path, options.signal, "stream");
      const pieces = readPieces(open, options.signal);
      let pending: Uint8Array | undefined = open.first.length > 0 ? open.first : undefined;
      return new ReadableStream<Uint8Array>(
        {
          async pull(controller) {
            if (pending) {
              controller.enqueue(pending);
              pending = undefined;
              return;
            }
            try {
              const piece = await pieces.next();
              if (piece) controller.enqueue(piece);
              else controller.close();
            } catch (error) {
              pieces.cancel();
              throw error;
            }
          },
          cancel() {
            pieces.cancel();
          },
        },
        { highWaterMark: 0 },
      );
    },

    async doWriteFile(sandbox, path, data, options) {
      await writeBytes(sandbox, path, data, options.mode, options.signal);
    },

    async doWriteFileStream(sandbox, path, data, options) {
      const upload = openUpload(shell, sandbox, path, options.mode, options.signal);
      await writePieces(shell, upload, pieces(data, upload.pieceSize));
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
