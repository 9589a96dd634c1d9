import { spawn } from "node:child_process";
import { closeSync, constants, openSync } from "node:fs";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { localError } from "./local-errors.js";
import type { HostIdentity } from "./local-identity.js";
import { readProcStat } from "./local-procfs.js";

/**
 * A sandbox's exposed port on the host: a listening socket on the host's 127.0.0.1, made here (in the host's
 * network namespace), handed to a forwarder process that lives in the sandbox's network namespace and
 * connects each accepted connection to the sandbox's own loopback. So a server bound to 127.0.0.1 inside is
 * reachable, as one bound to 0.0.0.0 is (real sandbox services forward to loopback too), and nothing of the
 * host is opened to the sandbox: the forwarder only accepts on the host socket and connects inside.
 *
 * The forwarder is node itself (`node -e`, the program running this provider), entered into the namespace
 * by `nsenter`; as root it drops to `nobody` before it starts (a host-root process, even without
 * capabilities, owns `/proc/sys`). It gets the listening socket over node's IPC channel, then the channel
 * is closed. A connection to a port nothing listens on is reset at once. The forwarder ends with the
 * sandbox's holder (it reads the holder's FIFO, which hangs up when the last holder process is gone), or
 * when the port is unexposed or the network stops.
 */
const FORWARDER_SOURCE = `
"use strict";
const net = require("node:net");
const fs = require("node:fs");
const port = Number(process.argv[1]);
for (const fd of [4, 5]) { try { fs.closeSync(fd); } catch {} }
let alive;
try {
  alive = new net.Socket({ fd: 3, readable: true, writable: false });
  for (const event of ["end", "close", "error"]) alive.on(event, () => process.exit(0));
  alive.resume();
} catch {}
function connectInside(client, hosts) {
  const upstream = net.connect({ host: hosts[0], port, allowHalfOpen: true });
  upstream.setTimeout(10000, () => upstream.destroy(new Error("timeout")));
  upstream.once("connect", () => {
    upstream.setTimeout(0);
    client.pipe(upstream);
    upstream.pipe(client);
    client.resume();
  });
  upstream.once("error", (error) => {
    if (!upstream.connecting && upstream.bytesRead + upstream.bytesWritten > 0) return client.destroy();
    if (error.code === "ECONNREFUSED" && hosts.length > 1) return connectInside(client, hosts.slice(1));
    if (!client.destroyed) client.resetAndDestroy();
  });
  client.on("error", () => upstream.destroy());
  client.on("close", () => upstream.destroy());
  upstream.on("close", () => { if (!client.destroyed) client.destroySoon(); });
}
process.on("message", (message, server) => {
  if (message !== "server" || !server) return;
  server.allowHalfOpen = true;
  server.on("connection", (client) => {
    client.pause();
    connectInside(client, ["127.0.0.1", "::1"]);
  });
  server.on("error", () => process.exit(1));
  process.send("ready", () => process.disconnect());
});
`;

/** The user a root host's forwarder runs as (`nobody`). */
const FORWARDER_UID = 65534;
const READY_TIMEOUT_MS = 10_000;

/** Where a running sandbox network's forwarders are, and how to enter its namespace. */
export interface PortForwardTarget {
  /** Host pid of a process in the sandbox's network (and, unprivileged, user) namespace. */
  readonly anchor: number;
  /** `<sandbox>/net`: the holder's FIFO, and `ports/<port>.json` for each forwarder. */
  readonly netDir: string;
  readonly identity: HostIdentity;
}

interface ForwarderRecord {
  readonly pid: number;
  readonly startTime: number;
}

const recordFile = (netDir: string, port: number) => join(netDir, "ports", `${port}.json`);

async function liveForwarder(netDir: string, port: number): Promise<ForwarderRecord | undefined> {
  let record: ForwarderRecord;
  try {
    record = JSON.parse(await readFile(recordFile(netDir, port), "utf8")) as ForwarderRecord;
  } catch {
    return undefined;
  }
  const stat = await readProcStat(record.pid);
  return stat && stat.startTime === record.startTime && stat.state !== "Z" ? record : undefined;
}

/** Starts of forwarders under way in this program, so concurrent exposes of one port start one. */
const starting = new Map<string, Promise<void>>();

/** Forwards 127.0.0.1:`port` on the host to the sandbox's own 127.0.0.1:`port` (or `[::1]`). */
export function startPortForward(target: PortForwardTarget, port: number): Promise<void> {
  const key = recordFile(target.netDir, port);
  const pending = starting.get(key);
  if (pending) return pending;
  const started = startOnce(target, port).finally(() => starting.delete(key));
  starting.set(key, started);
  return started;
}

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", (error: NodeJS.ErrnoException) => {
      reject(
        localError(
          "Conflict",
          `cannot expose port ${port} on the host's 127.0.0.1: ${error.code === "EADDRINUSE" ? "another program listens there" : error.message}`,
          error,
        ),
      );
    });
    server.listen({ host: "127.0.0.1", port, exclusive: true }, () => resolve(server));
  });
}

async function startOnce(target: PortForwardTarget, port: number): Promise<void> {
  if (await liveForwarder(target.netDir, port)) return;
  const server = await listen(port);
  const netnsFd = openSync(`/proc/${target.anchor}/ns/net`, "r");
  const usernsFd = target.identity.root ? undefined : openSync(`/proc/${target.anchor}/ns/user`, "r");
  let aliveFd: number | undefined;
  try {
    aliveFd = openSync(join(target.netDir, "alive"), constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    aliveFd = undefined; // a holder without the FIFO: the forwarder is stopped explicitly only
  }
  const enter = target.identity.root
    ? ["--net=/proc/self/fd/4", `--setuid=${FORWARDER_UID}`, `--setgid=${FORWARDER_UID}`]
    : ["--preserve-credentials", "--user=/proc/self/fd/5", "--net=/proc/self/fd/4"];
  const child = spawn("nsenter", [...enter, "--", process.execPath, "-e", FORWARDER_SOURCE, String(port)], {
    stdio: ["ignore", "ignore", "ignore", aliveFd ?? "ignore", netnsFd, usernsFd ?? "ignore", "ipc"],
    detached: true,
    cwd: "/",
    env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" },
  });
  closeSync(netnsFd);
  if (usernsFd !== undefined) closeSync(usernsFd);
  if (aliveFd !== undefined) closeSync(aliveFd);
  const kill = () => {
    try {
      if (child.pid) process.kill(child.pid, "SIGKILL");
    } catch {
      // gone
    }
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(localError("Provider", `the forwarder of port ${port} did not start`)),
        READY_TIMEOUT_MS,
      );
      child.once("error", (error) => {
        clearTimeout(timer);
        reject(localError("Provider", `cannot start the forwarder of port ${port}: ${error.message}`, error));
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(localError("Provider", `the forwarder of port ${port} exited at once (${String(code)})`));
      });
      child.on("message", (message) => {
        if (message !== "ready") return;
        clearTimeout(timer);
        resolve();
      });
      child.once("spawn", () => child.send("server", server));
    });
    const stat = child.pid === undefined ? undefined : await readProcStat(child.pid);
    if (!stat || child.pid === undefined) throw localError("Provider", `the forwarder of port ${port} ended`);
    await mkdir(join(target.netDir, "ports"), { recursive: true, mode: 0o700 });
    const record: ForwarderRecord = { pid: child.pid, startTime: stat.startTime };
    await writeFile(recordFile(target.netDir, port), JSON.stringify(record), { mode: 0o600 });
  } catch (error) {
    kill();
    throw error;
  } finally {
    server.close();
    child.removeAllListeners("exit");
    child.on("error", () => {});
    if (child.connected) child.disconnect();
    child.unref();
  }
}

/** Stops the forwarder of `port` (it may be gone already). */
export async function stopPortForward(netDir: string, port: number): Promise<void> {
  const record = await liveForwarder(netDir, port);
  if (record) {
    try {
      process.kill(record.pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
  await rm(recordFile(netDir, port), { force: true });
}

/** Stops every forwarder of a sandbox's network. */
export async function stopPortForwards(netDir: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(join(netDir, "ports"));
  } catch {
    return;
  }
  for (const name of names) {
    const port = Number(/^(\d+)\.json$/.exec(name)?.[1]);
    if (Number.isInteger(port)) await stopPortForward(netDir, port);
  }
}
