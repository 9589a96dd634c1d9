/**
 * `?watch=1`: a chunked stream of `{"type": ..., "object": ...}` lines. Without a resourceVersion (or with
 * `0`) the watch starts with an `ADDED` event per existing object, as the API server's watch cache does;
 * with one, it replays the changes after it (`ERROR` with a 410 Expired Status when that version is no
 * longer in the history). It ends after `timeoutSeconds` or when the client goes away.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ResourceDefinition } from "./kubernetes-resources.js";
import type { Matcher } from "./kubernetes-selectors.js";
import { KubeApiError } from "./kubernetes-status.js";
import type { KubernetesStore, StoreEvent } from "./kubernetes-store.js";

/** What to watch. */
export interface WatchRequest {
  readonly definition: ResourceDefinition;
  readonly namespace: string | undefined;
  readonly matches: Matcher;
  readonly resourceVersion: string | undefined;
  readonly timeoutSeconds: number | undefined;
}

/** Serves one watch until it ends. */
export function serveWatch(
  store: KubernetesStore,
  req: IncomingMessage,
  res: ServerResponse,
  watch: WatchRequest,
): Promise<void> {
  res.writeHead(200, {
    "Content-Type": "application/json",
    "Transfer-Encoding": "chunked",
    "Cache-Control": "no-cache, private",
  });
  res.flushHeaders();
  const send = (type: string, object: unknown) => res.write(`${JSON.stringify({ type, object })}\n`);
  const relevant = (event: StoreEvent) =>
    event.definition === watch.definition &&
    (watch.namespace === undefined ||
      !watch.definition.namespaced ||
      event.object.metadata.namespace === watch.namespace) &&
    watch.matches(event.object as unknown as Record<string, unknown>);
  return new Promise((resolve) => {
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      unsubscribe();
      clearTimeout(timer);
      res.end();
      resolve();
    };
    // Subscribe first so nothing written during the replay is missed.
    const live: StoreEvent[] = [];
    let replaying = true;
    const unsubscribe = store.subscribe((event) => {
      if (!relevant(event)) return;
      if (replaying) live.push(event);
      else send(event.type, event.object);
    });
    const from = watch.resourceVersion;
    let last = 0;
    if (from === undefined || from === "" || from === "0") {
      for (const object of store.list(watch.definition, watch.namespace, watch.matches))
        send("ADDED", object);
      last = Number(store.resourceVersion);
    } else {
      const changes = store.changesSince(Number(from));
      if (changes === "expired") {
        send(
          "ERROR",
          new KubeApiError(
            410,
            "Expired",
            `too old resource version: ${from} (${store.resourceVersion})`,
          ).toStatus(),
        );
        replaying = false;
        finish();
        return;
      }
      for (const event of changes) if (relevant(event)) send(event.type, event.object);
      last = Number(store.resourceVersion);
    }
    for (const event of live) if (event.resourceVersion > last) send(event.type, event.object);
    replaying = false;
    const timer = setTimeout(finish, Math.max(1, watch.timeoutSeconds ?? 1800) * 1000);
    timer.unref();
    req.on("close", finish);
    res.on("close", finish);
  });
}
