/**
 * E6: `files.watch` by polling. Each poll is one exec that stats the watched tree (size, mtime with
 * nanoseconds, mode, inode, ctime per entry); the difference between two polls becomes create / modify /
 * delete events with absolute paths.
 *
 * Limits: changes that happen and are undone between two polls are not seen; a rewrite that keeps size,
 * inode and every timestamp identical (same kernel clock tick, ~4 ms) is not seen; directories report
 * create and delete but not modify (their children's events say what changed).
 */
import { SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import type { FileInfo, FileType, WatchEvent } from "../spec/files-types.js";
import type { DriverSandbox, ProviderDriver } from "../spec/provider-spec.js";
import { decodeBase64 } from "./e5-base64.js";
import { FILE_EXIT, fileError } from "./e5-file-errors.js";
import { absolutePath, baseName, joinPath, normalizePath, parentOf } from "./e5-paths.js";
import {
  findStart,
  PWD_RECORD,
  parseStatLine,
  parseStatRecords,
  statOneCommand,
  statTreeCommand,
} from "./e5-stat-records.js";
import type { EmulationContext } from "./emulation-context.js";
import { shellQuote } from "./shell-quote.js";

/** Default time between two polls. */
const DEFAULT_INTERVAL_MS = 500;

type WatchMethod = NonNullable<ProviderDriver["doWatch"]>;
type ListMethod = NonNullable<ProviderDriver["doListFiles"]>;

/** What a poll knows about one path. */
interface Seen {
  type: FileType;
  /** Changes whenever the entry's content or metadata changes. */
  signature: string;
}

type Snapshot = Map<string, Seen>;

const signatureOf = (entry: FileInfo): string =>
  `${entry.type} ${entry.size} ${entry.mtime?.getTime() ?? ""} ${entry.mode ?? ""}`;

/**
 * Builds the polling watcher. `files.doListFiles` (native or emulated) is only used when the sandbox lacks
 * `find` or `stat`; otherwise one exec per poll covers the whole tree.
 */
export function emulatedWatch(
  ctx: EmulationContext,
  files: { doListFiles: ListMethod } | undefined,
  options?: { intervalMs?: number | undefined },
): WatchMethod {
  const intervalMs = options?.intervalMs ?? DEFAULT_INTERVAL_MS;
  if (!Number.isFinite(intervalMs) || intervalMs <= 0) {
    throw new SandboxError("Validation", "watch interval must be a positive number of milliseconds", {
      retryable: false,
    });
  }

  /** One exec: the tree below `path` (or the path itself when it is not a directory), or undefined when absent. */
  const snapshotByExec = async (
    sandbox: DriverSandbox,
    path: string,
    recursive: boolean,
    signal: AbortSignal,
  ): Promise<Snapshot | undefined> => {
    const arg = path.startsWith("-") ? `./${path}` : path;
    const result = await ctx.exec(
      sandbox,
      `{ command -v find && command -v stat; } >/dev/null 2>&1 || exit ${FILE_EXIT.missingTool}
r=${shellQuote(arg)}
if [ -d "$r" ]; then { ${PWD_RECORD}; ${statTreeCommand(arg, recursive)}; } | base64
elif [ -e "$r" ] || [ -L "$r" ]; then { ${PWD_RECORD}; ${statOneCommand('"$r"')}; } | base64
else exit ${FILE_EXIT.notFound}; fi`,
      { signal },
    );
    if (result.exitCode === FILE_EXIT.notFound) return undefined;
    if (result.exitCode !== 0) {
      throw fileError({ provider: ctx.provider, operation: "files.watch", path }, result);
    }
    const parsed = parseStatRecords(decodeBase64(result.stdout));
    const root = absolutePath(path, parsed.cwd ?? "/");
    const prefix = `${findStart(arg)}/`;
    const snapshot: Snapshot = new Map();
    for (const record of parsed.records) {
      const key =
        record.path === arg
          ? root
          : record.path.startsWith(prefix)
            ? joinPath(root, record.path.slice(prefix.length))
            : undefined;
      if (key === undefined) continue;
      snapshot.set(key, { type: parseStatLine(record.line).type, signature: record.line });
    }
    return snapshot;
  };

  /** The fallback: walk the tree with the list method, one call per directory. */
  const snapshotByList = async (
    list: ListMethod,
    sandbox: DriverSandbox,
    path: string,
    recursive: boolean,
    signal: AbortSignal,
  ): Promise<Snapshot | undefined> => {
    const snapshot: Snapshot = new Map();
    const visit = async (dir: string, depth: number): Promise<boolean> => {
      let entries: Awaited<ReturnType<ListMethod>>;
      try {
        entries = await list(sandbox, dir, { signal });
      } catch (error) {
        if (
          SandboxError.isInstance(error) &&
          (error.code === "NotFound" || error.code === "Validation") &&
          depth > 0
        ) {
          return false;
        }
        throw error;
      }
      for (const entry of entries) {
        snapshot.set(entry.path, { type: entry.type, signature: signatureOf(entry) });
        if (recursive && entry.type === "dir") await visit(entry.path, depth + 1);
      }
      return true;
    };
    try {
      await visit(path, 0);
    } catch (error) {
      if (SandboxError.isInstance(error) && error.code === "NotFound") return undefined;
      // Not a directory: watch the single path through its parent's listing.
      if (SandboxError.isInstance(error) && error.code === "Validation") {
        const self = (await list(sandbox, parentOf(path), { signal })).find((e) => e.name === baseName(path));
        if (!self) return undefined;
        snapshot.set(self.path, { type: self.type, signature: signatureOf(self) });
        return snapshot;
      }
      throw error;
    }
    return snapshot;
  };

  return async (sandbox, rawPath, request) => {
    const path = normalizePath(rawPath);
    const recursive = request.recursive;
    let useList = false;
    const take = async (signal: AbortSignal): Promise<Snapshot | undefined> => {
      if (useList && files) return snapshotByList(files.doListFiles, sandbox, path, recursive, signal);
      return snapshotByExec(sandbox, path, recursive, signal);
    };

    let previous: Snapshot | undefined;
    try {
      previous = await take(request.signal);
    } catch (error) {
      const missingTool = SandboxError.isInstance(error) && error.code === "NotSupported";
      if (!missingTool || !files)
        throw toSandboxError(error, { provider: ctx.provider, operation: "files.watch" });
      useList = true;
      previous = await take(request.signal);
    }
    if (previous === undefined) {
      throw new SandboxError("NotFound", `files.watch ${JSON.stringify(path)}: no such file or directory`, {
        provider: ctx.provider,
        retryable: false,
      });
    }

    let closed = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let inFlight: Promise<void> | undefined;
    const stopPolling = new AbortController();
    const pollSignal = AbortSignal.any([stopPolling.signal, request.signal]);

    const emit = (event: WatchEvent) => {
      if (closed) return;
      try {
        request.onEvent(event);
      } catch {
        // A throwing listener must not stop the watcher; the listener owns its errors.
      }
    };

    const poll = async () => {
      let current: Snapshot;
      try {
        current = (await take(pollSignal)) ?? new Map();
      } catch {
        // A failed poll (a transient exec error) is retried at the next interval; the diff stays correct
        // because `previous` is kept.
        return;
      }
      if (closed) return;
      const before = previous ?? new Map<string, Seen>();
      const deleted: string[] = [];
      const created: string[] = [];
      const modified: string[] = [];
      for (const [key, seen] of before) {
        const now = current.get(key);
        if (!now) deleted.push(key);
        else if (now.type !== seen.type) {
          deleted.push(key);
          created.push(key);
        } else if (now.type !== "dir" && now.signature !== seen.signature) modified.push(key);
      }
      for (const key of current.keys()) if (!before.has(key)) created.push(key);
      previous = current;
      for (const key of deleted.sort().reverse()) emit({ type: "delete", path: key });
      for (const key of created.sort()) emit({ type: "create", path: key });
      for (const key of modified.sort()) emit({ type: "modify", path: key });
    };

    const schedule = () => {
      if (closed) return;
      timer = setTimeout(() => {
        timer = undefined;
        inFlight = poll().finally(() => {
          inFlight = undefined;
          schedule();
        });
      }, intervalMs);
    };

    const close = async (): Promise<void> => {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      stopPolling.abort();
      request.signal.removeEventListener("abort", onAbort);
      await inFlight;
    };
    const onAbort = () => {
      void close();
    };
    if (request.signal.aborted) closed = true;
    else request.signal.addEventListener("abort", onAbort, { once: true });
    schedule();
    return { close };
  };
}
