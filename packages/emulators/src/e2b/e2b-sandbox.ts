/**
 * One emulated E2B sandbox: its control-plane record and state machine, its backend machine and envd's
 * services on it.
 *
 * States: `running` → `paused` (pause, or timeout with `onTimeout: "pause"`) → `running` (connect or
 * auto-resume); a timeout with `onTimeout: "kill"` or a kill ends it. A pause with memory freezes the
 * backend sandbox (processes survive); a filesystem-only pause stops it, so resuming cold-boots: files
 * stay, processes are gone. Either way the connections through E2B's proxy break: every envd stream is
 * cut without an end message, as a dying sandbox does to real envd clients.
 */
import { randomBytes } from "node:crypto";
import type { AnyCapabilities, EgressPolicy, Sandbox } from "@sbox/core";
import type { EmulatorClock, EmulatorTimer } from "../clock.js";
import type { ServerStream } from "./e2b-connect-protocol.js";
import { EnvdFilesystemService } from "./e2b-envd-filesystem.js";
import { EnvdProcessService } from "./e2b-envd-process.js";
import type { E2BMachine } from "./e2b-machine.js";
import type { E2BNetworkConfig } from "./e2b-network.js";
import type { E2BTemplate } from "./e2b-templates.js";

/** What a sandbox does when its timeout passes. */
export interface E2BLifecycle {
  readonly onTimeout: "kill" | "pause";
  readonly autoResume: boolean;
  /** For `onTimeout: "pause"`: keep memory (default) or only the filesystem. */
  readonly keepMemory: boolean;
}

/** One metrics sample, in E2B's `SandboxMetric` shape. */
export interface E2BMetricSample {
  timestamp: string;
  timestampUnix: number;
  cpuCount: number;
  cpuUsedPct: number;
  memUsed: number;
  memTotal: number;
  memCache: number;
  diskUsed: number;
  diskTotal: number;
}

/** How a sandbox is made. */
export interface E2BSandboxInit {
  readonly template: E2BTemplate;
  readonly machine: E2BMachine;
  readonly envVars: Readonly<Record<string, string>>;
  readonly metadata: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly lifecycle: E2BLifecycle;
  readonly secure: boolean;
  readonly network: E2BNetworkConfig;
  readonly allowInternetAccess: boolean | undefined;
  readonly egress: EgressPolicy;
  readonly resources: { cpuCount: number; memoryMB: number; diskSizeMB: number };
  readonly envdVersion: string;
  readonly clock: EmulatorClock;
  /** Called when the sandbox ends by itself (timeout with kill): the emulator forgets and destroys it. */
  readonly onExpire: (sandbox: E2BSandbox) => void;
}

/** E2B-style ids: lowercase letters and digits. */
export function newSandboxId(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  return [...randomBytes(20)].map((b) => alphabet[b % alphabet.length]).join("");
}

/** An emulated E2B sandbox. */
export class E2BSandbox {
  readonly id: string = newSandboxId();
  readonly clientID: string = "emulator";
  readonly templateID: string;
  readonly alias: string | undefined;
  readonly machine: E2BMachine;
  readonly envVars: Readonly<Record<string, string>>;
  readonly metadata: Readonly<Record<string, string>>;
  readonly envdVersion: string;
  readonly envdAccessToken: string | undefined;
  readonly trafficAccessToken: string | undefined;
  readonly startedAt: Date;
  readonly lifecycle: E2BLifecycle;
  readonly resources: { cpuCount: number; memoryMB: number; diskSizeMB: number };
  readonly allowInternetAccess: boolean | undefined;
  network: E2BNetworkConfig;
  egress: EgressPolicy;
  state: "running" | "paused" = "running";
  /** How the sandbox is paused: frozen with memory, or stopped (filesystem only). */
  pausedWith: "memory" | "filesystem" | undefined;
  endAt: Date;
  readonly processes: EnvdProcessService;
  readonly filesystem: EnvdFilesystemService;
  readonly metrics: E2BMetricSample[] = [];
  private readonly streams = new Set<ServerStream>();
  /** Waiting for the sandbox to run again: true when it does, false when it is killed or cold-booted. */
  private runningWaiters: ((running: boolean) => void)[] = [];
  private timer: EmulatorTimer | undefined;
  private transition: Promise<void> = Promise.resolve();
  private readonly clock: EmulatorClock;
  private readonly onExpire: (sandbox: E2BSandbox) => void;
  killed = false;

  constructor(init: E2BSandboxInit) {
    this.templateID = init.template.templateID;
    this.alias = init.template.snapshot ? undefined : init.template.aliases[0];
    this.machine = init.machine;
    this.envVars = { ...init.envVars };
    this.metadata = { ...init.metadata };
    this.envdVersion = init.envdVersion;
    this.envdAccessToken = init.secure ? randomBytes(24).toString("base64url") : undefined;
    this.trafficAccessToken =
      init.network.allowPublicTraffic === false ? randomBytes(24).toString("base64url") : undefined;
    this.lifecycle = init.lifecycle;
    this.resources = init.resources;
    this.allowInternetAccess = init.allowInternetAccess;
    this.network = init.network;
    this.egress = init.egress;
    this.clock = init.clock;
    this.onExpire = init.onExpire;
    this.startedAt = new Date(init.clock.now());
    this.endAt = this.startedAt;
    const host = {
      machine: this.machine,
      envVars: this.envVars,
      track: (stream: ServerStream) => {
        this.streams.add(stream);
        stream.onClose(() => this.streams.delete(stream));
      },
      whenRunning: () => this.whenRunning(),
    };
    this.processes = new EnvdProcessService(host);
    this.filesystem = new EnvdFilesystemService(host);
    this.setTimeout(init.timeoutMs);
  }

  /** The backend sandbox. */
  get backend(): Sandbox<AnyCapabilities> {
    return this.machine.sandbox;
  }

  /** Serialises lifecycle changes, so a pause and a resume never interleave. */
  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.transition.then(work);
    this.transition = next.then(
      () => undefined,
      () => undefined,
    );
    return next;
  }

  /** Moves the expiry to `ms` from now. */
  setTimeout(ms: number): void {
    this.timer?.cancel();
    this.endAt = new Date(this.clock.now() + ms);
    this.timer = this.clock.setTimer(() => this.expire(), ms);
  }

  /** Extends the expiry to `ms` from now if that is later (connect never shortens it). */
  extendTimeout(ms: number): void {
    if (this.clock.now() + ms > this.endAt.getTime()) this.setTimeout(ms);
  }

  private expire(): void {
    if (this.killed || this.state !== "running") return;
    if (this.lifecycle.onTimeout === "pause") {
      void this.pause(this.lifecycle.keepMemory).catch(() => this.onExpire(this));
      return;
    }
    this.onExpire(this);
  }

  /** Resolves true when the sandbox runs (now or after a resume), false when it is killed or cold-booted. */
  whenRunning(): Promise<boolean> {
    if (this.killed) return Promise.resolve(false);
    if (this.state === "running") return Promise.resolve(true);
    if (this.pausedWith === "filesystem") return Promise.resolve(false);
    return new Promise((resolve) => this.runningWaiters.push(resolve));
  }

  private notifyRunning(running: boolean): void {
    for (const waiter of this.runningWaiters.splice(0)) waiter(running);
  }

  /** Cuts every open envd stream. */
  dropStreams(): void {
    for (const stream of [...this.streams]) stream.drop();
    this.streams.clear();
  }

  /** Pauses: the backend sandbox is frozen (memory) or stopped (filesystem only). */
  pause(keepMemory: boolean): Promise<void> {
    return this.serial(async () => {
      if (this.killed || this.state === "paused") return;
      this.timer?.cancel();
      this.dropStreams();
      this.filesystem.closeAll();
      let withMemory = keepMemory;
      if (withMemory) {
        try {
          await this.backend.pause();
        } catch (error) {
          // A backend without pause cannot keep memory: E2B's answer would be a memory snapshot, the honest
          // fallback is a filesystem-only pause, which the resumed sandbox shows (processes are gone).
          if ((error as { code?: string }).code !== "NotSupported") throw error;
          withMemory = false;
        }
      }
      if (!withMemory) {
        this.processes.forgetAll();
        this.notifyRunning(false);
        await this.backend.stop();
      }
      this.pausedWith = withMemory ? "memory" : "filesystem";
      this.state = "paused";
    });
  }

  /** Resumes a paused sandbox with a fresh timeout; `coldBoot` forces a filesystem-only resume. */
  resume(timeoutMs: number, coldBoot = false): Promise<void> {
    return this.serial(async () => {
      if (this.killed || this.state !== "paused") return;
      if (coldBoot && this.pausedWith === "memory") {
        this.processes.forgetAll();
        this.notifyRunning(false);
        await this.backend.stop().catch(() => undefined);
        this.pausedWith = "filesystem";
      }
      await this.backend.resume();
      this.state = "running";
      this.pausedWith = undefined;
      this.setTimeout(timeoutMs);
      this.notifyRunning(true);
    });
  }

  /** Ends the sandbox's envd side; the caller destroys the backend sandbox. */
  markKilled(): void {
    this.killed = true;
    this.notifyRunning(false);
    this.timer?.cancel();
    this.dropStreams();
    this.filesystem.closeAll();
    this.processes.forgetAll();
  }

  /** `SandboxDetail` (`detail`) or `ListedSandbox`. */
  describe(detail: boolean, domain: string | null): Record<string, unknown> {
    const out: Record<string, unknown> = {
      sandboxID: this.id,
      templateID: this.templateID,
      clientID: this.clientID,
      cpuCount: this.resources.cpuCount,
      memoryMB: this.resources.memoryMB,
      diskSizeMB: this.resources.diskSizeMB,
      envdVersion: this.envdVersion,
      metadata: this.metadata,
      startedAt: this.startedAt.toISOString(),
      endAt: this.endAt.toISOString(),
      state: this.state,
      volumeMounts: [],
    };
    if (this.alias) out.alias = this.alias;
    if (detail) {
      if (this.envdAccessToken) out.envdAccessToken = this.envdAccessToken;
      out.domain = domain;
      out.allowInternetAccess = this.allowInternetAccess ?? null;
      out.network = { ...this.network };
      out.lifecycle = { onTimeout: this.lifecycle.onTimeout, autoResume: this.lifecycle.autoResume };
    }
    return out;
  }

  /** The `Sandbox` answer of create and connect. */
  connection(domain: string | null): Record<string, unknown> {
    const out: Record<string, unknown> = {
      sandboxID: this.id,
      templateID: this.templateID,
      clientID: this.clientID,
      envdVersion: this.envdVersion,
      domain,
      trafficAccessToken: this.trafficAccessToken ?? null,
    };
    if (this.alias) out.alias = this.alias;
    if (this.envdAccessToken) out.envdAccessToken = this.envdAccessToken;
    return out;
  }
}
