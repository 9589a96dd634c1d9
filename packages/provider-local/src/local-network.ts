import { spawn, spawnSync } from "node:child_process";
import { accessSync, closeSync, constants, existsSync, openSync } from "node:fs";
import { createConnection } from "node:net";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { localError } from "./local-errors.js";
import { type HostIdentity, hostIdentity } from "./local-identity.js";
import { startPortForward, stopPortForward, stopPortForwards } from "./local-port-forward.js";
import { readProcStat } from "./local-procfs.js";
import { startBoundMs } from "./local-start-wait.js";
import { systemDirectoryArgs } from "./local-view.js";

/**
 * The user-mode network stack: slirp4netns. It is chosen over pasta because it attaches to a namespace held
 * by root and opens the tap device itself (pasta drops to `nobody` before it attaches, so a root host with a
 * root-only `/dev/net/tun` cannot use it), because the host's loopback is a documented switch
 * (`--disable-host-loopback`), because port forwards can be added and removed while it runs (its API socket,
 * which `ports.expose` maps onto, binding 127.0.0.1 only), and because it confines itself
 * (`--enable-sandbox`, `--enable-seccomp`). Its CLI has been stable since 2019.
 */
export type NetworkSupport =
  | { readonly kind: "slirp4netns"; readonly slirp: string; readonly ip: string | undefined }
  | { readonly kind: "host"; readonly reason: string };

/** Where the sandbox's own resolver is (slirp4netns's DNS forwarder). */
export const SANDBOX_DNS = "10.0.2.3";
/** The host's loopback, as the sandbox reaches it when `hostLoopback` opens it. */
export const HOST_LOOPBACK_GATEWAY = "10.0.2.2";

function findExecutable(name: string, dirs: readonly string[]): string | undefined {
  for (const dir of dirs) {
    const path = join(dir, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // next
    }
  }
  return undefined;
}

const SYSTEM_BIN = ["/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"];
let support: NetworkSupport | undefined;

/** Whether sandboxes get a user-mode network here, decided once. */
export function networkSupport(identity: HostIdentity): NetworkSupport {
  if (support) return support;
  const slirp = findExecutable("slirp4netns", SYSTEM_BIN);
  if (!slirp)
    support = { kind: "host", reason: "slirp4netns is not installed (apt-get install slirp4netns)" };
  else if (!existsSync("/dev/net/tun")) support = { kind: "host", reason: "/dev/net/tun does not exist" };
  else {
    let usable = identity.root;
    if (!usable) {
      try {
        closeSync(openSync("/dev/net/tun", "r+"));
        usable = true;
      } catch {
        usable = false;
      }
    }
    support = usable
      ? { kind: "slirp4netns", slirp, ip: findExecutable("ip", SYSTEM_BIN) }
      : { kind: "host", reason: "/dev/net/tun cannot be opened by this user" };
  }
  return support;
}

/** How to get a user-mode network stack where there is none, for each reason `networkSupport` gives. */
function enableHint(reason: string): string {
  if (reason.includes("slirp4netns")) return "install slirp4netns (apt-get install slirp4netns)";
  if (reason.includes("does not exist"))
    return "load the tun module (modprobe tun) or give the container /dev/net/tun";
  return "give this user read and write access to /dev/net/tun (most distributions make it mode 0666)";
}

/**
 * The error for `allow-all` where no user-mode network stack is usable and the provider was not told that
 * sharing the host's network is acceptable: the network fails closed, never open.
 */
export function noNetworkError(reason: string, operation: string): Error {
  return localError(
    "NotSupported",
    `${operation}: egress "allow-all" needs a user-mode network stack for the sandbox, and none is usable here (${reason}). ` +
      `To enable it, ${enableHint(reason)}. Otherwise use egress "block-all", or let sandboxes share the host's network ` +
      "(every host service, loopback included, reachable) with local({ network: { hostNetwork: true } })",
  );
}

/**
 * The host's own addresses (every interface, IPv4), which no sandbox may reach through the user-mode stack:
 * a service bound to 0.0.0.0 on the host would answer on them. Link-local space (cloud metadata) too.
 */
export function hostAddressBlocks(): string[] {
  const blocks = new Set<string>(["169.254.0.0/16"]);
  for (const addresses of Object.values(networkInterfaces())) {
    for (const address of addresses ?? []) {
      if (address.family === "IPv4" && !address.internal) blocks.add(`${address.address}/32`);
    }
  }
  return [...blocks];
}

/** A running network stack of a sandbox. */
export interface NetworkRecord {
  readonly pid: number;
  readonly startTime: number | undefined;
  /** slirp4netns's API socket on the host. */
  readonly api: string;
  /**
   * Host pid of a process in the sandbox's network namespace and the sandbox's `net` directory, where
   * exposed ports' forwarders are entered from and recorded (absent in records of earlier versions, whose
   * ports slirp4netns forwards to the sandbox's address).
   */
  readonly anchor?: number | undefined;
  readonly dir?: string | undefined;
}

/** What starting a sandbox's network needs. */
export interface NetworkStart {
  readonly support: Extract<NetworkSupport, { kind: "slirp4netns" }>;
  readonly identity: HostIdentity;
  readonly bwrapPath: string;
  /** Host pid of a process in the sandbox's network (and, unprivileged, user) namespace. */
  readonly anchor: number;
  /** `<sandbox>/net`: the API socket and the log. */
  readonly dir: string;
  readonly hostLoopback: boolean;
  readonly tags: Record<string, string>;
}

/** The FIFO the sandbox's holder keeps open, in `<sandbox>/net`: see `startNetwork`. */
export function aliveFifo(netDir: string): string {
  return join(netDir, "alive");
}

/**
 * The jail slirp4netns runs in when it must run as root (to open a root-only tun device): nothing of the host
 * but the system directories and `resolv.conf`, its own PID namespace, only the capabilities it needs to
 * attach (it drops them itself once attached, with `--enable-sandbox`), and no `/run`, so no daemon socket.
 */
function rootJailArgs(bwrapPath: string, dir: string): string[] {
  const args = [bwrapPath, "--unshare-pid", "--unshare-ipc", "--unshare-uts", ...systemDirectoryArgs()];
  for (const path of ["/etc/resolv.conf", "/etc/ld.so.cache", "/etc/nsswitch.conf", "/etc/hosts"]) {
    if (existsSync(path)) args.push("--ro-bind", path, path);
  }
  args.push("--proc", "/proc", "--dev", "/dev", "--dev-bind", "/dev/net/tun", "/dev/net/tun");
  args.push("--tmpfs", "/tmp", "--tmpfs", "/run", "--bind", dir, "/net");
  // slirp4netns's own sandbox keeps CAP_NET_BIND_SERVICE and needs CAP_SETPCAP to drop the rest.
  args.push("--cap-drop", "ALL");
  for (const capability of ["CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE"]) {
    args.push("--cap-add", capability);
  }
  args.push("--info-fd", "5", "--");
  return args;
}

function readPipe(stream: NodeJS.ReadableStream | null, until: (text: string) => boolean): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    if (!stream) return resolve(text);
    const timer = setTimeout(() => resolve(text), startBoundMs());
    stream.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
      if (until(text)) {
        clearTimeout(timer);
        resolve(text);
      }
    });
    stream.on("end", () => {
      clearTimeout(timer);
      resolve(text);
    });
    stream.on("error", () => {});
  });
}

/** Starts slirp4netns for a sandbox's network namespace, blocks the host's addresses in it, waits until ready. */
export async function startNetwork(start: NetworkStart): Promise<NetworkRecord> {
  const api = join(start.dir, "api.sock");
  const log = openSync(join(start.dir, "slirp.log"), "a", 0o600);
  const slirpArgs = (netns: string, userns: string | undefined, apiPath: string) => [
    "--configure",
    "--mtu=65520",
    ...(start.hostLoopback ? [] : ["--disable-host-loopback"]),
    "--enable-sandbox",
    "--enable-seccomp",
    "--ready-fd=4",
    `--api-socket=${apiPath}`,
    "--netns-type=path",
    ...(userns ? [`--userns-path=${userns}`] : []),
    netns,
    "tap0",
  ];
  const netnsFd = openSync(`/proc/${start.anchor}/ns/net`, "r");
  const usernsFd = start.identity.root ? undefined : openSync(`/proc/${start.anchor}/ns/user`, "r");
  // The reading end of the holder's FIFO: it hangs up when the last holder process is gone.
  let exitFd: number | undefined;
  try {
    exitFd = openSync(aliveFifo(start.dir), constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    exitFd = undefined; // a holder started by an earlier version: stopped explicitly only
  }
  const exit = exitFd === undefined ? [] : ["--exit-fd=7"];
  let argv: string[];
  if (start.identity.root) {
    argv = [
      ...rootJailArgs(start.bwrapPath, start.dir),
      start.support.slirp,
      ...exit,
      ...slirpArgs("/proc/self/fd/3", undefined, "/net/api.sock"),
    ];
  } else {
    argv = [start.support.slirp, ...exit, ...slirpArgs("/proc/self/fd/3", "/proc/self/fd/6", api)];
  }
  const child = spawn(argv[0]!, argv.slice(1), {
    stdio: ["ignore", log, log, netnsFd, "pipe", "pipe", usernsFd ?? "ignore", exitFd ?? "ignore"],
    detached: true,
    env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", ...start.tags },
    cwd: "/",
  });
  child.on("error", () => {});
  closeSync(log);
  closeSync(netnsFd);
  if (usernsFd !== undefined) closeSync(usernsFd);
  if (exitFd !== undefined) closeSync(exitFd);
  const pipes = child.stdio as unknown as (NodeJS.ReadableStream | null)[];
  const ready = readPipe(pipes[4] ?? null, (text) => text.includes("1"));
  const info = start.identity.root
    ? readPipe(pipes[5] ?? null, (text) => text.includes("}"))
    : Promise.resolve("");
  const [readyText, infoText] = await Promise.all([ready, info]);
  child.unref();
  // As root the process to keep is the jail's init (killing it ends slirp4netns with it).
  const jailPid = /"child-pid":\s*(\d+)/.exec(infoText)?.[1];
  const pid = start.identity.root ? Number(jailPid) : child.pid!;
  if (!readyText.includes("1") || !Number.isInteger(pid)) {
    if (child.pid) {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // gone
      }
    }
    throw localError("Provider", `slirp4netns did not start (see ${join(start.dir, "slirp.log")})`);
  }
  const record: NetworkRecord = {
    pid,
    startTime: (await readProcStat(pid))?.startTime,
    api,
    anchor: start.anchor,
    dir: start.dir,
  };
  if (start.support.ip) blockHostAddresses(start, start.support.ip);
  return record;
}

/**
 * Routes every host address to "unreachable" inside the sandbox's network namespace: slirp4netns would
 * otherwise connect to them from the host. The sandbox user has no capability in that namespace, so it
 * cannot take the routes away.
 */
function blockHostAddresses(start: NetworkStart, ip: string): void {
  const routes = hostAddressBlocks().map((block) => `route replace unreachable ${block}`);
  const enter = start.identity.root
    ? ["--net=/proc/self/fd/3"]
    : ["--preserve-credentials", "--user=/proc/self/fd/4", "--net=/proc/self/fd/3"];
  const netnsFd = openSync(`/proc/${start.anchor}/ns/net`, "r");
  const usernsFd = start.identity.root ? undefined : openSync(`/proc/${start.anchor}/ns/user`, "r");
  try {
    const result = spawnSync("nsenter", [...enter, "--", ip, "-batch", "-"], {
      input: `${routes.join("\n")}\n`,
      stdio: ["pipe", "ignore", "pipe", netnsFd, usernsFd ?? "ignore"],
      timeout: 10_000,
      env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" },
    });
    if (result.status !== 0) {
      throw localError(
        "Provider",
        `cannot block the host's addresses in the sandbox's network: ${result.stderr?.toString().trim() || result.error?.message}`,
      );
    }
  } finally {
    closeSync(netnsFd);
    if (usernsFd !== undefined) closeSync(usernsFd);
  }
}

/** Stops a sandbox's network stack (it may be gone already), its ports' forwarders first. */
export async function stopNetwork(record: NetworkRecord): Promise<void> {
  if (record.dir) await stopPortForwards(record.dir);
  const stat = await readProcStat(record.pid);
  if (!stat || (record.startTime !== undefined && stat.startTime !== record.startTime)) return;
  try {
    process.kill(record.pid, "SIGKILL");
  } catch {
    return;
  }
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const now = await readProcStat(record.pid);
    if (!now || now.state === "Z" || now.startTime !== stat.startTime) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw localError("Provider", `the network stack of the sandbox (pid ${record.pid}) survived SIGKILL`);
}

/** One request to slirp4netns's API socket. */
function slirpRequest(api: string, request: unknown): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(api);
    let text = "";
    const timer = setTimeout(() => {
      socket.destroy();
      reject(localError("Timeout", "the sandbox's network stack did not answer"));
    }, 5_000);
    socket.on("connect", () => socket.end(JSON.stringify(request)));
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
    });
    socket.on("error", (error) => {
      clearTimeout(timer);
      reject(localError("Provider", `cannot reach the sandbox's network stack: ${error.message}`, error));
    });
    socket.on("close", () => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(text) as Record<string, unknown>);
      } catch (error) {
        reject(localError("Provider", `the sandbox's network stack answered ${JSON.stringify(text)}`, error));
      }
    });
  });
}

/**
 * Forwards 127.0.0.1:`port` on the host to the same port of the sandbox's own loopback (see
 * local-port-forward.ts), or, for a stack recorded by an earlier version, through slirp4netns to the
 * sandbox's address.
 */
export async function addPortForward(record: NetworkRecord, port: number): Promise<void> {
  if (record.anchor !== undefined && record.dir !== undefined) {
    return startPortForward({ anchor: record.anchor, netDir: record.dir, identity: hostIdentity() }, port);
  }
  if ((await listPortForwards(record)).some((forward) => forward.port === port)) return;
  const answer = await slirpRequest(record.api, {
    execute: "add_hostfwd",
    arguments: { proto: "tcp", host_addr: "127.0.0.1", host_port: port, guest_port: port },
  });
  const error = answer.error as { desc?: string } | undefined;
  if (error) {
    throw localError(
      "Conflict",
      `cannot expose port ${port} on the host's 127.0.0.1: ${error.desc ?? "refused"}`,
    );
  }
}

/** The forwards slirp4netns has, with their ids. */
async function listPortForwards(record: NetworkRecord): Promise<{ id: number; port: number }[]> {
  const answer = await slirpRequest(record.api, { execute: "list_hostfwd" });
  // slirp4netns answers this one with `entries` at the top level (the others under `return`).
  const listed = (answer.entries ?? (answer.return as { entries?: unknown[] } | undefined)?.entries) as
    | unknown[]
    | undefined;
  const entries = (listed ?? []) as {
    id: number;
    host_port: number;
  }[];
  return entries.map((entry) => ({ id: entry.id, port: entry.host_port }));
}

/** Stops forwarding `port`. */
export async function removePortForward(record: NetworkRecord, port: number): Promise<void> {
  if (record.dir !== undefined) await stopPortForward(record.dir, port);
  for (const forward of await listPortForwards(record)) {
    if (forward.port !== port) continue;
    await slirpRequest(record.api, { execute: "remove_hostfwd", arguments: { id: forward.id } });
  }
}
