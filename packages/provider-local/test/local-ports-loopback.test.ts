/**
 * An exposed port reaches the sandbox's own loopback (a server bound to 127.0.0.1 inside answers, as one
 * bound to 0.0.0.0 does), a port nothing listens on is refused at once, and the forwarders that carry the
 * connections are out of the sandbox's sight and end with the port, the network and the sandbox.
 */
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { connect } from "node:net";
import type { DriverSandbox } from "@sbox/core/spec";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalSandboxHandle } from "../src/index.js";
import {
  type AnyLocalProvider,
  call,
  destroyAll,
  eventually,
  providerFor,
  run,
  tempStateRoot,
} from "./helpers.js";

const state = tempStateRoot("ports-loopback");
afterAll(() => state.cleanup());

/** Resolves with how a TCP connection to 127.0.0.1:`port` ended and how long it took. */
function tcpOutcome(port: number): Promise<{ outcome: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    const done = (outcome: string) => {
      socket.destroy();
      resolve({ outcome, ms: Date.now() - started });
    };
    socket.setTimeout(10_000, () => done("hung"));
    socket.once("connect", () => socket.write("GET / HTTP/1.0\r\n\r\n"));
    socket.once("data", () => done("answered"));
    socket.once("error", (error: NodeJS.ErrnoException) => done(error.code ?? "error"));
    socket.once("end", () => done("closed"));
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("exposed ports reach the sandbox's loopback (bubblewrap, user-mode network)", () => {
  let provider: AnyLocalProvider;
  let sandbox: DriverSandbox<LocalSandboxHandle>;
  let userMode = false;

  beforeAll(async () => {
    provider = providerFor("bwrap", `${state.home}/bwrap`);
    sandbox = await provider
      .doCreate({ network: { egress: "allow-all" } }, call())
      .catch(() => undefined as never);
    if (sandbox) {
      const info = (await provider.doGetInfo(sandbox, call())).raw as { network: { mode: string } };
      userMode = info.network.mode === "user-mode";
    }
  });
  afterAll(() => destroyAll(provider));

  it("serves 0.0.0.0 and 127.0.0.1 listeners, refuses a port with none at once, and cleans up", async (context) => {
    if (!userMode) context.skip(); // without slirp4netns the sandbox shares the host's network: no forward
    const base = 21000 + Math.floor(Math.random() * 20000);
    const ports = { any: base, loopback: base + 1, none: base + 2 };
    const server = (bind: string, port: number) =>
      provider.doSpawn!(sandbox, {
        command: { argv: ["python3", "-m", "http.server", String(port), "--bind", bind] },
        signal: new AbortController().signal,
        onStdout: () => {},
        onStderr: () => {},
      });
    const servers = [await server("0.0.0.0", ports.any), await server("127.0.0.1", ports.loopback)];
    for (const port of Object.values(ports))
      await provider.doExposePort!(sandbox, port, { ...call(), private: false });
    for (const port of [ports.any, ports.loopback]) {
      const answered = await eventually(async () => {
        const response = await fetch(`http://127.0.0.1:${port}/`, {
          signal: AbortSignal.timeout(3_000),
        }).catch(() => undefined);
        return response?.status === 200;
      }, 15_000);
      expect(answered, `port ${port}`).toBe(true);
    }
    // Nothing listens: the connection is reset (or closed) at once, never left hanging.
    const refused = await tcpOutcome(ports.none);
    expect(["ECONNRESET", "closed", "ECONNREFUSED"]).toContain(refused.outcome);
    expect(refused.ms).toBeLessThan(2_000);

    // The forwarders: one per port, in the sandbox's network namespace, not the host root, unseen inside.
    const portsDir = `${sandbox.native.dir}/net/ports`;
    const forwarders = readdirSync(portsDir).map(
      (name) => (JSON.parse(readFileSync(`${portsDir}/${name}`, "utf8")) as { pid: number }).pid,
    );
    expect(forwarders).toHaveLength(3);
    const holder = JSON.parse(readFileSync(`${sandbox.native.dir}/holder.json`, "utf8")) as {
      anchor: { pid: number };
    };
    const sandboxNet = `/proc/${holder.anchor.pid}/ns/net`;
    for (const pid of forwarders) {
      expect(readlinkSync(`/proc/${pid}/ns/net`)).toBe(readlinkSync(sandboxNet));
      // As root it drops to nobody without capabilities; unprivileged it is this user, like the provider.
      if (process.getuid?.() === 0) {
        const status = readFileSync(`/proc/${pid}/status`, "utf8");
        expect(status).toMatch(/^Uid:\s+65534\s/m);
        expect(status).toMatch(/^CapEff:\s+0+$/m);
      }
    }
    const inside = await run(provider, sandbox, "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '");
    expect(inside.stdout).not.toContain("use strict");

    // Unexposed: the host port closes and its forwarder ends.
    await provider.doUnexposePort!(sandbox, ports.loopback, call());
    expect((await tcpOutcome(ports.loopback)).outcome).toBe("ECONNREFUSED");
    expect(await eventually(() => forwarders.filter(alive).length === 2, 5_000)).toBe(true);

    // Stopped: the holder and its network end, every forward with them; destroyed: nothing is left.
    await provider.doStop!(sandbox, call());
    expect((await tcpOutcome(ports.any)).outcome).toBe("ECONNREFUSED");
    expect(await eventually(() => forwarders.filter(alive).length === 0, 5_000)).toBe(true);
    for (const proc of servers) await proc.kill().catch(() => undefined);
    await provider.doDestroy(sandbox, call());
    expect(existsSync(sandbox.native.dir)).toBe(false);
    expect((await tcpOutcome(ports.any)).outcome).toBe("ECONNREFUSED");
  });
});
