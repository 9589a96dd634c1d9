import type { WatchEvent } from "@sbox/core/spec";
import type { FilesystemEvent } from "e2b";
import type { CommandContext } from "./e2b-commands.js";
import type { E2BDriverSandbox } from "./e2b-lifecycle.js";
import { sandboxCall } from "./e2b-sandbox-call.js";
import type { E2BSandbox } from "./e2b-sdk.js";

type WatchOpts = NonNullable<Parameters<E2BSandbox["files"]["watchDir"]>[2]>;

/**
 * E2B's event kinds (inotify through fsnotify) as ours: a rename reports the old name (it is gone there; the
 * new name gets its own create), chmod changes no content and is dropped.
 */
export function watchEventOf(root: string, event: FilesystemEvent): WatchEvent | undefined {
  const type =
    event.type === "create"
      ? "create"
      : event.type === "write"
        ? "modify"
        : event.type === "remove" || event.type === "rename"
          ? "delete"
          : undefined;
  if (!type) return undefined;
  const base = root.length > 1 ? root.replace(/\/+$/, "") : root;
  const path = event.name.startsWith("/") ? event.name : `${base === "/" ? "" : base}/${event.name}`;
  return { type, path };
}

/** Watches a directory with the SDK's streaming `watchDir` (no time limit until `close()`). */
export async function watchPath(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  path: string,
  options: { signal: AbortSignal; recursive: boolean; onEvent(event: WatchEvent): void },
): Promise<{ close(): Promise<void> }> {
  const opts: WatchOpts = { recursive: options.recursive, timeoutMs: 0 };
  if (ctx.options.user !== undefined) opts.user = ctx.options.user;
  let closed = false;
  const handle = await sandboxCall(ctx, sandbox.id, `files.watch ${path}`, options.signal, () =>
    sandbox.native.files.watchDir(
      path,
      (event) => {
        if (closed) return;
        const mapped = watchEventOf(path, event);
        if (mapped) options.onEvent(mapped);
      },
      opts,
    ),
  );
  return {
    close: async () => {
      closed = true;
      await handle.stop();
    },
  };
}
