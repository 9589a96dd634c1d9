import type { NetworkApi, Sandbox } from "@sbox/core";
import type { EgressPolicy } from "@sbox/core/spec";
import { ConformanceFailure, check, show } from "../assertions.js";
import type { ConformanceCase } from "../conformance-case.js";
import type { HostServer } from "../host-server.js";
import { findHostAddress, probeHost } from "./host-reach.js";

/** Documentation address (TEST-NET-1, RFC 5737): never routed, so an allow-list naming it allows nothing real. */
const UNROUTED_ADDRESS = "192.0.2.1";

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
  const outcome = await probeHost(sandbox, server, address);
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
  const outcome = await probeHost(sandbox, server, address);
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
