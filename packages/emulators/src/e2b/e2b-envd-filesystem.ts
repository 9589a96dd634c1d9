/**
 * envd's `filesystem.Filesystem` service (spec/envd/filesystem/filesystem.proto), every operation done
 * inside the sandbox by the envd helper: Stat, ListDir (depth, through a symlinked directory), MakeDir
 * (parents created and owned by the user; AlreadyExists for a directory), Move (creating the destination's
 * parents), Remove (recursive, silent when missing), the streaming WatchDir (a start event, then inotify
 * events) and its polling form CreateWatcher / GetWatcherEvents / RemoveWatcher.
 */
import { randomUUID } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { ConnectFailure, type ConnectMessage, type ServerStream } from "./e2b-connect-protocol.js";
import type { E2BMachine } from "./e2b-machine.js";
import { expandAndResolve } from "./e2b-paths.js";

/** What the filesystem service needs of its sandbox. */
export interface EnvdFilesystemHost {
  readonly machine: E2BMachine;
  track(stream: ServerStream): void;
}

/** Events a polled watcher keeps until they are fetched (envd bounds its queue too). */
const WATCHER_QUEUE_LIMIT = 10_000;

interface PolledWatcher {
  readonly events: ConnectMessage[];
  readonly stop: AbortController;
  failure?: ConnectFailure | undefined;
}

/** The filesystem service of one emulated sandbox. */
export class EnvdFilesystemService {
  private readonly watches = new Set<AbortController>();
  private readonly watchers = new Map<string, PolledWatcher>();

  constructor(private readonly host: EnvdFilesystemHost) {}

  private async resolve(path: unknown, headers: IncomingHttpHeaders) {
    const user = await this.host.machine.requestUser(headers.authorization);
    if (typeof path !== "string") throw new ConnectFailure("invalid_argument", "path must be a string");
    return { user, path: expandAndResolve(path, user) };
  }

  /** `Stat`. */
  async stat(message: ConnectMessage, headers: IncomingHttpHeaders): Promise<ConnectMessage> {
    const { path } = await this.resolve(message.path, headers);
    return { entry: await this.host.machine.helper("stat", { path }) };
  }

  /** `ListDir`: entries down to `depth` (default 1), paths under the requested directory. */
  async listDir(message: ConnectMessage, headers: IncomingHttpHeaders): Promise<ConnectMessage> {
    const { path } = await this.resolve(message.path, headers);
    const depth = Number(message.depth ?? 0) || 1;
    if (!Number.isInteger(depth) || depth < 1 || depth > 1_000) {
      throw new ConnectFailure(
        "invalid_argument",
        `depth must be a positive integer, got ${String(message.depth)}`,
      );
    }
    return { entries: await this.host.machine.helper("list", { path, depth }) };
  }

  /** `MakeDir`: creates the directory and its parents, owned by the user. */
  async makeDir(message: ConnectMessage, headers: IncomingHttpHeaders): Promise<ConnectMessage> {
    const { user, path } = await this.resolve(message.path, headers);
    const owner = this.host.machine.ownerOf(user);
    return { entry: await this.host.machine.helper("mkdir", { path, ...owner }) };
  }

  /** `Move`: renames, creating the destination's parents. */
  async move(message: ConnectMessage, headers: IncomingHttpHeaders): Promise<ConnectMessage> {
    const { user, path: source } = await this.resolve(message.source, headers);
    if (typeof message.destination !== "string") {
      throw new ConnectFailure("invalid_argument", "destination must be a string");
    }
    const destination = expandAndResolve(message.destination, user);
    const owner = this.host.machine.ownerOf(user);
    return { entry: await this.host.machine.helper("move", { source, destination, ...owner }) };
  }

  /** `Remove`: recursive; a missing path is no error (Go's os.RemoveAll). */
  async remove(message: ConnectMessage, headers: IncomingHttpHeaders): Promise<ConnectMessage> {
    const { path } = await this.resolve(message.path, headers);
    await this.host.machine.helper("remove", { path });
    return {};
  }

  private async startWatch(
    message: ConnectMessage,
    headers: IncomingHttpHeaders,
    onEvent: (event: ConnectMessage) => void,
    stop: AbortController,
  ): Promise<{ done: Promise<void> }> {
    const { path } = await this.resolve(message.path, headers);
    const args = {
      path,
      recursive: message.recursive === true,
      includeEntry: message.includeEntry === true,
    };
    this.watches.add(stop);
    try {
      const { done } = await this.host.machine.helperStream("watch", args, {
        signal: stop.signal,
        onLine: (line) => {
          try {
            const parsed = JSON.parse(line) as { ev?: ConnectMessage };
            if (parsed.ev) onEvent(parsed.ev);
          } catch {
            // A line cut by a dying helper carries no event.
          }
        },
      });
      return { done: done.finally(() => this.watches.delete(stop)) };
    } catch (error) {
      this.watches.delete(stop);
      throw error;
    }
  }

  /** `WatchDir`: a start event, then filesystem events (names relative to the watched directory). */
  async watchDir(message: ConnectMessage, stream: ServerStream, headers: IncomingHttpHeaders): Promise<void> {
    const stop = new AbortController();
    stream.onClose(() => stop.abort());
    const { done } = await this.startWatch(
      message,
      headers,
      (event) => void stream.send({ filesystem: event }),
      stop,
    );
    this.host.track(stream);
    await stream.send({ start: {} });
    const interval = Number(headers["keepalive-ping-interval"] ?? 0);
    const keepalive =
      interval > 0 ? setInterval(() => void stream.send({ keepalive: {} }), interval * 1000) : undefined;
    try {
      await Promise.race([done.catch(() => undefined), new Promise<void>((r) => stream.onClose(r))]);
    } finally {
      if (keepalive) clearInterval(keepalive);
      stop.abort();
    }
    if (!stream.closed && !stop.signal.aborted) {
      throw new ConnectFailure("internal", "watcher ended");
    }
  }

  /** `CreateWatcher`: a watcher whose events are fetched with GetWatcherEvents. */
  async createWatcher(message: ConnectMessage, headers: IncomingHttpHeaders): Promise<ConnectMessage> {
    const stop = new AbortController();
    const watcher: PolledWatcher = { events: [], stop };
    const { done } = await this.startWatch(
      message,
      headers,
      (event) => {
        if (watcher.events.length < WATCHER_QUEUE_LIMIT) watcher.events.push(event);
      },
      stop,
    );
    const id = randomUUID();
    this.watchers.set(id, watcher);
    void done.then(
      () => {
        if (!stop.signal.aborted) watcher.failure = new ConnectFailure("internal", "watcher ended");
      },
      (error: unknown) => {
        watcher.failure = new ConnectFailure("internal", `watcher failed: ${String(error)}`);
      },
    );
    return { watcherId: id };
  }

  private watcher(message: ConnectMessage): PolledWatcher {
    const id = message.watcherId;
    const found = typeof id === "string" ? this.watchers.get(id) : undefined;
    if (!found) throw new ConnectFailure("not_found", `watcher with id ${String(id)} not found`);
    return found;
  }

  /** `GetWatcherEvents`: the events since the last call. */
  getWatcherEvents(message: ConnectMessage): ConnectMessage {
    const watcher = this.watcher(message);
    if (watcher.failure && watcher.events.length === 0) throw watcher.failure;
    return { events: watcher.events.splice(0) };
  }

  /** `RemoveWatcher`. */
  removeWatcher(message: ConnectMessage): ConnectMessage {
    const watcher = this.watcher(message);
    watcher.stop.abort();
    this.watchers.delete(message.watcherId as string);
    return {};
  }

  /** Ends every watch (the sandbox is going away or pausing). */
  closeAll(): void {
    for (const stop of this.watches) stop.abort();
    this.watches.clear();
    for (const watcher of this.watchers.values()) watcher.stop.abort();
    this.watchers.clear();
  }
}
