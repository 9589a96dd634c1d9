/**
 * The state of one E2B emulator: its sandboxes and templates, and the operations the control plane runs
 * on them — creating a sandbox (a backend machine laid out as E2B's base template), killing, forking,
 * snapshotting, changing egress, sampling metrics.
 */
import type { AnyCapabilities, EgressPolicy, Sandbox, SandboxSpec } from "@sbox/core";
import type { EmulatorBackend } from "../backend.js";
import type { EmulatorClock } from "../clock.js";
import { DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S } from "./e2b-control-plane.js";
import { E2BMachine } from "./e2b-machine.js";
import { egressPolicyOf, parseNetworkConfig } from "./e2b-network.js";
import { type E2BLifecycle, type E2BMetricSample, E2BSandbox } from "./e2b-sandbox.js";
import type { E2BTemplate, E2BTemplates } from "./e2b-templates.js";

/** A failure answered with its status. */
export interface E2BFailure {
  readonly status: number;
  readonly message: string;
}

/** What an emulator state is made of. */
export interface E2BStateInit {
  readonly apiKey: string;
  /** The domain sandbox hosts are named under (`<port>-<id>.<domain>`); `null` in answers when unset. */
  readonly domain: string | null;
  readonly backend: EmulatorBackend;
  readonly templates: E2BTemplates;
  readonly clock: EmulatorClock;
  readonly envdVersion: string;
}

function failure(status: number, message: string): E2BFailure {
  return { status, message };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The sandboxes, templates and operations of one emulator. */
export class E2BEmulatorState {
  readonly apiKey: string;
  readonly domain: string | null;
  readonly backend: EmulatorBackend;
  readonly templates: E2BTemplates;
  readonly clock: EmulatorClock;
  readonly envdVersion: string;
  readonly sandboxes: Map<string, E2BSandbox> = new Map();

  constructor(init: E2BStateInit) {
    this.apiKey = init.apiKey;
    this.domain = init.domain;
    this.backend = init.backend;
    this.templates = init.templates;
    this.clock = init.clock;
    this.envdVersion = init.envdVersion;
  }

  private canControlEgress(sandbox?: Sandbox<AnyCapabilities>): boolean {
    const level = (sandbox?.capabilities ?? this.backend.client.capabilities).map.egressControl;
    return level !== "unsupported" && this.backend.honours.includes("network");
  }

  /** Makes a backend machine for `template`, laid out and seeded. */
  private async machineFor(template: E2BTemplate, egress: EgressPolicy): Promise<E2BMachine> {
    const source = template.source;
    const spec: SandboxSpec = {};
    const backendTemplate =
      source.kind === "backend"
        ? source.template
        : source.kind === "backend-snapshot"
          ? source.template
          : source.base.source.kind === "backend"
            ? source.base.source.template
            : undefined;
    if (backendTemplate !== undefined) spec.template = backendTemplate;
    if (egress !== "allow-all") spec.network = { egress };
    const sandbox = await this.backend.create(spec);
    try {
      const machine = await E2BMachine.open(sandbox);
      if (source.kind === "archive") {
        await machine.helper("unpack", {}, { stdin: new Uint8Array(source.archive) });
        await machine.refreshUsers();
      }
      return machine;
    } catch (error) {
      await this.backend.release(sandbox).catch(() => undefined);
      throw error;
    }
  }

  private async resourcesOf(machine: E2BMachine) {
    const user = await machine.user(machine.layout.defaultUser);
    const info = (await machine.helper("sysinfo", { path: user.home })) as {
      cpus?: number;
      memTotal?: number;
      diskTotal?: number;
    };
    return {
      cpuCount: info.cpus ?? 1,
      memoryMB: Math.round((info.memTotal ?? 0) / 1024 / 1024),
      diskSizeMB: Math.round((info.diskTotal ?? 0) / 1024 / 1024),
    };
  }

  /** `POST /sandboxes`: validates the body like E2B, then makes the machine. */
  async createSandbox(body: Record<string, unknown>): Promise<E2BSandbox | E2BFailure> {
    if (typeof body.templateID !== "string" || body.templateID === "") {
      return failure(400, "templateID is required");
    }
    const template = this.templates.resolve(body.templateID);
    if (!template) return failure(404, `template '${body.templateID}' not found`);
    const timeout = body.timeout ?? DEFAULT_TIMEOUT_S;
    if (typeof timeout !== "number" || !Number.isInteger(timeout) || timeout < 0) {
      return failure(400, "timeout must be a non-negative integer number of seconds");
    }
    if (timeout > MAX_TIMEOUT_S)
      return failure(400, `Timeout cannot be greater than ${MAX_TIMEOUT_S / 3600} hours`);
    const envVars = body.envVars ?? {};
    const metadata = body.metadata ?? {};
    for (const [name, value] of [
      ["envVars", envVars],
      ["metadata", metadata],
    ] as const) {
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        return failure(400, `${name} must be an object of strings`);
      }
      if (!Object.values(value).every((v) => typeof v === "string")) {
        return failure(400, `${name} must be an object of strings`);
      }
    }
    if (Array.isArray(body.volumeMounts) && body.volumeMounts.length > 0) {
      return failure(400, "volume mounts need E2B's volumes service, which this emulator does not run");
    }
    const autoPause = body.autoPause === true;
    const autoResume =
      typeof body.autoResume === "object" && body.autoResume !== null
        ? (body.autoResume as { enabled?: unknown }).enabled === true
        : false;
    const keepMemory = body.autoPauseMemory !== false;
    if (autoResume && !autoPause) return failure(400, "autoResume requires autoPause");
    if (autoResume && !keepMemory) {
      return failure(400, "a filesystem-only auto-pause (autoPauseMemory: false) cannot be auto-resumed");
    }
    const lifecycle: E2BLifecycle = { onTimeout: autoPause ? "pause" : "kill", autoResume, keepMemory };
    const network = parseNetworkConfig(body.network);
    if (typeof network === "string") return failure(400, network);
    const allowInternetAccess =
      typeof body.allow_internet_access === "boolean" ? body.allow_internet_access : undefined;
    const egress = egressPolicyOf(network, allowInternetAccess, {
      name: this.backend.name,
      canControlEgress: this.canControlEgress(),
    });
    if (typeof egress === "object" && "refused" in egress) return failure(400, egress.refused);
    let machine: E2BMachine;
    try {
      machine = await this.machineFor(template, egress);
    } catch (error) {
      // A backend that refuses what the request asks (an allow-list it cannot enforce) is the caller's 400.
      const code = (error as { code?: string }).code;
      const status = code === "Validation" || code === "NotSupported" ? 400 : 500;
      return failure(
        status,
        `the emulator could not start a sandbox on its ${this.backend.name} backend: ${messageOf(error)}`,
      );
    }
    let resources: { cpuCount: number; memoryMB: number; diskSizeMB: number };
    try {
      resources = await this.resourcesOf(machine);
    } catch (error) {
      await this.backend.release(machine.sandbox).catch(() => undefined);
      return failure(500, `the emulator could not read the new sandbox's resources: ${messageOf(error)}`);
    }
    const sandbox = new E2BSandbox({
      template,
      machine,
      envVars: envVars as Record<string, string>,
      metadata: metadata as Record<string, string>,
      timeoutMs: timeout * 1000,
      lifecycle,
      secure: body.secure !== false,
      network,
      allowInternetAccess,
      egress,
      resources,
      envdVersion: this.envdVersion,
      clock: this.clock,
      onExpire: (expired) => void this.killSandbox(expired),
    });
    this.sandboxes.set(sandbox.id, sandbox);
    return sandbox;
  }

  /** Kills a sandbox: envd's streams are cut, the machine is destroyed. */
  async killSandbox(sandbox: E2BSandbox): Promise<void> {
    if (sandbox.killed) return;
    this.sandboxes.delete(sandbox.id);
    sandbox.markKilled();
    await this.backend.release(sandbox.backend).catch(() => undefined);
  }

  /** `PUT /sandboxes/{id}/network`: replaces the egress rules; the 400 message when they cannot be enforced. */
  async updateNetwork(sandbox: E2BSandbox, body: Record<string, unknown>): Promise<string | undefined> {
    const parsed = parseNetworkConfig(body);
    if (typeof parsed === "string") return parsed;
    const config = { ...parsed, allowPublicTraffic: sandbox.network.allowPublicTraffic };
    const policy = egressPolicyOf(config, undefined, {
      name: this.backend.name,
      canControlEgress: this.canControlEgress(sandbox.backend),
    });
    if (typeof policy === "object" && "refused" in policy) return policy.refused;
    const network = sandbox.backend.network;
    if (network) {
      try {
        await network.setEgress(policy);
      } catch (error) {
        return `the ${this.backend.name} backend refused the egress policy: ${messageOf(error)}`;
      }
    } else if (policy !== "allow-all") {
      return `the ${this.backend.name} backend of this emulator cannot restrict egress`;
    }
    sandbox.network = config;
    sandbox.egress = policy;
    return undefined;
  }

  /** Takes one metrics sample of a running sandbox and keeps it. */
  async sampleMetrics(sandbox: E2BSandbox): Promise<E2BMetricSample> {
    const machine = sandbox.machine;
    const user = await machine.user(machine.layout.defaultUser);
    const [info, metrics] = await Promise.all([
      machine.helper("sysinfo", { path: user.home }) as Promise<{
        cpus?: number;
        memTotal?: number;
        memAvailable?: number;
        memCache?: number;
        diskTotal?: number;
        diskUsed?: number;
      }>,
      sandbox.backend.metrics().catch(() => undefined),
    ]);
    const now = this.clock.now();
    const memTotal = metrics?.memoryLimitBytes ?? info.memTotal ?? 0;
    const sample: E2BMetricSample = {
      timestamp: new Date(now).toISOString(),
      timestampUnix: Math.floor(now / 1000),
      cpuCount: info.cpus ?? 1,
      cpuUsedPct: metrics?.cpuPercent ?? 0,
      memUsed: metrics?.memoryBytes ?? Math.max(0, (info.memTotal ?? 0) - (info.memAvailable ?? 0)),
      memTotal,
      memCache: info.memCache ?? 0,
      diskUsed: info.diskUsed ?? 0,
      diskTotal: info.diskTotal ?? 0,
    };
    sandbox.metrics.push(sample);
    if (sandbox.metrics.length > 1_000) sandbox.metrics.splice(0, sandbox.metrics.length - 1_000);
    return sample;
  }

  /** A new emulated sandbox on `machine`, carrying `parent`'s settings (a fork). */
  private async child(parent: E2BSandbox, machine: E2BMachine, timeoutMs: number): Promise<E2BSandbox> {
    const resources = await this.resourcesOf(machine);
    const template = this.templates.resolve(parent.templateID) ?? this.templates.resolve("base")!;
    const child = new E2BSandbox({
      template,
      machine,
      envVars: parent.envVars,
      metadata: parent.metadata,
      timeoutMs,
      lifecycle: parent.lifecycle,
      secure: parent.envdAccessToken !== undefined,
      network: parent.network,
      allowInternetAccess: parent.allowInternetAccess,
      egress: parent.egress,
      resources,
      envdVersion: this.envdVersion,
      clock: this.clock,
      onExpire: (expired) => void this.killSandbox(expired),
    });
    this.sandboxes.set(child.id, child);
    return child;
  }

  /** `POST /sandboxes/{id}/fork`: `count` independent copies (files; the backend's fork where it has one). */
  async forkSandbox(
    parent: E2BSandbox,
    count: number,
    timeoutMs: number,
  ): Promise<(E2BSandbox | E2BFailure)[]> {
    const fork = parent.backend.fork;
    if (fork) {
      let copies: Sandbox<AnyCapabilities>[];
      try {
        copies = (await fork({ count })) as Sandbox<AnyCapabilities>[];
      } catch (error) {
        return Array.from({ length: count }, () =>
          failure(500, `fork failed on the ${this.backend.name} backend: ${messageOf(error)}`),
        );
      }
      for (const copy of copies) this.backend.adopt(copy);
      return Promise.all(
        copies.map(async (copy) => {
          try {
            return await this.child(parent, await E2BMachine.open(copy), timeoutMs);
          } catch (error) {
            await this.backend.release(copy).catch(() => undefined);
            return failure(500, `the forked sandbox did not start: ${messageOf(error)}`);
          }
        }),
      );
    }
    // No fork in the backend: seed fresh machines with the parent's files.
    const archive = await this.archiveOf(parent);
    const base = this.templates.resolve(parent.templateID) ?? this.templates.resolve("base")!;
    const root = base.source.kind === "archive" ? base.source.base : base;
    const results: (E2BSandbox | E2BFailure)[] = [];
    for (let i = 0; i < count; i++) {
      try {
        const machine = await this.machineFor(
          { ...base, source: { kind: "archive", archive, base: root } },
          parent.egress,
        );
        results.push(await this.child(parent, machine, timeoutMs));
      } catch (error) {
        results.push(failure(500, `the forked sandbox did not start: ${messageOf(error)}`));
      }
    }
    return results;
  }

  /** A gzip tarball of the sandbox's home directories and `/tmp`, read from inside it. */
  private async archiveOf(sandbox: E2BSandbox): Promise<Buffer> {
    const machine = sandbox.machine;
    const homes = new Set<string>();
    homes.add((await machine.user(machine.layout.defaultUser)).home);
    // root's home only on E2B's layout: on the fallback layout it is the backend's (provider-local's is
    // a read-only view of the host's, which must never end up in a snapshot).
    if (machine.layout.root && machine.layout.template === "e2b-base") homes.add("/root");
    const paths = [...homes, "/tmp"];
    const chunks: Buffer[] = [];
    const stop = new AbortController();
    const { done } = await machine.helperStream(
      "pack",
      { paths },
      {
        signal: stop.signal,
        onLine: (line) => chunks.push(Buffer.from(line, "base64")),
      },
    );
    await done;
    return Buffer.concat(chunks);
  }

  /** `POST /sandboxes/{id}/snapshots`: a template new sandboxes can start from. */
  async snapshotSandbox(sandbox: E2BSandbox, name: string | undefined): Promise<E2BTemplate | E2BFailure> {
    if (sandbox.state !== "running") return failure(409, `sandbox "${sandbox.id}" is not running`);
    const now = new Date(this.clock.now());
    const snapshots = sandbox.backend.snapshots;
    try {
      if (snapshots && this.backend.honours.includes("template")) {
        const ref = await snapshots.create(name === undefined ? {} : { name });
        return this.templates.addSnapshot(
          { kind: "backend-snapshot", template: ref.id, ref, owner: sandbox.backend },
          sandbox.id,
          name,
          now,
        );
      }
      const base = this.templates.resolve(sandbox.templateID);
      const root =
        base?.source.kind === "archive" ? base.source.base : (base ?? this.templates.resolve("base")!);
      const archive = await this.archiveOf(sandbox);
      return this.templates.addSnapshot({ kind: "archive", archive, base: root }, sandbox.id, name, now);
    } catch (error) {
      return failure(500, `snapshot failed on the ${this.backend.name} backend: ${messageOf(error)}`);
    }
  }

  /** `DELETE /templates/{id}`: removes a snapshot (the base template cannot be deleted). */
  async deleteTemplate(reference: string): Promise<true | string | undefined> {
    const template = this.templates.resolve(reference);
    if (!template) return undefined;
    if (!template.snapshot) return `template '${reference}' is built in and cannot be deleted`;
    this.templates.remove(reference);
    if (template.source.kind === "backend-snapshot") {
      await template.source.owner.snapshots?.delete(template.source.ref).catch(() => undefined);
    }
    return true;
  }

  /**
   * The `Template` description E2B lists. The emulator sets no resource limits of its own; the sizes are
   * those of E2B's default template, which is what the real service would list for it.
   */
  describeTemplate(template: E2BTemplate): Record<string, unknown> {
    const at = template.createdAt.toISOString();
    return {
      templateID: template.templateID,
      buildID: `${template.templateID}-build`,
      cpuCount: 2,
      memoryMB: 512,
      diskSizeMB: 1024,
      public: !template.snapshot,
      aliases: template.aliases,
      names: template.names,
      createdAt: at,
      updatedAt: at,
      createdBy: null,
      lastSpawnedAt: null,
      spawnCount: 0,
      buildCount: 1,
      envdVersion: this.envdVersion,
      buildStatus: "ready",
    };
  }

  /** Kills every sandbox and deletes every backend snapshot. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.sandboxes.values()].map((sandbox) => this.killSandbox(sandbox)));
    for (const template of this.templates.all()) {
      if (template.snapshot) await this.deleteTemplate(template.templateID).catch(() => undefined);
    }
  }
}
