/** One sandbox of the test server: a home directory, its envd services, and its control-plane record. */
import { randomBytes } from "node:crypto";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { FilesystemService } from "./e2b-test-filesystem-service.js";
import { ProcessService } from "./e2b-test-process-service.js";
import { signalSandbox } from "./e2b-test-procfs.js";

/** E2B-like ids: lowercase letters and digits. */
export function newSandboxId(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  return [...randomBytes(20)].map((b) => alphabet[b % alphabet.length]).join("");
}

/** What a sandbox is created from. */
export interface SandboxInit {
  templateID: string;
  envVars: Record<string, string>;
  metadata: Record<string, string>;
  timeoutMs: number;
  network?: Record<string, unknown> | undefined;
  /** Files to start from (a fork copies its parent's home). */
  copyFrom?: string | undefined;
}

/** A sandbox of the test server. */
export class TestSandbox {
  readonly id: string = newSandboxId();
  readonly home: string;
  readonly defaultUser: string = userInfo().username;
  readonly accessToken: string = randomBytes(16).toString("hex");
  readonly startedAt: Date = new Date();
  readonly templateID: string;
  readonly envVars: Record<string, string>;
  readonly metadata: Record<string, string>;
  network: Record<string, unknown> | undefined;
  state: "running" | "paused" = "running";
  endAt: Date;
  readonly processes: ProcessService;
  readonly filesystem: FilesystemService;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    init: SandboxInit,
    private readonly onExpire: (sandbox: TestSandbox) => void,
  ) {
    this.templateID = init.templateID;
    this.envVars = { ...init.envVars };
    this.metadata = { ...init.metadata };
    this.network = init.network;
    this.home = mkdtempSync(join(tmpdir(), `e2b-test-${this.id}-`));
    if (init.copyFrom)
      cpSync(init.copyFrom, this.home, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
    this.processes = new ProcessService(this);
    this.filesystem = new FilesystemService(this);
    this.endAt = new Date();
    this.setTimeout(init.timeoutMs);
  }

  /** Moves the expiry to `ms` from now (E2B kills a sandbox when it expires). */
  setTimeout(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.endAt = new Date(Date.now() + ms);
    this.timer = setTimeout(() => this.onExpire(this), ms);
    this.timer.unref();
  }

  /** Freezes every process (memory kept) or ends them (filesystem only). */
  pause(keepMemory: boolean): void {
    if (this.timer) clearTimeout(this.timer);
    this.filesystem.closeWatches();
    signalSandbox(this.id, keepMemory ? "SIGSTOP" : "SIGKILL");
    this.state = "paused";
  }

  /** Continues a paused sandbox with a fresh timeout. */
  resume(timeoutMs: number): void {
    signalSandbox(this.id, "SIGCONT");
    this.state = "running";
    this.setTimeout(timeoutMs);
  }

  /** Ends every process and removes the files. */
  destroy(): void {
    if (this.timer) clearTimeout(this.timer);
    this.filesystem.closeWatches();
    signalSandbox(this.id, "SIGKILL");
    signalSandbox(this.id, "SIGCONT");
    rmSync(this.home, { recursive: true, force: true });
  }

  /** The control plane's description (ListedSandbox / SandboxDetail). */
  describe(detail: boolean): Record<string, unknown> {
    const out: Record<string, unknown> = {
      sandboxID: this.id,
      templateID: this.templateID,
      clientID: "test-client",
      cpuCount: 2,
      memoryMB: 512,
      diskSizeMB: 1024,
      envdVersion: ENVD_VERSION,
      metadata: this.metadata,
      startedAt: this.startedAt.toISOString(),
      endAt: this.endAt.toISOString(),
      state: this.state,
    };
    if (detail) {
      out.envdAccessToken = this.accessToken;
      out.domain = null;
      if (this.network) out.network = this.network;
    }
    return out;
  }

  /** The `Sandbox` answer of create and connect. */
  connection(): Record<string, unknown> {
    return {
      sandboxID: this.id,
      templateID: this.templateID,
      clientID: "test-client",
      envdVersion: ENVD_VERSION,
      envdAccessToken: this.accessToken,
      domain: null,
      trafficAccessToken: null,
    };
  }
}

/** The envd version the test server claims: recent enough for stdin close and streamed uploads. */
export const ENVD_VERSION = "0.5.8";
