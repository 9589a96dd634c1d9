/**
 * The state of one Vercel Sandbox emulator: named sandboxes, their sessions (the VMs; each a sandbox of
 * the backend), snapshots, and the timers that stop sessions when their timeout runs out — the service
 * stops a session at `startedAt + timeout`, killing its commands, and a stopped session answers 410
 * `sandbox_stopped` (on which the SDK resumes the sandbox with `GET /v2/sandboxes/:name?resume=true`,
 * starting a new session). A persistent sandbox keeps its files across sessions; a snapshot (which stops
 * the session, as on the service) seeds new sandboxes (`source: { type: "snapshot" }`) and forks.
 *
 * A snapshot's disk is the backend's own whole-disk snapshot where it has one, else a tarball of the
 * working directory (`vercel-disk.ts`); no process survives either, as on the service.
 */
import { randomBytes } from "node:crypto";
import type { AnyCapabilities, Sandbox, SandboxSpec } from "@sbox/core";
import { SandboxError } from "@sbox/core/spec";
import type { EmulatorBackend } from "../backend.js";
import type { EmulatorClock, EmulatorTimer } from "../clock.js";
import type { VercelCommand } from "./vercel-commands.js";
import {
  captureDisk,
  DiskError,
  diskSize,
  dropDisk,
  specFrom,
  unpackDisk,
  type VercelDisk,
} from "./vercel-disk.js";
import {
  DEFAULT_REGION,
  DEFAULT_SESSION_TIMEOUT_MS,
  DEFAULT_VCPUS,
  MEMORY_PER_VCPU_MB,
  SANDBOX_CWD,
} from "./vercel-limits.js";
import { egressOf, type VercelNetworkPolicy } from "./vercel-network.js";
import { launchOf, probeLayout, type VercelLayout } from "./vercel-user.js";

/** An API answer: status and JSON body. */
export interface VercelAnswer {
  readonly status: number;
  readonly body: unknown;
}

/** The API's error body. */
export function apiError(status: number, code: string, message: string): VercelAnswer {
  return { status, body: { error: { code, message } } };
}

/** A failure carried as an answer. */
export class VercelApiError extends Error {
  constructor(readonly answer: VercelAnswer) {
    super((answer.body as { error: { message: string } }).error.message);
  }
}

function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString("hex")}`;
}

/** Session states, as the API names them. */
export type SessionStatus =
  | "pending"
  | "running"
  | "stopping"
  | "stopped"
  | "failed"
  | "aborted"
  | "snapshotting";

/** What a sandbox is configured with (kept across its sessions). */
export interface VercelSandboxConfig {
  persistent: boolean;
  region: string;
  vcpus: number;
  runtime?: string | undefined;
  image?: string | undefined;
  timeout: number;
  tags: Record<string, string>;
  networkPolicy: VercelNetworkPolicy;
  env: Record<string, string>;
  ports: number[];
  /** How long snapshots of this sandbox live, in ms (0: forever). */
  snapshotExpiration?: number | undefined;
  /** How many of its snapshots are kept (stored and reported; eviction is not emulated). */
  keepLastSnapshots?:
    | { count: number; expiration?: number | undefined; deleteEvicted?: boolean | undefined }
    | undefined;
}

/** A named sandbox. */
export interface VercelSandboxRecord {
  readonly name: string;
  readonly config: VercelSandboxConfig;
  readonly createdAt: number;
  updatedAt: number;
  session: VercelSession;
  /** The snapshot the next session starts from: the last one taken, or the one a persistent stop took. */
  currentSnapshotId?: string | undefined;
}

/** A snapshot: the disk of a session. */
export interface VercelSnapshot {
  readonly id: string;
  readonly sourceSessionId: string;
  readonly sandboxName: string;
  readonly region: string;
  status: "created" | "deleted" | "failed";
  readonly disk: VercelDisk;
  readonly createdAt: number;
  updatedAt: number;
  readonly expiresAt?: number | undefined;
  readonly runtime?: string | undefined;
  /** `api` (a snapshot request) or `stop` (a persistent sandbox stopping). */
  readonly creationMethod: "api" | "stop";
}

/** One session (VM) of a sandbox. */
export class VercelSession {
  readonly id: string = newId("sbx");
  status: SessionStatus = "pending";
  readonly requestedAt: number;
  startedAt: number | undefined;
  requestedStopAt: number | undefined;
  stoppedAt: number | undefined;
  updatedAt: number;
  timeout: number;
  networkPolicy: VercelNetworkPolicy;
  cwd: string = SANDBOX_CWD;
  /** Who runs the session's commands and file calls (set at boot). */
  layout: VercelLayout = { cwd: SANDBOX_CWD };
  machine: Sandbox<AnyCapabilities> | undefined;
  readonly commands: Map<string, VercelCommand> = new Map();
  timer: EmulatorTimer | undefined;
  snapshottedAt: number | undefined;

  constructor(
    readonly sandboxName: string,
    readonly config: VercelSandboxConfig,
    now: number,
    readonly sourceSnapshotId: string | undefined,
  ) {
    this.requestedAt = now;
    this.updatedAt = now;
    this.timeout = config.timeout;
    this.networkPolicy = config.networkPolicy;
  }

  /** The API's `Session` object. */
  toJSON(): Record<string, unknown> {
    const end = this.stoppedAt;
    return {
      id: this.id,
      memory: this.config.vcpus * MEMORY_PER_VCPU_MB,
      vcpus: this.config.vcpus,
      region: this.config.region,
      ...(this.config.runtime === undefined ? {} : { runtime: this.config.runtime }),
      timeout: this.timeout,
      status: this.status,
      requestedAt: this.requestedAt,
      ...(this.startedAt === undefined ? {} : { startedAt: this.startedAt }),
      ...(this.requestedStopAt === undefined ? {} : { requestedStopAt: this.requestedStopAt }),
      ...(end === undefined ? {} : { stoppedAt: end }),
      ...(end !== undefined && this.startedAt !== undefined ? { duration: end - this.startedAt } : {}),
      ...(this.sourceSnapshotId === undefined ? {} : { sourceSnapshotId: this.sourceSnapshotId }),
      ...(this.snapshottedAt === undefined ? {} : { snapshottedAt: this.snapshottedAt }),
      createdAt: this.requestedAt,
      cwd: this.cwd,
      updatedAt: this.updatedAt,
      networkPolicy: this.networkPolicy,
    };
  }
}

/** What the fleet needs. */
export interface VercelFleetOptions {
  readonly backend: EmulatorBackend;
  readonly clock: EmulatorClock;
  /** The origin port routes are served on (`http://host:port`). */
  readonly routesOrigin: () => string;
  /** How long a snapshot lives when the request names no expiration (default 30 days, the service's). */
  readonly snapshotExpirationMs?: number | undefined;
}

/** The sandboxes, sessions and snapshots of one emulator. */
export class VercelFleet {
  readonly sandboxes: Map<string, VercelSandboxRecord> = new Map();
  readonly sessions: Map<string, VercelSession> = new Map();
  readonly snapshots: Map<string, VercelSnapshot> = new Map();
  private closed = false;

  constructor(private readonly options: VercelFleetOptions) {}

  get clock(): EmulatorClock {
    return this.options.clock;
  }

  /** The route objects (`{ url, subdomain, port }`) of a sandbox's ports. */
  routesOf(record: VercelSandboxRecord): { url: string; subdomain: string; port: number }[] {
    return record.config.ports.map((port) => {
      const subdomain = `${record.name}-${port}`.toLowerCase().replace(/[^a-z0-9-]/g, "-");
      return { url: `${this.options.routesOrigin()}/${subdomain}`, subdomain, port };
    });
  }

  /** The route named `subdomain`, with the running session behind it. */
  routeTarget(subdomain: string): { session: VercelSession; port: number } | undefined {
    for (const record of this.sandboxes.values()) {
      const route = this.routesOf(record).find((r) => r.subdomain === subdomain);
      if (route) return { session: record.session, port: route.port };
    }
    return undefined;
  }

  /** The API's `Sandbox` object. */
  sandboxJSON(record: VercelSandboxRecord): Record<string, unknown> {
    const { config, session } = record;
    return {
      name: record.name,
      persistent: config.persistent,
      region: config.region,
      vcpus: config.vcpus,
      memory: config.vcpus * MEMORY_PER_VCPU_MB,
      ...(config.runtime === undefined ? {} : { runtime: config.runtime }),
      ...(config.image === undefined ? {} : { image: config.image }),
      timeout: config.timeout,
      networkPolicy: session.networkPolicy,
      createdAt: record.createdAt,
      updatedAt: record.updatedAt,
      ...(session.status === "running" && session.startedAt !== undefined
        ? { expiresAt: session.startedAt + session.timeout }
        : {}),
      currentSessionId: session.id,
      ...(record.currentSnapshotId === undefined ? {} : { currentSnapshotId: record.currentSnapshotId }),
      status: session.status,
      statusUpdatedAt: session.updatedAt,
      cwd: session.cwd,
      tags: { ...config.tags },
      ...(config.snapshotExpiration === undefined ? {} : { snapshotExpiration: config.snapshotExpiration }),
      ...(config.keepLastSnapshots === undefined
        ? {}
        : { keepLastSnapshots: { ...config.keepLastSnapshots } }),
    };
  }

  /** The API's `Snapshot` object. */
  snapshotJSON(snapshot: VercelSnapshot): Record<string, unknown> {
    return {
      id: snapshot.id,
      sourceSessionId: snapshot.sourceSessionId,
      region: snapshot.region,
      status: snapshot.status,
      sizeBytes: diskSize(snapshot.disk),
      ...(snapshot.expiresAt === undefined ? {} : { expiresAt: snapshot.expiresAt }),
      createdAt: snapshot.createdAt,
      updatedAt: snapshot.updatedAt,
      creationMethod: snapshot.creationMethod,
    };
  }

  /** Creates a sandbox named `name` and boots its first session (from `disk` when given). */
  async create(
    name: string,
    config: VercelSandboxConfig,
    seed: {
      disk?: VercelDisk | undefined;
      snapshotId?: string | undefined;
      source?: BootSource | undefined;
    },
  ): Promise<VercelSandboxRecord> {
    if (this.sandboxes.has(name)) {
      throw new VercelApiError(
        apiError(409, "sandbox_already_exists", `A sandbox named ${name} already exists`),
      );
    }
    const now = this.clock.now();
    const session = new VercelSession(name, config, now, seed.snapshotId);
    const record: VercelSandboxRecord = { name, config, createdAt: now, updatedAt: now, session };
    this.sandboxes.set(name, record);
    this.sessions.set(session.id, session);
    try {
      await this.boot(session, seed.disk, seed.source);
    } catch (error) {
      this.sandboxes.delete(name);
      throw error;
    }
    return record;
  }

  /** Starts `session`'s backend sandbox from `disk`, lays out the workdir, arms the timeout. */
  private async boot(
    session: VercelSession,
    disk: VercelDisk | undefined,
    source?: BootSource,
  ): Promise<void> {
    const spec: SandboxSpec = { env: { ...session.config.env } };
    const egress = egressOf(session.networkPolicy);
    if (egress !== "allow-all") {
      if (!this.options.backend.honours.includes("network")) {
        session.status = "failed";
        throw new VercelApiError(
          apiError(
            400,
            "bad_request",
            `network policies need a backend with egress control (${this.options.backend.name} has none)`,
          ),
        );
      }
      spec.network = { egress };
    }
    let machine: Sandbox<AnyCapabilities>;
    try {
      machine = await this.options.backend.create(specFrom(disk, spec));
    } catch (error) {
      session.status = "failed";
      // What the backend refuses to enforce (an allow-list on provider-local) is the request's problem.
      if (SandboxError.isInstance(error) && (error.code === "Validation" || error.code === "NotSupported")) {
        throw new VercelApiError(
          apiError(400, "bad_request", `the session cannot be created: ${error.message}`),
        );
      }
      throw new VercelApiError(
        apiError(
          500,
          "internal_server_error",
          `the session could not boot: ${error instanceof Error ? error.message : String(error)}`,
        ),
      );
    }
    session.machine = machine;
    try {
      session.layout = await probeLayout(machine);
      session.cwd = session.layout.cwd;
      await unpackDisk(machine, session.cwd, disk).catch((error: unknown) => {
        throw error instanceof DiskError
          ? new VercelApiError(
              apiError(
                500,
                "internal_server_error",
                `the filesystem could not be restored: ${error.message}`,
              ),
            )
          : error;
      });
      if (source) await this.fetchSource(machine, session.layout, source);
    } catch (error) {
      session.status = "failed";
      this.sessions.delete(session.id);
      await this.options.backend.release(machine).catch(() => undefined);
      throw error instanceof VercelApiError
        ? error
        : new VercelApiError(
            apiError(
              500,
              "internal_server_error",
              `the session could not boot: ${error instanceof Error ? error.message : String(error)}`,
            ),
          );
    }
    const now = this.clock.now();
    session.status = "running";
    session.startedAt = now;
    session.updatedAt = now;
    this.armTimeout(session);
  }

  private async fetchSource(
    machine: Sandbox<AnyCapabilities>,
    layout: VercelLayout,
    source: BootSource,
  ): Promise<void> {
    const cwd = layout.cwd;
    const argv =
      source.type === "git"
        ? [
            "git",
            "clone",
            ...(source.depth === undefined ? [] : ["--depth", String(source.depth)]),
            "--",
            source.url,
            cwd,
          ]
        : ["sh", "-c", 'curl -fsSL -- "$1" | tar -xz -C "$2"', "sh", source.url, cwd];
    // Fetched as the session's user, so the files are its own as on the service.
    const asUser = (command: string[]) =>
      launchOf(layout, { command: command[0]!, args: command.slice(1), env: {}, sudo: false });
    const fetch = asUser(argv);
    const result = await machine.commands.run(fetch.argv, { timeoutMs: 120_000, env: fetch.env });
    if (result.exitCode !== 0) {
      throw new VercelApiError(
        apiError(
          400,
          "source_fetch_failed",
          `the ${source.type} source could not be fetched: ${result.stderr.trim().slice(0, 500)}`,
        ),
      );
    }
    if (source.type === "git" && source.revision !== undefined) {
      const step = asUser(["git", "-C", cwd, "checkout", source.revision]);
      const checkout = await machine.commands.run(step.argv, { env: step.env });
      if (checkout.exitCode !== 0) {
        throw new VercelApiError(
          apiError(400, "source_fetch_failed", `revision ${source.revision} could not be checked out`),
        );
      }
    }
  }

  private armTimeout(session: VercelSession): void {
    session.timer?.cancel();
    if (session.startedAt === undefined) return;
    const due = session.startedAt + session.timeout - this.clock.now();
    session.timer = this.clock.setTimer(
      () => void this.stopSession(session, "timeout").catch(() => undefined),
      due,
    );
  }

  /** Moves a running session's deadline `ms` later. */
  extend(session: VercelSession, ms: number): void {
    session.timeout += ms;
    session.updatedAt = this.clock.now();
    this.armTimeout(session);
  }

  /** Sets a running session's total timeout (never shortening it, as the service does). */
  setTimeout(session: VercelSession, timeout: number): void {
    if (timeout <= session.timeout) return;
    this.extend(session, timeout - session.timeout);
  }

  /**
   * Stops a session: its commands end (followers get the `sandbox_stopped` line), the backend sandbox goes.
   * A persistent sandbox's disk is kept as a snapshot (`creationMethod: "stop"`) its next session
   * starts from, as the service snapshots a persistent sandbox when it stops.
   */
  async stopSession(
    session: VercelSession,
    why: "request" | "timeout" | "snapshot" | "delete",
  ): Promise<{ disk?: VercelDisk | undefined; snapshot?: VercelSnapshot | undefined }> {
    if (session.status !== "running") return {};
    session.timer?.cancel();
    const now = this.clock.now();
    session.status = why === "snapshot" ? "snapshotting" : "stopping";
    session.requestedStopAt = now;
    session.updatedAt = now;
    const message =
      why === "timeout" ? "The sandbox was stopped because its timeout elapsed" : "The sandbox was stopped";
    for (const command of session.commands.values()) command.abandon("sandbox_stopped", message);
    const record = this.sandboxes.get(session.sandboxName);
    const machine = session.machine;
    let disk: VercelDisk | undefined;
    if (machine) {
      const keep = why === "snapshot" || (why !== "delete" && record?.config.persistent === true);
      if (keep) disk = await captureDisk(this.options.backend, machine, session.cwd).catch(() => undefined);
      session.machine = undefined;
      await this.options.backend.release(machine).catch(() => undefined);
    }
    session.status = "stopped";
    session.stoppedAt = this.clock.now();
    session.updatedAt = session.stoppedAt;
    const snapshot =
      disk && why !== "snapshot"
        ? this.keepSnapshot(session, disk, session.config.snapshotExpiration, "stop")
        : undefined;
    return { disk, snapshot };
  }

  private keepSnapshot(
    session: VercelSession,
    disk: VercelDisk,
    expirationMs: number | undefined,
    creationMethod: "api" | "stop",
  ): VercelSnapshot {
    const now = this.clock.now();
    const ttl = expirationMs ?? this.options.snapshotExpirationMs ?? 30 * 24 * 3600_000;
    const snapshot: VercelSnapshot = {
      id: newId("snap"),
      sourceSessionId: session.id,
      sandboxName: session.sandboxName,
      region: session.config.region,
      status: "created",
      disk,
      createdAt: now,
      updatedAt: now,
      ...(ttl === 0 ? {} : { expiresAt: now + ttl }),
      runtime: session.config.runtime,
      creationMethod,
    };
    session.snapshottedAt = now;
    this.snapshots.set(snapshot.id, snapshot);
    const record = this.sandboxes.get(session.sandboxName);
    if (record) record.currentSnapshotId = snapshot.id;
    return snapshot;
  }

  /** Starts a new session of a stopped sandbox, from its current snapshot when it has one. */
  async resume(record: VercelSandboxRecord): Promise<boolean> {
    if (record.session.status === "running") return false;
    const snapshot = record.currentSnapshotId ? this.liveSnapshot(record.currentSnapshotId) : undefined;
    if (record.currentSnapshotId !== undefined && !snapshot) {
      throw new VercelApiError(
        apiError(
          410,
          "snapshot_not_found",
          `The sandbox's snapshot ${record.currentSnapshotId} no longer exists`,
        ),
      );
    }
    const session = new VercelSession(record.name, record.config, this.clock.now(), snapshot?.id);
    this.sessions.set(session.id, session);
    record.session = session;
    record.updatedAt = this.clock.now();
    await this.boot(session, snapshot?.disk);
    return true;
  }

  /** Takes a snapshot of a running session, which stops it (the service's behaviour). */
  async snapshot(session: VercelSession, expirationMs: number | undefined): Promise<VercelSnapshot> {
    const { disk } = await this.stopSession(session, "snapshot");
    if (!disk)
      throw new VercelApiError(apiError(500, "snapshot_failed", "the filesystem could not be captured"));
    return this.keepSnapshot(session, disk, expirationMs ?? session.config.snapshotExpiration, "api");
  }

  /** A live snapshot by id (`undefined` when unknown, deleted or expired). */
  liveSnapshot(id: string): VercelSnapshot | undefined {
    const snapshot = this.snapshots.get(id);
    if (snapshot?.status !== "created") return undefined;
    if (snapshot.expiresAt !== undefined && snapshot.expiresAt <= this.clock.now()) {
      this.deleteSnapshot(snapshot);
      return undefined;
    }
    return snapshot;
  }

  /** Deletes a snapshot: it is reported `deleted` from now on, and what it held on the backend is freed. */
  deleteSnapshot(snapshot: VercelSnapshot): void {
    if (snapshot.status === "deleted") return;
    snapshot.status = "deleted";
    snapshot.updatedAt = this.clock.now();
    void dropDisk(snapshot.disk).catch(() => undefined);
  }

  /** Deletes a sandbox: its running session stops, its name is free again. */
  async remove(record: VercelSandboxRecord): Promise<void> {
    await this.stopSession(record.session, "delete");
    this.sandboxes.delete(record.name);
  }

  /** Stops every session (the backend destroys the machines). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.sessions.values()].map((s) => this.stopSession(s, "delete")));
    // Every snapshot goes with the emulator: the backend's (docker images) are deleted, not left behind.
    await Promise.allSettled(
      [...this.snapshots.values()].map(async (snapshot) => {
        snapshot.status = "deleted";
        await dropDisk(snapshot.disk);
      }),
    );
  }

  /** Default config for a sandbox created without fields. */
  static defaults(): VercelSandboxConfig {
    return {
      persistent: false,
      region: DEFAULT_REGION,
      vcpus: DEFAULT_VCPUS,
      timeout: DEFAULT_SESSION_TIMEOUT_MS,
      tags: {},
      networkPolicy: { mode: "allow-all" },
      env: {},
      ports: [],
    };
  }
}

/** Where a sandbox's files come from at create (besides a snapshot). */
export type BootSource =
  | {
      readonly type: "git";
      readonly url: string;
      readonly depth?: number | undefined;
      readonly revision?: string | undefined;
    }
  | { readonly type: "tarball"; readonly url: string };
