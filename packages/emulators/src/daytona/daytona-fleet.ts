/**
 * The Daytona emulator's sandboxes and their life: Daytona's states (`creating`, `started`, `stopping`,
 * `stopped`, `archived`, `destroying`, `destroyed`, `error`...), and its timers as the API describes them —
 * `autoStopInterval` (minutes of inactivity before a started sandbox is stopped, 0 = never),
 * `autoArchiveInterval` (minutes a stopped sandbox stays stopped before it is archived, 0 = the maximum),
 * `autoDeleteInterval` (minutes after stopping before it is deleted; negative = never, 0 = at once) and
 * `ttlMinutes` (wall-clock minutes since creation after which it is destroyed whatever its state, 0 = never).
 * Every sandbox is a sandbox of the emulator's backend; stop stops the backend sandbox (processes end,
 * files stay), start resumes it, delete destroys it. A sandbox created from an image (`buildInfo` with
 * `FROM <image>`, what the SDK sends for `create({ image })`) goes `pending_build`, `building_snapshot`,
 * then `started` when the image is one the emulator knows, `build_failed` (with its reason) otherwise: the
 * emulator builds nothing, a known image boots the backend's environment as a snapshot does.
 */
import { createHash, randomUUID } from "node:crypto";
import type { AnyCapabilities, Sandbox } from "@sbox/core";
import type { EmulatorBackend } from "../backend.js";
import type { EmulatorClock, EmulatorTimer } from "../clock.js";

/** Daytona's sandbox states (the `SandboxState` enum of the API description). */
export type DaytonaState =
  | "creating"
  | "pending_build"
  | "building_snapshot"
  | "build_failed"
  | "started"
  | "stopping"
  | "stopped"
  | "starting"
  | "archiving"
  | "archived"
  | "destroying"
  | "destroyed"
  | "error";

/** The longest auto-archive interval (Daytona's maximum, 30 days), used when 0 is given. */
export const MAX_AUTO_ARCHIVE_MINUTES: number = 30 * 24 * 60;
/** Daytona's defaults for a sandbox created without intervals. */
export const DEFAULT_AUTO_STOP_MINUTES = 15;
/** Default auto-archive interval (7 days). */
export const DEFAULT_AUTO_ARCHIVE_MINUTES: number = 7 * 24 * 60;

/** One emulated sandbox. */
export interface DaytonaSandboxRecord {
  readonly id: string;
  name: string;
  readonly snapshot: string | undefined;
  /** The build a sandbox created from an image came from (Daytona's `BuildInfo`). */
  readonly buildInfo?:
    | { readonly dockerfileContent: string; readonly snapshotRef: string; readonly createdAt: Date }
    | undefined;
  readonly user: string;
  readonly env: Record<string, string>;
  labels: Record<string, string>;
  public: boolean;
  readonly cpu: number;
  readonly gpu: number;
  readonly memory: number;
  readonly disk: number;
  state: DaytonaState;
  errorReason: string | undefined;
  autoStopInterval: number;
  autoArchiveInterval: number;
  autoDeleteInterval: number;
  ttlMinutes: number;
  readonly createdAt: Date;
  updatedAt: Date;
  lastActivityAt: Date;
  /** When the sandbox entered its current state (the auto-delete and auto-archive countdowns start there). */
  stateSince: Date;
  /** The create request's body as received (tests check what reached the "service"). */
  readonly createRequest: Readonly<Record<string, unknown>>;
  /** The backend sandbox (undefined once destroyed). */
  sandbox: Sandbox<AnyCapabilities> | undefined;
  /** Preview tokens handed out per port (private previews need one). */
  readonly previewTokens: Map<number, string>;
  /** When the sandbox was destroyed (destroyed ones linger a while, as Daytona lists them). */
  destroyedAt?: Date | undefined;
  timers: EmulatorTimer[];
  /** Lifecycle work one step at a time. */
  queue: Promise<unknown>;
}

/** What creating a sandbox takes (the `CreateSandbox` body, checked). */
export interface DaytonaCreateInput {
  readonly name?: string | undefined;
  readonly snapshot?: string | undefined;
  /** The image of a `FROM <image>` build (`buildInfo.dockerfileContent`), when created from an image. */
  readonly image?: string | undefined;
  /** The build's Dockerfile, as received. */
  readonly dockerfileContent?: string | undefined;
  readonly user?: string | undefined;
  readonly env: Record<string, string>;
  readonly labels: Record<string, string>;
  readonly public: boolean;
  readonly cpu?: number | undefined;
  readonly gpu?: number | undefined;
  readonly memory?: number | undefined;
  readonly disk?: number | undefined;
  readonly autoStopInterval?: number | undefined;
  readonly autoArchiveInterval?: number | undefined;
  readonly autoDeleteInterval?: number | undefined;
  readonly ttlMinutes?: number | undefined;
  readonly raw: Readonly<Record<string, unknown>>;
}

/** A Daytona API error: the routes answer it with its status and Daytona's error body. */
export class DaytonaApiError extends Error {
  /** HTTP status. */
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** How long a destroyed sandbox stays visible (as `destroyed`) before it is forgotten. */
const DESTROYED_LINGER_MS = 60_000;

/** Options of a {@link DaytonaFleet}. */
export interface DaytonaFleetOptions {
  readonly backend: EmulatorBackend;
  readonly clock: EmulatorClock;
  /** Snapshot names the emulator knows; a create naming another one fails with 400. */
  readonly snapshots: readonly string[];
  /** Images a `FROM <image>` build may name; a build from another one ends `build_failed`. */
  readonly images: readonly string[];
}

/** Every sandbox of one emulator. */
export class DaytonaFleet {
  /** By id. */
  readonly sandboxes: Map<string, DaytonaSandboxRecord> = new Map();
  private readonly options: DaytonaFleetOptions;

  constructor(options: DaytonaFleetOptions) {
    this.options = options;
  }

  /** Finds a sandbox by id or name (`sandboxIdOrName`), destroyed ones excepted; 404 otherwise. */
  find(idOrName: string): DaytonaSandboxRecord {
    const byId = this.sandboxes.get(idOrName);
    const record =
      byId ?? [...this.sandboxes.values()].find((s) => s.name === idOrName && s.state !== "destroyed");
    if (!record || record.state === "destroyed") {
      throw new DaytonaApiError(404, `Sandbox with ID or name ${idOrName} not found`);
    }
    return record;
  }

  /** Creates a sandbox (`creating`) and boots it on the backend in the background. */
  async create(input: DaytonaCreateInput): Promise<DaytonaSandboxRecord> {
    if (input.snapshot !== undefined && !this.options.snapshots.includes(input.snapshot)) {
      throw new DaytonaApiError(400, `Snapshot ${input.snapshot} not found`);
    }
    const id = randomUUID();
    const name = input.name ?? id;
    if ([...this.sandboxes.values()].some((s) => s.name === name && s.state !== "destroyed")) {
      throw new DaytonaApiError(409, `Sandbox with name ${name} already exists`);
    }
    const now = new Date(this.options.clock.now());
    const fromImage = input.image !== undefined;
    const record: DaytonaSandboxRecord = {
      id,
      name,
      snapshot: input.snapshot,
      buildInfo: fromImage
        ? {
            dockerfileContent: input.dockerfileContent ?? `FROM ${input.image}\n`,
            snapshotRef: `daytona-${createHash("sha256")
              .update(input.dockerfileContent ?? "")
              .digest("hex")
              .slice(0, 32)}:daytona`,
            createdAt: now,
          }
        : undefined,
      user: input.user ?? "daytona",
      env: { ...input.env },
      labels: { ...input.labels },
      public: input.public,
      cpu: input.cpu ?? 1,
      gpu: input.gpu ?? 0,
      memory: input.memory ?? 1,
      disk: input.disk ?? 3,
      state: fromImage ? "pending_build" : "creating",
      errorReason: undefined,
      autoStopInterval: input.autoStopInterval ?? DEFAULT_AUTO_STOP_MINUTES,
      autoArchiveInterval: input.autoArchiveInterval ?? DEFAULT_AUTO_ARCHIVE_MINUTES,
      autoDeleteInterval: input.autoDeleteInterval ?? -1,
      ttlMinutes: input.ttlMinutes ?? 0,
      createdAt: now,
      updatedAt: now,
      lastActivityAt: now,
      stateSince: now,
      createRequest: input.raw,
      sandbox: undefined,
      previewTokens: new Map(),
      timers: [],
      queue: Promise.resolve(),
    };
    this.sandboxes.set(id, record);
    // As Daytona does, the answer comes at once (`creating`); the sandbox boots in the background and
    // clients poll until it is `started` (or `error`).
    const booting = () => ["creating", "pending_build", "building_snapshot"].includes(record.state);
    void this.serial(record, async () => {
      try {
        if (fromImage) {
          this.setState(record, "building_snapshot");
          if (!this.options.images.includes(input.image!)) {
            record.errorReason = `failed to pull image ${input.image}: not known to this emulator`;
            this.setState(record, "build_failed");
            return;
          }
        }
        const sandbox = await this.options.backend.create({
          env: record.env,
          metadata: { "daytona-sandbox": id },
        });
        if (!booting()) {
          // Deleted while it was booting.
          await this.options.backend.release(sandbox).catch(() => undefined);
          return;
        }
        record.sandbox = sandbox;
        this.setState(record, "started");
      } catch (error) {
        record.errorReason = error instanceof Error ? error.message : String(error);
        this.setState(record, "error");
      }
    });
    return record;
  }

  /** Runs `work` after the sandbox's earlier lifecycle work. */
  private serial<T>(record: DaytonaSandboxRecord, work: () => Promise<T>): Promise<T> {
    const next = record.queue.then(work, work);
    record.queue = next.catch(() => undefined);
    return next;
  }

  /**
   * Starts a stopped or archived sandbox. As Daytona does, the state changes at once (`starting`) and the
   * work goes on in the background: the returned promise ends with it; callers poll the state.
   */
  start(record: DaytonaSandboxRecord): Promise<void> {
    if (record.state === "started" || record.state === "starting") return record.queue.then(() => undefined);
    if (record.state !== "stopped" && record.state !== "archived" && record.state !== "error") {
      throw new DaytonaApiError(400, `Sandbox is not in a state that can be started (${record.state})`);
    }
    this.setState(record, "starting");
    return this.serial(record, async () => {
      if (record.state !== "starting") return;
      await record.sandbox?.resume();
      this.setState(record, "started");
    });
  }

  /** Stops a started sandbox (`stopping` at once, `stopped` when done): its processes end, its files stay. */
  stop(record: DaytonaSandboxRecord): Promise<void> {
    if (record.state === "stopped" || record.state === "stopping") return record.queue.then(() => undefined);
    if (record.state !== "started") {
      throw new DaytonaApiError(400, `Sandbox is not started (${record.state})`);
    }
    this.setState(record, "stopping");
    return this.serial(record, async () => {
      if (record.state !== "stopping") return;
      await record.sandbox?.stop();
      this.setState(record, "stopped");
    });
  }

  /** Archives a stopped sandbox (its files stay; Daytona moves them to object storage). */
  archive(record: DaytonaSandboxRecord): Promise<void> {
    if (record.state === "archived" || record.state === "archiving")
      return record.queue.then(() => undefined);
    if (record.state !== "stopped") {
      throw new DaytonaApiError(400, `Sandbox must be stopped before it can be archived (${record.state})`);
    }
    this.setState(record, "archiving");
    return this.serial(record, async () => {
      if (record.state === "archiving") this.setState(record, "archived");
    });
  }

  /**
   * Destroys a sandbox: `destroying` at once, whatever it was doing (a boot in progress ends in a release),
   * `destroyed` once the backend sandbox is gone. It lingers as `destroyed` for a while, then is forgotten.
   */
  delete(record: DaytonaSandboxRecord): Promise<void> {
    if (record.state === "destroyed" || record.state === "destroying")
      return record.queue.then(() => undefined);
    this.setState(record, "destroying");
    return this.serial(record, async () => {
      const sandbox = record.sandbox;
      record.sandbox = undefined;
      if (sandbox) await this.options.backend.release(sandbox).catch(() => undefined);
      record.destroyedAt = new Date(this.options.clock.now());
      this.setState(record, "destroyed");
      record.timers.push(
        this.options.clock.setTimer(() => this.sandboxes.delete(record.id), DESTROYED_LINGER_MS),
      );
    });
  }

  /** Records activity (a toolbox call): the auto-stop countdown starts again. */
  touch(record: DaytonaSandboxRecord): void {
    record.lastActivityAt = new Date(this.options.clock.now());
    if (record.state === "started") this.armTimers(record);
  }

  /** Changes one of the intervals and re-arms the timers. */
  setInterval(
    record: DaytonaSandboxRecord,
    which: "autoStopInterval" | "autoArchiveInterval" | "autoDeleteInterval" | "ttlMinutes",
    minutes: number,
  ): void {
    record[which] = minutes;
    record.updatedAt = new Date(this.options.clock.now());
    this.armTimers(record);
  }

  private setState(record: DaytonaSandboxRecord, state: DaytonaState): void {
    record.state = state;
    record.updatedAt = new Date(this.options.clock.now());
    record.stateSince = record.updatedAt;
    this.armTimers(record);
  }

  /** (Re)arms the timers the sandbox's state and intervals call for. */
  private armTimers(record: DaytonaSandboxRecord): void {
    for (const timer of record.timers) timer.cancel();
    record.timers = [];
    if (record.state === "destroyed") return;
    const clock = this.options.clock;
    const minutes = (n: number) => n * 60_000;
    const later = (ms: number, work: () => Promise<void>) =>
      record.timers.push(
        clock.setTimer(
          () =>
            void Promise.resolve()
              .then(work)
              .catch(() => undefined),
          Math.max(0, ms),
        ),
      );
    if (record.ttlMinutes > 0) {
      later(record.createdAt.getTime() + minutes(record.ttlMinutes) - clock.now(), () => this.delete(record));
    }
    if (record.state === "started" && record.autoStopInterval > 0) {
      later(record.lastActivityAt.getTime() + minutes(record.autoStopInterval) - clock.now(), () =>
        this.stop(record),
      );
    }
    if (record.state === "stopped" || record.state === "archived") {
      const since = record.stateSince.getTime();
      if (record.autoDeleteInterval >= 0) {
        later(since + minutes(record.autoDeleteInterval) - clock.now(), () => this.delete(record));
      }
      if (record.state === "stopped") {
        const archiveAfter =
          record.autoArchiveInterval === 0 ? MAX_AUTO_ARCHIVE_MINUTES : record.autoArchiveInterval;
        later(since + minutes(archiveAfter) - clock.now(), () => this.archive(record));
      }
    }
  }

  /** Destroys every sandbox (the emulator closes). */
  async close(): Promise<void> {
    await Promise.allSettled(
      [...this.sandboxes.values()].map(async (record) => {
        await this.delete(record);
        await record.queue;
      }),
    );
    for (const record of this.sandboxes.values()) for (const timer of record.timers) timer.cancel();
    this.sandboxes.clear();
  }
}
