/**
 * `filesystem.Filesystem` of the test envd, from spec/envd/filesystem/filesystem.proto, over a real
 * directory tree: Stat (of the link itself), ListDir (depth, following a symlinked directory), MakeDir
 * (creating parents; AlreadyExists for a directory), Move (creating the target's parents), Remove
 * (recursive, silent when missing) and the streaming WatchDir (start event, then events; directories
 * created under a recursive watch are watched too).
 */
import {
  existsSync,
  type FSWatcher,
  lstatSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  type Stats,
  statSync,
  watch,
} from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import { ConnectFailure, type ServerStream } from "./e2b-test-connect-protocol.js";
import { requestUser } from "./e2b-test-users.js";

/** What the filesystem service needs to know about its sandbox. */
export interface FilesystemHost {
  readonly home: string;
  readonly defaultUser: string;
}

function fileTypeOf(stats: Stats): string {
  if (stats.isSymbolicLink()) return "FILE_TYPE_SYMLINK";
  if (stats.isDirectory()) return "FILE_TYPE_DIRECTORY";
  if (stats.isFile()) return "FILE_TYPE_FILE";
  return "FILE_TYPE_UNSPECIFIED";
}

/** Go's `FileMode.String()`: a type letter then rwx bits. */
function permissionsOf(stats: Stats): string {
  const type = stats.isDirectory()
    ? "d"
    : stats.isSymbolicLink()
      ? "L"
      : stats.isFIFO()
        ? "p"
        : stats.isSocket()
          ? "S"
          : "-";
  const bits = "rwxrwxrwx";
  let out = type;
  for (let i = 0; i < 9; i++) out += stats.mode & (1 << (8 - i)) ? bits[i] : "-";
  return out;
}

/** google.protobuf.Timestamp in its JSON form (RFC 3339 with nanoseconds). */
function timestampOf(mtimeNs: bigint): string {
  const seconds = mtimeNs / 1_000_000_000n;
  const nanos = mtimeNs % 1_000_000_000n;
  const iso = new Date(Number(seconds) * 1000).toISOString().replace(/\.\d{3}Z$/, "");
  return `${iso}.${nanos.toString().padStart(9, "0")}Z`;
}

/** The EntryInfo message of a path (lstat: a symlink is described as itself). */
export function entryInfo(path: string): Record<string, unknown> {
  const stats = lstatSync(path);
  const entry: Record<string, unknown> = {
    name: basename(path),
    type: fileTypeOf(stats),
    path,
    size: String(stats.size),
    mode: stats.mode & 0o777,
    permissions: permissionsOf(stats),
    owner: stats.uid === 0 ? "root" : String(stats.uid),
    group: stats.gid === 0 ? "root" : String(stats.gid),
    modifiedTime: timestampOf(lstatSync(path, { bigint: true }).mtimeNs),
  };
  if (stats.isSymbolicLink()) entry.symlinkTarget = readlinkSync(path);
  return entry;
}

function errnoOf(error: unknown): string | undefined {
  return (error as { code?: string }).code;
}

/** The filesystem service of one sandbox. */
export class FilesystemService {
  private readonly watchers = new Set<() => void>();

  constructor(private readonly host: FilesystemHost) {}

  /** envd's ExpandAndResolve: `~` is the user's home, relative paths start at the default workdir. */
  resolvePath(path: unknown, headers: IncomingHttpHeaders): string {
    requestUser(headers.authorization, this.host.defaultUser);
    if (typeof path !== "string") throw new ConnectFailure("invalid_argument", "path must be a string");
    if (path.includes("\0")) throw new ConnectFailure("invalid_argument", "path contains a NUL byte");
    if (path === "~" || path === "") return this.host.home;
    if (path.startsWith("~/")) return resolve(this.host.home, path.slice(2));
    return isAbsolute(path) ? resolve(path) : resolve(this.host.home, path);
  }

  /** `Stat`. */
  stat(message: Record<string, unknown>, headers: IncomingHttpHeaders): Record<string, unknown> {
    const path = this.resolvePath(message.path, headers);
    try {
      return { entry: entryInfo(path) };
    } catch (error) {
      if (errnoOf(error) === "ENOENT") throw new ConnectFailure("not_found", `file not found: ${path}`);
      throw new ConnectFailure("internal", `error getting file info: ${String(error)}`);
    }
  }

  /** `ListDir`: entries down to `depth` (default 1), paths under the resolved directory. */
  listDir(message: Record<string, unknown>, headers: IncomingHttpHeaders): Record<string, unknown> {
    const requested = this.resolvePath(message.path, headers);
    const depth = Number(message.depth ?? 0) || 1;
    let root: string;
    try {
      root = realpathSync(requested);
    } catch (error) {
      if (errnoOf(error) === "ENOENT") throw new ConnectFailure("not_found", `path not found: ${requested}`);
      throw new ConnectFailure("internal", `error resolving symlink: ${String(error)}`);
    }
    if (!statSync(root).isDirectory())
      throw new ConnectFailure("invalid_argument", `path is not a directory: ${root}`);
    const entries: Record<string, unknown>[] = [];
    const walk = (dir: string, level: number) => {
      for (const name of readdirSync(dir).sort()) {
        const path = join(dir, name);
        let entry: Record<string, unknown>;
        try {
          entry = entryInfo(path);
        } catch {
          continue;
        }
        entries.push(entry);
        if (entry.type === "FILE_TYPE_DIRECTORY" && level < depth) walk(path, level + 1);
      }
    };
    walk(root, 1);
    return { entries };
  }

  /** `MakeDir`: creates the directory and its parents. */
  makeDir(message: Record<string, unknown>, headers: IncomingHttpHeaders): Record<string, unknown> {
    const path = this.resolvePath(message.path, headers);
    if (existsSync(path)) {
      if (statSync(path).isDirectory())
        throw new ConnectFailure("already_exists", `directory already exists: ${path}`);
      throw new ConnectFailure("invalid_argument", `path already exists but it is not a directory: ${path}`);
    }
    try {
      mkdirSync(path, { recursive: true });
    } catch (error) {
      throw new ConnectFailure("internal", `error creating directory: ${String(error)}`);
    }
    return { entry: { name: basename(path), type: "FILE_TYPE_DIRECTORY", path } };
  }

  /** `Move`: renames, creating the destination's parent directories. */
  move(message: Record<string, unknown>, headers: IncomingHttpHeaders): Record<string, unknown> {
    const source = this.resolvePath(message.source, headers);
    const destination = this.resolvePath(message.destination, headers);
    try {
      mkdirSync(dirname(destination), { recursive: true });
    } catch (error) {
      throw new ConnectFailure("internal", `error ensuring directories: ${String(error)}`);
    }
    try {
      renameSync(source, destination);
    } catch (error) {
      if (errnoOf(error) === "ENOENT")
        throw new ConnectFailure("not_found", `source file not found: ${String(error)}`);
      throw new ConnectFailure("internal", `error renaming: ${String(error)}`);
    }
    return { entry: entryInfo(destination) };
  }

  /** `Remove`: removes recursively; a missing path is not an error (Go's os.RemoveAll). */
  remove(message: Record<string, unknown>, headers: IncomingHttpHeaders): Record<string, unknown> {
    const path = this.resolvePath(message.path, headers);
    try {
      rmSync(path, { recursive: true, force: true });
    } catch (error) {
      throw new ConnectFailure("internal", `error removing file or directory: ${String(error)}`);
    }
    return {};
  }

  /** `WatchDir`: a start event, then filesystem events (names relative to the watched directory). */
  async watchDir(
    message: Record<string, unknown>,
    stream: ServerStream,
    headers: IncomingHttpHeaders,
  ): Promise<void> {
    const root = this.resolvePath(message.path, headers);
    const recursive = message.recursive === true;
    let stats: Stats;
    try {
      stats = statSync(root);
    } catch (error) {
      if (errnoOf(error) === "ENOENT") throw new ConnectFailure("not_found", `path ${root} not found`);
      throw new ConnectFailure("internal", String(error));
    }
    if (!stats.isDirectory()) throw new ConnectFailure("invalid_argument", `path ${root} not a directory`);
    const watchers = new Map<string, FSWatcher>();
    const known = new Set<string>();
    const send = (type: string, path: string) =>
      void stream.send({ filesystem: { name: relative(root, path), type } });
    const add = (dir: string, announce: boolean) => {
      if (watchers.has(dir)) return;
      let watcher: FSWatcher;
      try {
        watcher = watch(dir, (event, name) => {
          if (!name) return;
          const path = join(dir, name.toString());
          if (event === "change") {
            send("EVENT_TYPE_WRITE", path);
            return;
          }
          if (existsSync(path)) {
            if (!known.has(path)) send("EVENT_TYPE_CREATE", path);
            known.add(path);
            if (recursive && lstatSync(path).isDirectory()) add(path, true);
          } else {
            send(known.has(path) ? "EVENT_TYPE_REMOVE" : "EVENT_TYPE_RENAME", path);
            known.delete(path);
            watchers.get(path)?.close();
            watchers.delete(path);
          }
        });
      } catch {
        return;
      }
      watchers.set(dir, watcher);
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        // Entries of a directory that appeared under the watch were created after it started.
        if (announce && !known.has(path)) send("EVENT_TYPE_CREATE", path);
        known.add(path);
        if (recursive) {
          try {
            if (lstatSync(path).isDirectory()) add(path, announce);
          } catch {
            // Gone already.
          }
        }
      }
    };
    add(root, false);
    await stream.send({ start: {} });
    const interval = Number(headers["keepalive-ping-interval"] ?? 0);
    const keepalive =
      interval > 0 ? setInterval(() => void stream.send({ keepalive: {} }), interval * 1000) : undefined;
    await new Promise<void>((resolveClose) => {
      const stop = () => resolveClose();
      this.watchers.add(stop);
      stream.onClose(stop);
    });
    if (keepalive) clearInterval(keepalive);
    for (const watcher of watchers.values()) watcher.close();
  }

  /** Ends every open watch stream (the sandbox is going away). */
  closeWatches(): void {
    for (const stop of this.watchers) stop();
    this.watchers.clear();
  }
}
