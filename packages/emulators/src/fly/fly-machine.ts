/**
 * One emulated Fly Machine: its record (id, name, region, versions, events, state) and its life on the
 * backend. Booting creates a backend sandbox from the machine's image and runs `init` (exec, or entrypoint
 * + cmd) as the main process; when the main process exits the restart policy decides (`no`: stopped,
 * `always`/`on-failure`: started again, up to `max_retries`). Stop ends every process and — unless
 * `rootfs.persist` is `always` — the next start gets a fresh root filesystem, as Fly's ephemeral rootfs
 * does; suspend freezes the sandbox and start thaws it; a boot the backend cannot do (an image it cannot
 * run) ends in `failed`. Every change bumps `updated_at`, is recorded as an event and wakes `/wait`.
 */
import { randomBytes } from "node:crypto";
import type { AnyCapabilities, Sandbox, SandboxProcess, SandboxSpec } from "@sbox/core";
import type { EmulatorBackend } from "../backend.js";
import type { EmulatorClock } from "../clock.js";
import { type FlyMachineConfig, imageRefOf, mainCommandOf } from "./fly-machine-config.js";
import { type FlyState, newUlid } from "./fly-states.js";

/** An entry of the machine's event log (`MachineEvent`). */
export interface FlyMachineEvent {
  id: string;
  type: string;
  status: string;
  source: "user" | "flyd";
  timestamp: number;
  request?: Record<string, unknown>;
}

/** How images map onto the backend: a backend template, or `false` for an image that cannot be pulled. */
export type FlyImageMap = Readonly<Record<string, string | false>>;

/** What a machine needs of its emulator. */
export interface FlyMachineHost {
  readonly backend: EmulatorBackend;
  readonly clock: EmulatorClock;
  readonly images: FlyImageMap;
  /** Backend template for images not in `images` (the docker backend's default image otherwise). */
  readonly defaultTemplate: string | undefined;
  /** How long a destroyed machine stays visible. */
  readonly destroyedLingerMs: number;
  /** Called once a destroyed machine stops lingering. */
  forget(machine: FlyMachine): void;
  /** Resolves when boots may go ahead (tests hold them to see a boot that never ends). */
  bootGate(): Promise<void>;
}

/** Pause between a main process's exit and its restart. */
/** How often one main process is re-attached to after its following broke (a frozen sandbox). */
const MAX_REATTACHES = 5;

const RESTART_DELAY_MS = 200;
/** How many events a machine keeps. */
const EVENT_LIMIT = 100;

function machineId(): string {
  return randomBytes(7).toString("hex");
}

/** An emulated machine. */
export class FlyMachine {
  readonly id: string = machineId();
  readonly createdAt: Date;
  updatedAt: Date;
  name: string;
  region: string;
  state: FlyState = "created";
  version: string;
  config: FlyMachineConfig;
  readonly versions: { version: string; config: FlyMachineConfig }[] = [];
  readonly events: FlyMachineEvent[] = [];
  cordoned = false;
  /** The last reason a boot failed. */
  failure: string | undefined;
  destroyedAt: Date | undefined;
  /** The backend sandbox; absent before the first boot and after destroy. */
  sandbox: Sandbox<AnyCapabilities> | undefined;
  private main: SandboxProcess | undefined;
  /** True when following the main process broke during a suspend (it is re-attached on thaw). */
  private mainDetached = false;
  private thawing = false;
  private reattaches = 0;
  private restarts = 0;
  /** Bumped on every boot, so a late exit of an older main process changes nothing. */
  private generation = 0;
  private freshRootfs = false;
  private readonly waiters = new Set<() => void>();
  /** Fires when the machine is destroyed, so a boot still waiting at the gate gives up. */
  private readonly ending = new AbortController();
  private work: Promise<void> = Promise.resolve();
  readonly privateIp: string;

  constructor(
    readonly app: string,
    config: FlyMachineConfig,
    options: { name?: string | undefined; region: string },
    private readonly host: FlyMachineHost,
  ) {
    const now = new Date(host.clock.now());
    this.createdAt = now;
    this.updatedAt = now;
    this.name = options.name ?? `emulated-${this.id.slice(0, 6)}`;
    this.region = options.region;
    this.config = config;
    this.version = newUlid(now.getTime());
    this.versions.push({ version: this.version, config });
    const hex = this.id.padEnd(16, "0");
    this.privateIp = `fdaa:0:1:a7b:${hex.slice(0, 4)}:${hex.slice(4, 8)}:${hex.slice(8, 12)}:2`;
    this.record("launch", "created", "user");
  }

  /** Runs lifecycle work one step at a time (a stop never overlaps a boot). */
  private serial(task: () => Promise<void>): Promise<void> {
    const next = this.work.then(task, task);
    this.work = next.catch(() => undefined);
    return next;
  }

  /** Adds an event (newest first, as Fly lists them). */
  record(
    type: string,
    status: string,
    source: "user" | "flyd",
    request?: Record<string, unknown>,
  ): FlyMachineEvent {
    const event: FlyMachineEvent = {
      id: newUlid(this.host.clock.now()),
      type,
      status,
      source,
      timestamp: this.host.clock.now(),
      ...(request ? { request } : {}),
    };
    this.events.unshift(event);
    if (this.events.length > EVENT_LIMIT) this.events.length = EVENT_LIMIT;
    return event;
  }

  private setState(state: FlyState): void {
    this.state = state;
    this.updatedAt = new Date(this.host.clock.now());
    for (const wake of [...this.waiters]) wake();
  }

  /** Calls `listener` on every state change until the returned function is called. */
  onChange(listener: () => void): () => void {
    this.waiters.add(listener);
    return () => this.waiters.delete(listener);
  }

  /** The machine as the API describes it (`Machine`); `summary` leaves config, events and checks out. */
  describe(
    options: { summary?: boolean; leaseNonce?: string | undefined; lease?: Record<string, unknown> } = {},
  ): Record<string, unknown> {
    const out: Record<string, unknown> = {
      id: this.id,
      name: this.name,
      state: this.state,
      region: this.region,
      instance_id: this.version,
      version: this.version,
      private_ip: this.privateIp,
      created_at: this.createdAt.toISOString(),
      updated_at: this.updatedAt.toISOString(),
      image_ref: imageRefOf(this.config.image),
      host_status: "ok",
      cordoned: this.cordoned,
    };
    if (!options.summary) {
      out.config = this.config;
      out.events = this.events.slice(0, 10);
      out.checks = [];
      if (options.leaseNonce) out.nonce = options.leaseNonce;
    }
    if (options.lease) out.lease = options.lease;
    return out;
  }

  private templateFor(image: string): string | undefined | false {
    const mapped = this.host.images[image];
    if (mapped !== undefined) return mapped;
    return this.host.defaultTemplate;
  }

  private specFor(config: FlyMachineConfig): SandboxSpec | string {
    const template = this.templateFor(config.image);
    if (template === false) return `failed to pull image ${config.image}: not found`;
    const spec: SandboxSpec = {};
    if (template !== undefined && this.host.backend.honours.includes("template")) spec.template = template;
    if (config.env && Object.keys(config.env).length > 0)
      spec.env = { ...config.env, ...this.flyEnv(config) };
    else spec.env = this.flyEnv(config);
    return spec;
  }

  /** The variables Fly sets in every machine. */
  flyEnv(config: FlyMachineConfig = this.config): Record<string, string> {
    return {
      FLY_APP_NAME: this.app,
      FLY_MACHINE_ID: this.id,
      FLY_REGION: this.region,
      FLY_IMAGE_REF: config.image,
      FLY_MACHINE_VERSION: this.version,
      FLY_PRIVATE_IP: this.privateIp,
    };
  }

  /**
   * Boots the machine (from `created`, `stopped`, `failed`) or thaws it (from `suspended`). The state is
   * `starting` as soon as this returns, so an answer sent right after describes the boot under way.
   */
  start(source: "user" | "flyd" = "user"): Promise<void> {
    const idle =
      this.state === "created" ||
      this.state === "stopped" ||
      this.state === "failed" ||
      this.state === "suspended";
    const thaw = this.state === "suspended";
    if (!idle) return this.serial(async () => undefined);
    this.setState("starting");
    this.record("start", "pending", source);
    return this.serial(async () => {
      if (this.state !== "starting") return;
      await Promise.race([
        this.host.bootGate(),
        new Promise<void>((resolve) => this.ending.signal.addEventListener("abort", () => resolve())),
      ]);
      if (this.state !== "starting" || this.ending.signal.aborted) return;
      try {
        if (thaw && this.sandbox) {
          this.thawing = true;
          try {
            await this.sandbox.resume();
          } finally {
            this.thawing = false;
          }
        } else {
          await this.bootSandbox();
        }
      } catch (error) {
        this.failure = error instanceof Error ? error.message : String(error);
        this.record("launch", "failed", "flyd", { error: this.failure });
        this.setState("failed");
        return;
      }
      this.failure = undefined;
      this.record("start", "started", "flyd");
      this.setState("started");
      if (thaw) await this.reattachMain();
    });
  }

  private async bootSandbox(): Promise<void> {
    const persist = this.config.rootfs?.persist === "always";
    if (this.sandbox && (this.freshRootfs || !persist)) {
      const old = this.sandbox;
      this.sandbox = undefined;
      await this.host.backend.release(old).catch(() => undefined);
    }
    this.freshRootfs = false;
    if (!this.sandbox) {
      const spec = this.specFor(this.config);
      if (typeof spec === "string") throw new Error(spec);
      this.sandbox = await this.host.backend.create(spec);
    } else {
      await this.sandbox.resume();
    }
    await this.startMain();
  }

  private async startMain(): Promise<void> {
    const command = mainCommandOf(this.config);
    const sandbox = this.sandbox;
    if (!command || !sandbox) return;
    const generation = ++this.generation;
    this.reattaches = 0;
    const main = await sandbox.commands.spawn(command, { env: this.flyEnv() });
    this.watchMain(main, generation);
  }

  /**
   * Follows the main process to its exit. Following can break while the sandbox is frozen (a suspend:
   * the backend refuses exec meanwhile) although the process lives on; the thaw re-attaches to it.
   */
  private watchMain(main: SandboxProcess, generation: number): void {
    this.main = main;
    this.mainDetached = false;
    void main.wait().then(
      (exit) => this.mainExited(generation, exit.exitCode, exit.signal),
      () => {
        if (generation !== this.generation) return;
        this.mainDetached = true;
        if (this.state === "suspending" || this.state === "suspended" || this.thawing) return;
        // Broken following after a thaw is noticed late sometimes: the process may well live on.
        void this.reattachMain();
      },
    );
  }

  /** After a thaw: the main process again, or its end when it cannot be found. */
  private async reattachMain(): Promise<void> {
    const main = this.main;
    const sandbox = this.sandbox;
    if (!main || !sandbox || !this.mainDetached) return;
    const again =
      this.reattaches++ < MAX_REATTACHES
        ? await sandbox.commands.connect(main.pid).catch(() => undefined)
        : undefined;
    if (again) this.watchMain(again, this.generation);
    else this.mainExited(this.generation, -1, undefined);
  }

  private mainExited(generation: number, exitCode: number, signal: string | undefined): void {
    if (generation !== this.generation || this.state !== "started") return;
    this.main = undefined;
    this.record("exit", "stopped", "flyd", { exit_event: { exit_code: exitCode, signal: signal ?? null } });
    const policy = this.config.restart.policy;
    const retry =
      policy === "always" ||
      (policy === "on-failure" && exitCode !== 0 && this.restarts < (this.config.restart.max_retries ?? 10));
    if (retry) {
      this.restarts += 1;
      setTimeout(() => {
        if (this.state !== "started" || generation !== this.generation) return;
        void this.serial(async () => {
          this.record("restart", "started", "flyd");
          await this.startMain().catch(() => undefined);
        });
      }, RESTART_DELAY_MS).unref();
      return;
    }
    void this.serial(async () => {
      if (this.state !== "started") return;
      this.setState("stopping");
      await this.sandbox?.stop().catch(() => undefined);
      this.setState("stopped");
      if (this.config.auto_destroy) await this.destroyNow("flyd");
    });
  }

  /** Stops the machine: the main process gets `signal`, then everything is killed after `timeoutMs`. */
  stop(signal: string | undefined, timeoutMs: number): Promise<void> {
    return this.serial(async () => {
      if (this.state !== "started" && this.state !== "starting" && this.state !== "suspended") return;
      const wasSuspended = this.state === "suspended";
      this.setState("stopping");
      this.record("stop", "pending", "user");
      this.generation += 1;
      const main = this.main;
      this.main = undefined;
      if (wasSuspended) await this.sandbox?.resume().catch(() => undefined);
      if (main && !wasSuspended) {
        const configured = (this.config.stop_config as { signal?: string } | undefined)?.signal;
        await main.kill(signal ?? configured ?? "SIGINT").catch(() => undefined);
        await Promise.race([
          main.wait().catch(() => undefined),
          new Promise((resolve) => setTimeout(resolve, timeoutMs).unref()),
        ]);
      }
      await this.sandbox?.stop().catch(() => undefined);
      this.restarts = 0;
      this.record("stop", "stopped", "flyd");
      this.setState("stopped");
    });
  }

  /** Suspends a started machine (processes and memory kept). */
  suspend(): Promise<void> {
    return this.serial(async () => {
      if (this.state !== "started") return;
      this.setState("suspending");
      this.record("suspend", "pending", "user");
      await this.sandbox?.pause();
      this.record("suspend", "suspended", "flyd");
      this.setState("suspended");
    });
  }

  /** Sends a signal to the main process. */
  async signal(signal: string): Promise<boolean> {
    if (!this.main) return false;
    await this.main.kill(signal);
    this.record("signal", signal, "user");
    return true;
  }

  /** Replaces the configuration: a started machine is replaced (stopped, booted again with the new one). */
  update(
    config: FlyMachineConfig,
    options: { skipLaunch: boolean; name?: string | undefined; region?: string | undefined },
  ): Promise<void> {
    return this.serial(async () => {
      const wasRunning = this.state === "started" || this.state === "starting";
      this.config = config;
      if (options.name) this.name = options.name;
      if (options.region) this.region = options.region;
      this.version = newUlid(this.host.clock.now());
      this.versions.unshift({ version: this.version, config });
      this.record("update", "updated", "user");
      if (!wasRunning) {
        this.updatedAt = new Date(this.host.clock.now());
        this.freshRootfs = true;
        for (const wake of [...this.waiters]) wake();
        return;
      }
      this.setState("replacing");
      this.generation += 1;
      await this.main?.kill("SIGKILL").catch(() => undefined);
      this.main = undefined;
      this.freshRootfs = true;
      if (options.skipLaunch) {
        await this.sandbox?.stop().catch(() => undefined);
        this.setState("stopped");
        return;
      }
      this.setState("starting");
      try {
        await this.bootSandbox();
      } catch (error) {
        this.failure = error instanceof Error ? error.message : String(error);
        this.record("launch", "failed", "flyd", { error: this.failure });
        this.setState("failed");
        return;
      }
      this.record("start", "started", "flyd");
      this.setState("started");
    });
  }

  private async destroyNow(source: "user" | "flyd"): Promise<void> {
    if (this.state === "destroyed" || this.state === "destroying") return;
    this.setState("destroying");
    this.record("destroy", "pending", source);
    this.generation += 1;
    this.main = undefined;
    const sandbox = this.sandbox;
    this.sandbox = undefined;
    if (sandbox) await this.host.backend.release(sandbox).catch(() => undefined);
    this.destroyedAt = new Date(this.host.clock.now());
    this.record("destroy", "destroyed", "flyd");
    this.setState("destroyed");
    this.host.clock.setTimer(() => this.host.forget(this), this.host.destroyedLingerMs);
  }

  /** Destroys the machine; it stays visible as `destroyed` for a while. A boot under way is given up. */
  destroy(): Promise<void> {
    this.ending.abort();
    return this.serial(() => this.destroyNow("user"));
  }

  /** The machine's backend sandbox when it is started (for exec and the proxy). */
  running(): Sandbox<AnyCapabilities> | undefined {
    return this.state === "started" ? this.sandbox : undefined;
  }
}
