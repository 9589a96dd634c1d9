import type { Sandbox } from "@sbox/core";
import { SandboxError } from "@sbox/core/spec";
import { ConformanceFailure, check, show, sleep } from "../assertions.js";
import type { ConformanceContext } from "../conformance-case.js";
import type { HostServer } from "../host-server.js";
import { DEFAULT_GATEWAY_SCRIPT, HTTP_GET_SCRIPT, runOk, shArgs } from "../sandbox-scripts.js";

/** Whether one request from inside a sandbox reached the host server, and what the client said. */
export interface HostProbe {
  reached: boolean;
  detail: string;
}

/** Asks for a fresh path on the host server from inside the sandbox; `reached` only when the server saw it. */
export async function probeHost(sandbox: Sandbox, server: HostServer, address: string): Promise<HostProbe> {
  const path = server.newPath();
  let detail: string;
  try {
    const result = await sandbox.commands.run(
      shArgs(HTTP_GET_SCRIPT, hostPart(address), String(server.port), path),
      {
        timeoutMs: 30_000,
      },
    );
    if (result.exitCode === 99) throw new ConformanceFailure(`cannot test egress: ${result.stderr.trim()}`);
    detail = `exit ${result.exitCode}${result.stderr ? `, stderr ${show(result.stderr.trim())}` : ""}`;
  } catch (error) {
    // A request that hangs until the time limit (a firewall that drops packets) did not get through.
    if (!(SandboxError.isInstance(error) && error.code === "Timeout")) throw error;
    detail = "no answer within 30 s";
  }
  return { reached: server.wasHit(path), detail };
}

/** An address as the host part of a URL (IPv6 in brackets). */
function hostPart(address: string): string {
  return address.includes(":") && !address.startsWith("[") ? `[${address}]` : address;
}

/**
 * Looks for an address at which this machine's test server is reachable from inside `sandbox`: the
 * addresses the test file gave, then 127.0.0.1, host.docker.internal, the default gateway. Returns the
 * first that works, or what was tried when none did (a sandbox without egress or without an HTTP client).
 */
export async function reachHost(
  ctx: ConformanceContext,
  sandbox: Sandbox,
  server: HostServer,
): Promise<{ address: string } | { tried: string }> {
  const gateway = (await sandbox.commands.run(["sh", "-c", DEFAULT_GATEWAY_SCRIPT])).stdout.trim();
  const candidates = [
    ...new Set([...ctx.hostAddresses, "127.0.0.1", "host.docker.internal", ...(gateway ? [gateway] : [])]),
  ];
  const tried: string[] = [];
  for (const address of candidates) {
    let outcome: HostProbe;
    try {
      outcome = await probeHost(sandbox, server, address);
    } catch (error) {
      if (error instanceof ConformanceFailure) return { tried: error.message };
      throw error;
    }
    if (outcome.reached) return { address };
    tried.push(`${address} (${outcome.detail})`);
  }
  return { tried: tried.join(", ") };
}

/**
 * Finds an address at which this machine's test server is reachable from inside `sandbox` (egress must
 * be open), or fails naming what was tried.
 */
export async function findHostAddress(
  ctx: ConformanceContext,
  sandbox: Sandbox,
  server: HostServer,
): Promise<string> {
  const found = await reachHost(ctx, sandbox, server);
  if ("address" in found) return found.address;
  throw new ConformanceFailure(
    `expected the host test server to be reachable from inside the sandbox with egress "allow-all" (tried ${found.tried}); ` +
      "pass hostAddresses to the kit if the host is reachable at another address",
  );
}

/**
 * Asks for "$4" on http://"$2":"$3" every 0.3 s with HTTP_GET_SCRIPT ("$1"), forever, ignoring SIGTERM,
 * SIGHUP and SIGINT as hostile code may: a process whose life is visible from outside the sandbox, on the
 * host server, even after the sandbox is gone, and that only a real kill ends.
 */
const HEARTBEAT_LOOP_SCRIPT =
  'trap "" TERM HUP INT; g="$1"; h="$2"; p="$3"; u="$4"; while :; do sh -c "$g" sh "$h" "$p" "$u" >/dev/null 2>&1; sleep 0.3 2>/dev/null || sleep 1; done';

/** Processes inside a sandbox that call the host server in a loop, each on its own path. */
export interface HostHeartbeat {
  /** The loops that were seen calling, by how they were started. */
  readonly beating: readonly string[];
  /** Fails unless no loop calls the host server any more: none 1 s after `what`, over 3 s. */
  expectStopped(what: string): Promise<void>;
}

/**
 * Starts heartbeat loops in `sandbox` and waits (up to 20 s) until they call the host server: one as a
 * background process where `background` is supported, one left running by a command that returned (a
 * provider may end such orphans when the command ends; then only the other one counts). Skips the case
 * when the host server cannot be reached from inside the sandbox, saying why.
 */
export async function startHostHeartbeat(ctx: ConformanceContext, sandbox: Sandbox): Promise<HostHeartbeat> {
  const server = await ctx.hostServer();
  const found = await reachHost(ctx, sandbox, server);
  if (!("address" in found)) {
    ctx.skip(
      `needs a server on this machine reachable from inside the sandbox to watch its processes from outside (tried ${found.tried}); pass hostAddresses`,
    );
  }
  const args = [HTTP_GET_SCRIPT, hostPart(found.address), String(server.port)];
  const paths = new Map<string, string>();
  if (ctx.capabilities.map.background !== "unsupported") {
    const path = server.newPath();
    await sandbox.commands.spawn(shArgs(HEARTBEAT_LOOP_SCRIPT, ...args, path));
    paths.set("a background process", path);
  }
  const orphan = server.newPath();
  await runOk(
    sandbox,
    shArgs(
      'l="$1"; shift; sh -c "$l" sh "$@" >/dev/null 2>&1 </dev/null &',
      HEARTBEAT_LOOP_SCRIPT,
      ...args,
      orphan,
    ),
    "starting a heartbeat loop left behind by its command",
  );
  paths.set("a process left behind by a command", orphan);
  const deadline = Date.now() + 20_000;
  const beats = () => [...paths].filter(([, path]) => server.hitCount(path) > 0).map(([how]) => how);
  while (beats().length < paths.size && Date.now() < deadline) await sleep(200);
  const beating = beats();
  if (ctx.capabilities.map.background !== "unsupported") {
    check(
      beating.includes("a background process"),
      "expected the background heartbeat loop to call the host server within 20 s",
    );
  }
  if (beating.length === 0) {
    ctx.skip(
      "no process of this sandbox outlives the command that started it, and background is unsupported",
    );
  }
  return {
    beating,
    async expectStopped(what) {
      await sleep(1_000);
      const before = new Map([...paths].map(([how, path]) => [how, server.hitCount(path)]));
      await sleep(3_000);
      const still = beating.filter((how) => server.hitCount(paths.get(how)!) !== before.get(how));
      if (still.length > 0) {
        throw new ConformanceFailure(
          `expected every process of the sandbox to be gone ${what}, but ${still.join(" and ")} still called the host server 1-4 s later`,
        );
      }
    },
  };
}
