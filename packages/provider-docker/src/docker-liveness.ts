import { SandboxError } from "@sbox/core/spec";
import type Dockerode from "dockerode";
import type { DockerEngine } from "./docker-engine.js";

interface Watched {
  readonly container: Dockerode.Container;
  readonly listeners: Set<(error: SandboxError) => void>;
  /** When the container was first seen paused in a row of checks. */
  pausedSince?: number | undefined;
  timer?: ReturnType<typeof setTimeout> | undefined;
}

function isCode(error: unknown, code: string): boolean {
  return SandboxError.isInstance(error) && error.code === code;
}

/**
 * Bounds the wait of commands that legitimately run long. A command's stream stays open, and silent, while
 * its container is paused (`docker pause` from anywhere) or while a hung engine holds it, so the containers
 * that have commands running are inspected every quarter request deadline (one inspect per container,
 * whatever the number of commands). A container found paused for half a deadline in a row fails its
 * commands with `InvalidState` (a pause and resume within that time is left alone: the command goes on);
 * an engine that does not answer the inspect within the deadline fails them with `Timeout`.
 */
export class DockerLiveness {
  private readonly watched = new Map<string, Watched>();
  private readonly engine: DockerEngine;

  constructor(engine: DockerEngine) {
    this.engine = engine;
  }

  /** Calls `onLost` once when the container's commands can no longer be waited on; returns the unsubscribe. */
  watch(container: Dockerode.Container, onLost: (error: SandboxError) => void): () => void {
    let entry = this.watched.get(container.id);
    if (!entry) {
      entry = { container, listeners: new Set() };
      this.watched.set(container.id, entry);
      this.schedule(entry);
    }
    const own = entry;
    own.listeners.add(onLost);
    return () => {
      own.listeners.delete(onLost);
      if (own.listeners.size === 0 && this.watched.get(container.id) === own) {
        clearTimeout(own.timer);
        this.watched.delete(container.id);
      }
    };
  }

  private get deadlineMs(): number {
    return this.engine.options.requestTimeoutMs;
  }

  private schedule(entry: Watched): void {
    entry.timer = setTimeout(() => void this.check(entry), Math.max(250, this.deadlineMs / 4));
    entry.timer.unref?.();
  }

  private async check(entry: Watched): Promise<void> {
    let lost: SandboxError | undefined;
    try {
      const info = await this.engine.call(
        "liveness inspect",
        new AbortController().signal,
        (_docker, bound) => entry.container.inspect({ abortSignal: bound }),
      );
      if (info.State.Paused || info.State.Status === "paused") {
        entry.pausedSince ??= Date.now();
        const pausedMs = Date.now() - entry.pausedSince;
        if (pausedMs >= this.deadlineMs / 2) {
          lost = new SandboxError(
            "InvalidState",
            `docker exec: the sandbox was paused while the command ran (for ${pausedMs} ms); resume() it and run the command again`,
          );
        }
      } else {
        entry.pausedSince = undefined;
      }
    } catch (error) {
      if (isCode(error, "Timeout")) {
        lost = new SandboxError(
          "Timeout",
          `docker exec: the Docker Engine stopped answering while the command ran (no inspect answer within ${this.deadlineMs} ms)`,
          { retryable: false, cause: error },
        );
      }
      // A container that is gone ends its commands' streams by itself; other failures decide nothing.
    }
    if (this.watched.get(entry.container.id) !== entry || entry.listeners.size === 0) return;
    if (!lost) {
      this.schedule(entry);
      return;
    }
    this.watched.delete(entry.container.id);
    for (const listener of [...entry.listeners]) listener(lost);
    entry.listeners.clear();
  }
}
