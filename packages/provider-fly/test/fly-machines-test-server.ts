/**
 * A protocol-faithful local test server for the Fly Machines API.
 *
 * It speaks the routes `@sbox/provider-fly` calls, as the public reference describes them
 * (https://fly.io/docs/machines/api/machines-resource/, the OpenAPI document at https://docs.machines.dev):
 * the same paths under `/v1/apps/{app}/machines`, the same JSON shapes (`config.image`, `config.guest`,
 * `config.services`, `config.metadata`, `MachineExecRequest{command, timeout, stdin}`,
 * `flydv1.ExecResponse{stdout, stderr, exit_code, exit_signal}`), the `{"error": "..."}` error body, and
 * the status codes (401 for a wrong bearer token, 404 for an unknown machine, 408 when a wait or an exec
 * runs out of time, 412 for an action the machine's state forbids).
 *
 * Machines are backed by REAL local processes, not by canned answers: each machine is a directory on this
 * host (its working directory and HOME) plus a private `/tmp` (a mount namespace made with `unshare` or
 * bubblewrap, when either works here), and exec runs the argv as real processes in it. Stop kills the machine's processes and,
 * like Fly, the next start resets its files; suspend freezes them (SIGSTOP) and start thaws them; destroy
 * kills them and removes the directory. A small stand-in for the Fly Proxy forwards HTTP to the ports a
 * started machine publishes through `config.services`.
 *
 * It is NOT a sandbox: the machines share this host's kernel, network, users and (apart from `/tmp`) its
 * filesystem. Its point is protocol fidelity, and running the core's emulations on real shells.
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  accessSync,
  chmodSync,
  constants as fsConstants,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from "node:fs";
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { constants as osConstants, tmpdir } from "node:os";
import { delimiter, isAbsolute, join } from "node:path";
import { createHttpFaults, type FaultInjection } from "@sbox/conformance";

/** The routes of the Machines API this server implements. */
export type FlyTestRoute =
  | "list"
  | "create"
  | "get"
  | "wait"
  | "exec"
  | "stop"
  | "suspend"
  | "start"
  | "delete";

/** A failure to answer instead of (or after) carrying out a request, for error-path tests. */
export interface FlyTestFault {
  route: FlyTestRoute;
  status: number;
  /** How many requests it applies to (default 1). */
  times?: number;
  /** Response body (default `{"error": "injected <status>"}`). */
  body?: string;
  /** `Retry-After` header value. */
  retryAfter?: string;
  /**
   * `"before"` (default): answered without doing anything, as a rate limiter or a failing gateway would.
   * `"after"`: the request is carried out, then its answer is replaced (a lost answer).
   */
  phase?: "before" | "after";
}

/** One request the server saw. */
export interface FlyTestRequest {
  route: FlyTestRoute | "unknown";
  method: string;
  path: string;
  query: string;
  status: number;
  /** The machine id in the path, when there is one. */
  machineId?: string | undefined;
}

/** Options of {@link startFlyMachinesTestServer}. */
export interface FlyMachinesTestServerOptions {
  /** The bearer token the server accepts (default: a random one). */
  token?: string;
  /** App names that exist (default `["sbox-fly-test"]`). */
  apps?: string[];
  /** Time from `created` to `started` (default 30 ms). */
  bootDelayMs?: number;
}

/** A running test server. */
export interface FlyMachinesTestServer {
  /** Base URL to pass as `apiBaseUrl`. */
  readonly url: string;
  /** The accepted token. */
  readonly token: string;
  /** The first app name. */
  readonly app: string;
  /** Every request seen, in order. */
  readonly requests: FlyTestRequest[];
  /** How machines get a private /tmp (see {@link FlyTestIsolation}). */
  readonly isolation: FlyTestIsolation;
  /** URL at which the Fly Proxy stand-in offers `port` of the app's machines. */
  proxyUrl(app: string, port: number): string;
  /** Queues a fault. */
  fail(fault: FlyTestFault): void;
  /** Drops every queued fault. */
  clearFaults(): void;
  /** While true, new boots stay in `starting` forever (for create timeout tests). */
  hangBoots(hang: boolean): void;
  /** Ids of the machines that exist. */
  machineIds(): string[];
  /** The machine's working directory on this host. */
  machineDir(id: string): string | undefined;
  /** Host pids of the machine's processes. */
  machinePids(id: string): number[];
  /** The conformance kit's fault-injection hook (stall, echo the credential, redirect to another origin). */
  readonly faultInjection: FaultInjection;
  /** Destroys every machine, stops listening and removes every directory. */
  close(): Promise<void>;
}

type MachineState =
  | "created"
  | "starting"
  | "started"
  | "stopping"
  | "stopped"
  | "suspending"
  | "suspended"
  | "destroying"
  | "destroyed";

interface Service {
  protocol: "tcp" | "udp";
  internal_port: number;
  ports?: { port?: number; handlers?: string[] }[];
}

interface MachineConfig {
  image: string;
  env?: Record<string, string>;
  metadata?: Record<string, string>;
  guest?: { cpus?: number; memory_mb?: number; cpu_kind?: string };
  services?: Service[];
  [key: string]: unknown;
}

interface Machine {
  id: string;
  name: string;
  app: string;
  region: string;
  state: MachineState;
  instanceId: string;
  config: MachineConfig;
  createdAt: string;
  updatedAt: string;
  dir: string;
  fs: string;
  tmp: string;
  /** Set by stop: the next start resets the files, as Fly's does. */
  resetOnStart: boolean;
  timers: Set<NodeJS.Timeout>;
  waiters: Set<() => void>;
}

interface QueuedFault {
  route: FlyTestRoute;
  status: number;
  times: number;
  body: string;
  phase: "before" | "after";
  retryAfter?: string;
}

interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

class HttpFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const MAX_BODY_BYTES = 64 * 1024 * 1024;
const WAIT_STATES = new Set(["started", "stopped", "suspended", "destroyed"]);

function isStringRecord(value: unknown): value is Record<string, string> {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((v) => typeof v === "string")
  );
}

/**
 * How each machine gets its own /tmp: a mount namespace made by `unshare` (as root; the command then
 * replaces the helper shell, so a death by signal is seen as such), by bubblewrap (also unprivileged;
 * bwrap stays the parent and reports a death by signal n as exit 128+n), or not at all.
 */
export type FlyTestIsolation = "unshare" | "bwrap" | "none";

/** Mounts the machine's /tmp, enters its directory, then becomes the command. */
const UNSHARE_ENTER = 'mount --bind "$1" /tmp && cd "$2" || exit 125; shift 2; exec "$@"';

function probe(file: string, args: string[]): boolean {
  const result = spawnSync(file, args, { stdio: "ignore", timeout: 10_000 });
  return result.status === 0;
}

function detectIsolation(): FlyTestIsolation {
  if (!usableDir("/var/tmp")) return "none";
  const dir = mkdtempSync(join("/var/tmp", "sbox-fly-probe-"));
  try {
    if (probe("unshare", ["-m", "--", "sh", "-c", UNSHARE_ENTER, "sh", dir, dir, "true"])) return "unshare";
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return probe("bwrap", ["--dev-bind", "/", "/", "--", "true"]) ? "bwrap" : "none";
}

function usableDir(path: string): boolean {
  try {
    accessSync(path, fsConstants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Pids of processes whose environment names this machine (exec sets FLY_MACHINE_ID, children inherit it). */
function pidsOfMachine(id: string): number[] {
  const marker = `FLY_MACHINE_ID=${id}`;
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(entry)) continue;
    let environ: string;
    try {
      environ = readFileSync(`/proc/${entry}/environ`, "latin1");
    } catch {
      continue; // gone meanwhile, or not ours to read
    }
    if (environ.split("\0").includes(marker)) out.push(Number(entry));
  }
  return out;
}

function signalAll(pids: readonly number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Kills every process of the machine, again and again until none is left (processes may fork meanwhile). */
async function killMachine(id: string): Promise<void> {
  for (let round = 0; round < 100; round++) {
    const pids = pidsOfMachine(id);
    if (pids.length === 0) return;
    // A stopped process dies from SIGKILL too, but SIGCONT first lets a frozen parent not hold anything.
    signalAll(pids, "SIGCONT");
    signalAll(pids, "SIGKILL");
    await sleep(20);
  }
}

function findProgram(program: string, cwd: string, path: string): boolean {
  const candidates = program.includes("/")
    ? [isAbsolute(program) ? program : join(cwd, program)]
    : path.split(delimiter).map((dir) => join(dir || ".", program));
  return candidates.some((candidate) => {
    try {
      accessSync(candidate, fsConstants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new HttpFailure(413, "request body too large"));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** Starts the server on 127.0.0.1 (a random port). */
export async function startFlyMachinesTestServer(
  options: FlyMachinesTestServerOptions = {},
): Promise<FlyMachinesTestServer> {
  const token = options.token ?? `fly-test-${randomBytes(16).toString("hex")}`;
  const apps = new Set(options.apps ?? ["sbox-fly-test"]);
  const bootDelayMs = options.bootDelayMs ?? 30;
  const isolation = detectIsolation();
  // /tmp is replaced per machine, so machine directories must live elsewhere to stay visible.
  const base = mkdtempSync(join(isolation === "none" ? tmpdir() : "/var/tmp", "sbox-fly-test-"));
  const hostPath = process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin";
  const machines = new Map<string, Machine>();
  const faults: QueuedFault[] = [];
  const requests: FlyTestRequest[] = [];
  let hang = false;
  let closed = false;

  const now = (): string => new Date().toISOString();
  const newId = (): string => randomBytes(7).toString("hex");

  const view = (m: Machine): Record<string, unknown> => ({
    id: m.id,
    name: m.name,
    state: m.state,
    region: m.region,
    instance_id: m.instanceId,
    private_ip: `fdaa:0:1:a7b:1::${m.id.slice(0, 4)}`,
    config: m.config,
    image_ref: { registry: "registry-1.docker.io", repository: m.config.image, tag: "" },
    created_at: m.createdAt,
    updated_at: m.updatedAt,
    events: [],
  });

  const setState = (m: Machine, state: MachineState): void => {
    m.state = state;
    m.updatedAt = now();
    for (const notify of [...m.waiters]) notify();
  };

  const later = (m: Machine, ms: number, run: () => void): void => {
    const timer = setTimeout(() => {
      m.timers.delete(timer);
      run();
    }, ms);
    m.timers.add(timer);
  };

  const boot = (m: Machine): void => {
    later(m, bootDelayMs / 2, () => {
      if (m.state !== "created" && m.state !== "stopped" && m.state !== "starting") return;
      setState(m, "starting");
      if (hang) return;
      later(m, bootDelayMs / 2, () => {
        if (m.state === "starting") setState(m, "started");
      });
    });
  };

  const emptyDir = (dir: string, mode: number): void => {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, mode);
  };

  const machineOf = (app: string, id: string): Machine => {
    const m = machines.get(id);
    if (!m || m.app !== app) throw new HttpFailure(404, "machine not found");
    return m;
  };

  const precondition = (m: Machine, what: string): never => {
    throw new HttpFailure(412, `failed_precondition: machine ${m.id} is ${m.state}, cannot ${what}`);
  };

  const validateConfig = (config: unknown): MachineConfig => {
    if (typeof config !== "object" || config === null || Array.isArray(config)) {
      throw new HttpFailure(400, "config is required");
    }
    const c = config as MachineConfig;
    if (typeof c.image !== "string" || c.image === "") throw new HttpFailure(400, "config.image is required");
    if (c.env !== undefined && !isStringRecord(c.env))
      throw new HttpFailure(400, "config.env must map strings to strings");
    if (c.metadata !== undefined && !isStringRecord(c.metadata)) {
      throw new HttpFailure(400, "config.metadata must map strings to strings");
    }
    if (c.guest !== undefined) {
      const { cpus, memory_mb } = c.guest;
      if (cpus !== undefined && (!Number.isInteger(cpus) || cpus < 1))
        throw new HttpFailure(400, "invalid guest.cpus");
      if (
        memory_mb !== undefined &&
        (!Number.isInteger(memory_mb) || memory_mb < 256 || memory_mb % 256 !== 0)
      ) {
        throw new HttpFailure(400, "guest.memory_mb must be a multiple of 256");
      }
    }
    for (const service of c.services ?? []) {
      if (service.protocol !== "tcp" && service.protocol !== "udp")
        throw new HttpFailure(400, "invalid service protocol");
      if (
        !Number.isInteger(service.internal_port) ||
        service.internal_port < 1 ||
        service.internal_port > 65535
      ) {
        throw new HttpFailure(400, "invalid service internal_port");
      }
    }
    return c;
  };

  const create = (app: string, body: Record<string, unknown>): Reply => {
    const config = validateConfig(body.config);
    if (body.region !== undefined && (typeof body.region !== "string" || !/^[a-z]{3}$/.test(body.region))) {
      throw new HttpFailure(400, `invalid region ${JSON.stringify(body.region)}`);
    }
    if (body.name !== undefined && typeof body.name !== "string") throw new HttpFailure(400, "invalid name");
    const id = newId();
    const dir = join(base, id);
    const m: Machine = {
      id,
      name: (body.name as string | undefined) ?? `machine-${id}`,
      app,
      region: (body.region as string | undefined) ?? "ams",
      state: "created",
      instanceId: randomBytes(13).toString("hex").toUpperCase(),
      config: JSON.parse(JSON.stringify(config)) as MachineConfig,
      createdAt: now(),
      updatedAt: now(),
      dir,
      fs: join(dir, "fs"),
      tmp: join(dir, "tmp"),
      resetOnStart: false,
      timers: new Set(),
      waiters: new Set(),
    };
    mkdirSync(m.fs, { recursive: true });
    mkdirSync(m.tmp, { recursive: true });
    chmodSync(m.tmp, 0o1777);
    machines.set(id, m);
    if (body.skip_launch !== true) boot(m);
    return { status: 200, body: view(m) };
  };

  const list = (app: string, query: URLSearchParams): Reply => {
    const wanted: [string, string][] = [];
    for (const [key, value] of query) if (key.startsWith("metadata.")) wanted.push([key.slice(9), value]);
    const region = query.get("region");
    const out = [...machines.values()]
      .filter((m) => m.app === app)
      .filter((m) => region === null || m.region === region)
      .filter((m) => wanted.every(([k, v]) => m.config.metadata?.[k] === v))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
      .map(view);
    return { status: 200, body: out };
  };

  const wait = (m: Machine, query: URLSearchParams, res: ServerResponse): Promise<Reply> => {
    const state = query.get("state") ?? "started";
    if (!WAIT_STATES.has(state)) throw new HttpFailure(400, `invalid state ${JSON.stringify(state)}`);
    const timeoutText = query.get("timeout") ?? "60";
    const seconds = Number(timeoutText);
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > 60) {
      throw new HttpFailure(400, "timeout must be a whole number of seconds between 1 and 60");
    }
    if (state === "stopped" && !query.get("instance_id")) {
      throw new HttpFailure(400, "instance_id is required when waiting for stopped");
    }
    if (m.state === state) return Promise.resolve({ status: 200, body: { ok: true } });
    return new Promise((resolve) => {
      const done = (reply: Reply): void => {
        clearTimeout(timer);
        m.waiters.delete(check);
        res.off("close", onClose);
        resolve(reply);
      };
      const check = (): void => {
        if (m.state === state) done({ status: 200, body: { ok: true } });
        else if (m.state === "destroyed") done({ status: 404, body: { error: "machine not found" } });
      };
      const onClose = (): void => {
        if (!res.writableFinished) done({ status: 499, body: { error: "client went away" } });
      };
      const timer = setTimeout(
        () => done({ status: 408, body: { error: `deadline_exceeded: machine did not reach ${state}` } }),
        seconds * 1000,
      );
      m.waiters.add(check);
      res.on("close", onClose);
    });
  };

  const exec = (m: Machine, body: Record<string, unknown>): Promise<Reply> => {
    if (m.state !== "started") precondition(m, "exec");
    const command = body.command;
    if (!Array.isArray(command) || command.length === 0 || !command.every((w) => typeof w === "string")) {
      throw new HttpFailure(400, "command must be a non-empty array of strings");
    }
    const argv = command as string[];
    if (argv.some((w) => w.includes("\0"))) throw new HttpFailure(400, "command contains a NUL byte");
    if (body.stdin !== undefined && typeof body.stdin !== "string")
      throw new HttpFailure(400, "stdin must be a string");
    const timeout = body.timeout ?? 60;
    if (typeof timeout !== "number" || !Number.isInteger(timeout) || timeout < 1) {
      throw new HttpFailure(400, "timeout must be a positive whole number of seconds");
    }
    if (!findProgram(argv[0]!, m.fs, hostPath)) {
      throw new HttpFailure(400, `exec: ${JSON.stringify(argv[0])}: executable file not found in $PATH`);
    }
    const env: Record<string, string> = {
      PATH: hostPath,
      HOME: m.fs,
      LANG: "C.UTF-8",
      FLY_APP_NAME: m.app,
      FLY_MACHINE_ID: m.id,
      FLY_REGION: m.region,
      FLY_IMAGE_REF: m.config.image,
    };
    const [file, args]: [string, string[]] =
      isolation === "unshare"
        ? ["unshare", ["-m", "--", "sh", "-c", UNSHARE_ENTER, "sh", m.tmp, m.fs, ...argv]]
        : isolation === "bwrap"
          ? ["bwrap", ["--dev-bind", "/", "/", "--bind", m.tmp, "/tmp", "--chdir", m.fs, "--", ...argv]]
          : [argv[0]!, argv.slice(1)];
    return new Promise((resolve) => {
      const child = spawn(file, args, { cwd: m.fs, env, detached: true, stdio: ["pipe", "pipe", "pipe"] });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let timedOut = false;
      child.stdout.on("data", (b: Buffer) => out.push(b));
      child.stderr.on("data", (b: Buffer) => err.push(b));
      child.stdin.on("error", () => {});
      child.stdin.end(typeof body.stdin === "string" ? body.stdin : undefined);
      const timer = setTimeout(() => {
        timedOut = true;
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          // Already gone.
        }
      }, timeout * 1000);
      child.on("error", (error) => {
        clearTimeout(timer);
        resolve({ status: 500, body: { error: `exec failed: ${error.message}` } });
      });
      child.on("close", (code, signal) => {
        clearTimeout(timer);
        if (timedOut) {
          resolve({ status: 408, body: { error: `deadline_exceeded: command ran longer than ${timeout}s` } });
          return;
        }
        const reply: Record<string, unknown> = {
          stdout: Buffer.concat(out).toString("utf8"),
          stderr: Buffer.concat(err).toString("utf8"),
          exit_code: code ?? -1,
        };
        if (signal) reply.exit_signal = osConstants.signals[signal];
        resolve({ status: 200, body: reply });
      });
    });
  };

  const stop = (m: Machine): Reply => {
    if (m.state === "stopped" || m.state === "created") return { status: 200, body: { ok: true } };
    if (m.state === "destroying" || m.state === "stopping") precondition(m, "stop");
    for (const timer of m.timers) clearTimeout(timer);
    m.timers.clear();
    setState(m, "stopping");
    void killMachine(m.id).then(() => {
      if (m.state !== "stopping") return;
      m.resetOnStart = true;
      setState(m, "stopped");
    });
    return { status: 200, body: { ok: true } };
  };

  const suspend = (m: Machine): Reply => {
    if (m.state === "suspended") return { status: 200, body: { ok: true } };
    if (m.state !== "started") precondition(m, "suspend");
    setState(m, "suspending");
    // Twice, for processes forked while the first round was sent.
    signalAll(pidsOfMachine(m.id), "SIGSTOP");
    signalAll(pidsOfMachine(m.id), "SIGSTOP");
    later(m, 5, () => {
      if (m.state === "suspending") setState(m, "suspended");
    });
    return { status: 200, body: { ok: true } };
  };

  const start = (m: Machine): Reply => {
    const previous = m.state;
    if (previous === "started" || previous === "starting") {
      return { status: 200, body: { previous_state: previous, migrated: false, new_host: "" } };
    }
    if (previous === "suspended") {
      setState(m, "starting");
      signalAll(pidsOfMachine(m.id), "SIGCONT");
      later(m, 5, () => {
        if (m.state === "starting") setState(m, "started");
      });
    } else if (previous === "stopped" || previous === "created") {
      if (m.resetOnStart) {
        // Fly: "Stopped Machines that are restarted are completely reset to their original state".
        emptyDir(m.fs, 0o755);
        emptyDir(m.tmp, 0o1777);
        m.resetOnStart = false;
      }
      boot(m);
    } else {
      precondition(m, "start");
    }
    return { status: 200, body: { previous_state: previous, migrated: false, new_host: "" } };
  };

  const destroy = async (m: Machine, query: URLSearchParams): Promise<Reply> => {
    const running = ["started", "starting", "stopping", "suspending"].includes(m.state);
    if (running && query.get("force") !== "true") {
      throw new HttpFailure(
        412,
        "failed_precondition: unable to destroy machine, not currently stopped or suspended",
      );
    }
    for (const timer of m.timers) clearTimeout(timer);
    m.timers.clear();
    setState(m, "destroying");
    await killMachine(m.id);
    rmSync(m.dir, { recursive: true, force: true });
    machines.delete(m.id);
    setState(m, "destroyed");
    return { status: 200, body: { ok: true } };
  };

  const route = (
    method: string,
    path: string,
  ): { route: FlyTestRoute | "unknown"; app?: string; id?: string } => {
    let match = /^\/v1\/apps\/([^/]+)\/machines$/.exec(path);
    if (match) {
      const app = decodeURIComponent(match[1]!);
      if (method === "GET") return { route: "list", app };
      if (method === "POST") return { route: "create", app };
      return { route: "unknown" };
    }
    match = /^\/v1\/apps\/([^/]+)\/machines\/([^/]+)$/.exec(path);
    if (match) {
      const app = decodeURIComponent(match[1]!);
      const id = decodeURIComponent(match[2]!);
      if (method === "GET") return { route: "get", app, id };
      if (method === "DELETE") return { route: "delete", app, id };
      return { route: "unknown" };
    }
    match = /^\/v1\/apps\/([^/]+)\/machines\/([^/]+)\/(wait|exec|stop|suspend|start)$/.exec(path);
    if (match) {
      const app = decodeURIComponent(match[1]!);
      const id = decodeURIComponent(match[2]!);
      const action = match[3] as "wait" | "exec" | "stop" | "suspend" | "start";
      const expected = action === "wait" ? "GET" : "POST";
      return method === expected ? { route: action, app, id } : { route: "unknown" };
    }
    return { route: "unknown" };
  };

  const takeFault = (name: FlyTestRoute | "unknown", phase: "before" | "after") => {
    const index = faults.findIndex((f) => f.route === name && f.phase === phase);
    if (index < 0) return undefined;
    const fault = faults[index]!;
    fault.times -= 1;
    if (fault.times <= 0) faults.splice(index, 1);
    return fault;
  };

  const faultReply = (fault: QueuedFault): Reply => ({
    status: fault.status,
    body: fault.body,
    ...(fault.retryAfter === undefined ? {} : { headers: { "Retry-After": fault.retryAfter } }),
  });

  const handle = async (
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<Reply & { routed: ReturnType<typeof route> }> => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const routed = route(req.method ?? "GET", url.pathname);
    if (req.headers.authorization !== `Bearer ${token}`) {
      return { routed, status: 401, body: { error: "You must be authenticated to view this." } };
    }
    if (routed.route === "unknown") return { routed, status: 404, body: { error: "404 page not found" } };
    const before = takeFault(routed.route, "before");
    if (before) return { routed, ...faultReply(before) };
    const app = routed.app!;
    if (!apps.has(app)) return { routed, status: 404, body: { error: `app ${app} not found` } };
    let body: Record<string, unknown> = {};
    if (req.method === "POST") {
      const text = await readBody(req);
      if (text.trim() !== "") {
        try {
          const parsed = JSON.parse(text) as unknown;
          if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
            throw new Error("not an object");
          body = parsed as Record<string, unknown>;
        } catch {
          throw new HttpFailure(400, "request body is not a JSON object");
        }
      }
    }
    let reply: Reply;
    switch (routed.route) {
      case "list":
        reply = list(app, url.searchParams);
        break;
      case "create":
        reply = create(app, body);
        break;
      case "get":
        reply = { status: 200, body: view(machineOf(app, routed.id!)) };
        break;
      case "wait":
        reply = await wait(machineOf(app, routed.id!), url.searchParams, res);
        break;
      case "exec":
        reply = await exec(machineOf(app, routed.id!), body);
        break;
      case "stop":
        reply = stop(machineOf(app, routed.id!));
        break;
      case "suspend":
        reply = suspend(machineOf(app, routed.id!));
        break;
      case "start":
        reply = start(machineOf(app, routed.id!));
        break;
      case "delete":
        reply = await destroy(machineOf(app, routed.id!), url.searchParams);
        break;
    }
    const after = takeFault(routed.route, "after");
    return { routed, ...(after ? faultReply(after) : reply) };
  };

  const injected = createHttpFaults();
  const api: Server = createServer((req, res) => {
    if (injected.intercept(req, res)) return;
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const record = (routed: ReturnType<typeof route>, status: number): void => {
      requests.push({
        route: routed.route,
        method: req.method ?? "GET",
        path: url.pathname,
        query: url.search,
        status,
        machineId: routed.id,
      });
    };
    handle(req, res).then(
      ({ routed, status, body, headers }) => {
        record(routed, status);
        if (res.destroyed) return;
        const text = typeof body === "string" ? body : JSON.stringify(body);
        res.writeHead(status, { "Content-Type": "application/json", ...(headers ?? {}) });
        res.end(text);
      },
      (error: unknown) => {
        const status = error instanceof HttpFailure ? error.status : 500;
        const message = error instanceof Error ? error.message : String(error);
        record(route(req.method ?? "GET", url.pathname), status);
        if (res.destroyed) return;
        res.writeHead(status, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ error: message }));
      },
    );
  });

  // The Fly Proxy stand-in: /{app}/{port}/rest goes to a started machine of the app that publishes
  // {port} in its services, at the service's internal port.
  const proxy: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const match = /^\/([^/]+)\/([0-9]+)(\/.*)?$/.exec(url.pathname);
    const target = match
      ? [...machines.values()]
          .filter((m) => m.app === decodeURIComponent(match[1]!) && m.state === "started")
          .flatMap((m) => m.config.services ?? [])
          .find((s) => s.protocol === "tcp" && (s.ports ?? []).some((p) => p.port === Number(match[2])))
      : undefined;
    if (!match || !target) {
      res.writeHead(503, { "Content-Type": "text/plain" });
      res.end("no started machine publishes this port");
      return;
    }
    const upstream = httpRequest(
      {
        host: "127.0.0.1",
        port: target.internal_port,
        method: req.method,
        path: `${match[3] ?? "/"}${url.search}`,
        headers: { ...req.headers, host: `127.0.0.1:${target.internal_port}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", (error) => {
      if (res.headersSent) return res.destroy();
      res.writeHead(502, { "Content-Type": "text/plain" });
      res.end(`proxy: ${error.message}`);
    });
    req.pipe(upstream);
  });

  const listen = (server: Server): Promise<number> =>
    new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port));
    });
  const apiPort = await listen(api);
  const proxyPort = await listen(proxy);

  const closeServer = (server: Server): Promise<void> =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });

  return {
    url: `http://127.0.0.1:${apiPort}`,
    token,
    app: [...apps][0]!,
    requests,
    isolation,
    proxyUrl: (app, port) => `http://127.0.0.1:${proxyPort}/${encodeURIComponent(app)}/${port}`,
    fail(fault) {
      faults.push({
        route: fault.route,
        status: fault.status,
        times: fault.times ?? 1,
        body: fault.body ?? JSON.stringify({ error: `injected ${fault.status}` }),
        phase: fault.phase ?? "before",
        ...(fault.retryAfter === undefined ? {} : { retryAfter: fault.retryAfter }),
      });
    },
    clearFaults() {
      faults.length = 0;
    },
    hangBoots(value) {
      hang = value;
    },
    machineIds: () => [...machines.keys()],
    machineDir: (id) => machines.get(id)?.fs,
    machinePids: (id) => pidsOfMachine(id),
    faultInjection: injected.faults,
    async close() {
      if (closed) return;
      closed = true;
      for (const m of machines.values()) {
        for (const timer of m.timers) clearTimeout(timer);
        await killMachine(m.id);
      }
      machines.clear();
      await Promise.all([closeServer(api), closeServer(proxy)]);
      rmSync(base, { recursive: true, force: true });
    },
  };
}
