import type { NetworkApi, Sandbox } from "@sbox/core";
import { type EgressPolicy, SandboxError } from "@sbox/core/spec";
import { ConformanceFailure, check, show } from "../assertions.js";
import type { ConformanceCase, ConformanceContext } from "../conformance-case.js";
import type { HostServer } from "../host-server.js";
import { DEFAULT_GATEWAY_SCRIPT, HTTP_GET_SCRIPT, shArgs } from "../sandbox-scripts.js";

/** Documentation address (TEST-NET-1, RFC 5737): never routed, so an allow-list naming it allows nothing real. */
const UNROUTED_ADDRESS = "192.0.2.1";

interface Probe {
  reached: boolean;
  detail: string;
}

/** Asks for a fresh path on the host server from inside the sandbox; `reached` only when the server saw it. */
async function probe(sandbox: Sandbox, server: HostServer, address: string): Promise<Probe> {
  const path = server.newPath();
  const host = address.includes(":") && !address.startsWith("[") ? `[${address}]` : address;
  let detail: string;
  try {
    const result = await sandbox.commands.run(shArgs(HTTP_GET_SCRIPT, host, String(server.port), path), {
      timeoutMs: 30_000,
    });
    if (result.exitCode === 99) throw new ConformanceFailure(`cannot test egress: ${result.stderr.trim()}`);
    detail = `exit ${result.exitCode}${result.stderr ? `, stderr ${show(result.stderr.trim())}` : ""}`;
  } catch (error) {
    // A request that hangs until the time limit (a firewall that drops packets) did not get through.
    if (!(SandboxError.isInstance(error) && error.code === "Timeout")) throw error;
    detail = "no answer within 30 s";
  }
  return { reached: server.wasHit(path), detail };
}

/**
 * Finds an address at which this machine's test server is reachable from inside `sandbox` (egress must
 * be open): the addresses the test file gave, then 127.0.0.1, host.docker.internal, the default gateway.
 */
async function findHostAddress(
  ctx: ConformanceContext,
  sandbox: Sandbox,
  server: HostServer,
): Promise<string> {
  const gateway = (await sandbox.commands.run(["sh", "-c", DEFAULT_GATEWAY_SCRIPT])).stdout.trim();
  const candidates = [
    ...new Set([...ctx.hostAddresses, "127.0.0.1", "host.docker.internal", ...(gateway ? [gateway] : [])]),
  ];
  const tried: string[] = [];
  for (const address of candidates) {
    const outcome = await probe(sandbox, server, address);
    if (outcome.reached) return address;
    tried.push(`${address} (${outcome.detail})`);
  }
  throw new ConformanceFailure(
    `expected the host test server to be reachable from inside the sandbox with egress "allow-all" (tried ${tried.join(", ")}); ` +
      "pass hostAddresses to the kit if the host is reachable at another address",
  );
}

function networkOf(sandbox: Sandbox): NetworkApi {
  const network = sandbox.network;
  if (!network)
    throw new ConformanceFailure("expected sandbox.network to be defined (egressControl is supported)");
  return network;
}

async function expectBlocked(
  sandbox: Sandbox,
  server: HostServer,
  address: string,
  policy: string,
): Promise<void> {
  const outcome = await probe(sandbox, server, address);
  check(
    !outcome.reached,
    `expected egress ${policy} to block ${address}:${server.port}, but the request arrived (${outcome.detail})`,
  );
}

async function expectReached(
  sandbox: Sandbox,
  server: HostServer,
  address: string,
  policy: string,
): Promise<void> {
  const outcome = await probe(sandbox, server, address);
  check(
    outcome.reached,
    `expected egress ${policy} to let a request to ${address}:${server.port} through, it did not arrive (${outcome.detail})`,
  );
}

/** Egress control, tested only against a server this process started on this machine. */
export function networkCases(): ConformanceCase[] {
  return [
    {
      id: "network.egress.block-all",
      title:
        'setEgress("block-all") really blocks outbound traffic (to a server on the host), and "allow-all" opens it again',
      requires: ["egressControl"],
      timeoutMs: 120_000,
      async run(ctx) {
        const sandbox = await ctx.createSandbox();
        const network = networkOf(sandbox);
        const server = await ctx.hostServer();
        await network.setEgress("allow-all");
        const address = await findHostAddress(ctx, sandbox, server);
        await network.setEgress("block-all");
        await expectBlocked(sandbox, server, address, '"block-all"');
        await network.setEgress("allow-all");
        await expectReached(sandbox, server, address, '"allow-all" (after block-all)');
      },
    },
    {
      id: "network.egress.at-create",
      title:
        'a sandbox created with network { egress: "block-all" } cannot reach the host from its first command',
      requires: ["egressControl"],
      honours: ["network"],
      timeoutMs: 120_000,
      async run(ctx) {
        const server = await ctx.hostServer();
        const open = await ctx.createSandbox();
        await networkOf(open).setEgress("allow-all");
        const address = await findHostAddress(ctx, open, server);
        const closed = await ctx.createSandbox({ network: { egress: "block-all" } });
        await expectBlocked(closed, server, address, '"block-all" given at create');
      },
    },
    {
      id: "network.egress.allow-list",
      title:
        "an allow-list is enforced (the listed host answers, an unlisted one does not) or refused up front with Validation/NotSupported — never accepted and ignored",
      requires: ["egressControl"],
      timeoutMs: 120_000,
      async run(ctx) {
        const sandbox = await ctx.createSandbox();
        const network = networkOf(sandbox);
        const server = await ctx.hostServer();
        await network.setEgress("allow-all");
        const address = await findHostAddress(ctx, sandbox, server);
        const apply = async (policy: EgressPolicy): Promise<boolean> => {
          try {
            await network.setEgress(policy);
            return true;
          } catch (error) {
            const code = (error as { code?: unknown }).code;
            if (code === "Validation" || code === "NotSupported") return false;
            throw new ConformanceFailure(
              `expected setEgress(${show(policy)}) to work or reject with Validation/NotSupported, got ${show(error)}`,
            );
          }
        };
        if (!(await apply({ allow: [UNROUTED_ADDRESS] }))) return;
        await expectBlocked(sandbox, server, address, `{ allow: ["${UNROUTED_ADDRESS}"] }`);
        if (!(await apply({ allow: [address] }))) return;
        await expectReached(sandbox, server, address, `{ allow: ["${address}"] }`);
      },
    },
  ];
}
