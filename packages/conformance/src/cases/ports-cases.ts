import { randomUUID } from "node:crypto";
import type { PortsApi, Sandbox, SandboxProcess } from "@sbox/core";
import { SandboxError } from "@sbox/core/spec";
import { ConformanceFailure, check, expectEqual, show, sleep } from "../assertions.js";
import type { ConformanceCase, ConformanceContext } from "../conformance-case.js";
import { HTTP_SERVE_SCRIPT, shArgs } from "../sandbox-scripts.js";
import { collectText } from "./case-helpers.js";

interface ServedSandbox {
  sandbox: Sandbox;
  ports: PortsApi;
  port: number;
  token: string;
  proc: SandboxProcess;
  /** Output of the server, for failure messages. */
  log(): string;
}

/** A port unlikely to be taken, in a range most providers allow. */
function randomPort(): number {
  return 20_000 + Math.floor(Math.random() * 10_000);
}

/**
 * Creates a sandbox (declaring the port at create when the provider wants ports declared), writes a token
 * file and serves it over HTTP from inside with python3, busybox httpd or node.
 */
async function serveToken(ctx: ConformanceContext): Promise<ServedSandbox> {
  const port = randomPort();
  const sandbox = await ctx.createSandbox(ctx.provider.honours.includes("ports") ? { ports: [port] } : {});
  return serveIn(ctx, sandbox, port);
}

/** Writes a fresh token file into `sandbox` and serves it on `port` from inside. */
async function serveIn(ctx: ConformanceContext, sandbox: Sandbox, port: number): Promise<ServedSandbox> {
  const ports = sandbox.ports;
  if (!ports) throw new ConformanceFailure("expected sandbox.ports to be defined (exposePort is supported)");
  const dir = await ctx.scratchDir(sandbox);
  const token = `sbox-conformance-${randomUUID()}`;
  await sandbox.files.write(`${dir}/conformance.txt`, token);
  const proc = await sandbox.commands.spawn(shArgs(HTTP_SERVE_SCRIPT, String(port), dir));
  let output = "";
  // Kept for failure messages only; the process is killed at the end, which may end these with an error.
  for (const stream of [proc.stdout, proc.stderr]) {
    collectText(stream).then(
      (text) => {
        output += text;
      },
      (error: unknown) => {
        output += ` [output ended with ${show(error)}]`;
      },
    );
  }
  ctx.defer(() => proc.kill().catch(() => {}));
  return { sandbox, ports, port, token, proc, log: () => output };
}

const NOT_SUPPORTED = Symbol("not supported");

/** Awaits an optional operation: its value, or NOT_SUPPORTED when it rejects with NotSupported. */
async function optional<T>(action: Promise<T>): Promise<T | typeof NOT_SUPPORTED> {
  try {
    return await action;
  } catch (error) {
    if (SandboxError.isInstance(error) && error.code === "NotSupported") return NOT_SUPPORTED;
    throw error;
  }
}

function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, "")}${path}`;
}

/** Fetches `url` until it answers 200 with `token` (up to `timeoutMs`); returns the last outcome. */
async function fetchUntil(
  url: string,
  token: string,
  timeoutMs: number,
  init?: RequestInit,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let last = "no attempt";
  while (Date.now() < deadline) {
    try {
      const response = await fetch(url, { ...init, signal: AbortSignal.timeout(4_000) });
      const body = await response.text();
      if (response.status === 200 && body === token) return "ok";
      last = `status ${response.status}, body ${show(body)}`;
    } catch (error) {
      last = show(error);
    }
    await sleep(300);
  }
  return last;
}

/** Exposed ports, private previews, proxied fetch. */
export function portsCases(): ConformanceCase[] {
  return [
    {
      id: "ports.expose.http",
      title:
        "ports.expose(port) returns a URL at which a server started inside the sandbox answers HTTP from this machine; list and unexpose agree",
      requires: ["exposePort", "background"],
      timeoutMs: 90_000,
      async run(ctx) {
        const served = await serveToken(ctx);
        const info = await served.ports.expose(served.port);
        expectEqual(info.port, served.port, "PortInfo.port");
        check(/^https?:\/\//.test(info.url), `expected an http(s) URL, got ${show(info.url)}`);
        const outcome = await fetchUntil(joinUrl(info.url, "/conformance.txt"), served.token, 30_000);
        if (outcome !== "ok") {
          throw new ConformanceFailure(
            `expected ${info.url}/conformance.txt to answer 200 with the token, last got ${outcome} (server output ${show(served.log())})`,
          );
        }
        // ports.list is optional in the spec: NotSupported is an honest answer.
        const listed = await optional(served.ports.list());
        if (listed !== NOT_SUPPORTED) {
          check(
            listed.some((p) => p.port === served.port),
            `expected ports.list() to include ${served.port}, got ${show(listed)}`,
          );
        }
        // unexpose is there only where the provider has it (Docker cannot unpublish a running container's port).
        if (!served.ports.unexpose) return;
        if ((await optional(served.ports.unexpose(served.port))) === NOT_SUPPORTED) return;
        const after = await optional(served.ports.list());
        if (after !== NOT_SUPPORTED) {
          check(
            !after.some((p) => p.port === served.port),
            `expected ports.list() not to include ${served.port} after unexpose, got ${show(after)}`,
          );
        }
      },
    },
    {
      id: "ports.expose.after-resume",
      title:
        "after stop and resume, ports.expose(port) returns a URL at which the sandbox's server answers again (not the address it had before the stop)",
      requires: ["exposePort", "background", "stop"],
      timeoutMs: 150_000,
      async run(ctx) {
        const before = await serveToken(ctx);
        const first = await before.ports.expose(before.port);
        const firstOutcome = await fetchUntil(joinUrl(first.url, "/conformance.txt"), before.token, 30_000);
        if (firstOutcome !== "ok") {
          throw new ConformanceFailure(
            `expected ${first.url}/conformance.txt to answer before the stop, last got ${firstOutcome} (server output ${show(before.log())})`,
          );
        }
        await before.sandbox.stop();
        await before.sandbox.resume();
        // Processes do not survive a stop: serve again, with a new token so an old answer cannot pass.
        const after = await serveIn(ctx, before.sandbox, before.port);
        const second = await after.ports.expose(after.port);
        const outcome = await fetchUntil(joinUrl(second.url, "/conformance.txt"), after.token, 30_000);
        if (outcome !== "ok") {
          throw new ConformanceFailure(
            `expected the URL ports.expose returned after stop and resume (${second.url}) to answer with the new token, last got ${outcome} (URL before the stop: ${first.url}; server output ${show(after.log())})`,
          );
        }
      },
    },
    {
      id: "ports.expose.private",
      title: "a private port comes with a token, and its URL does not serve the content without it",
      requires: ["exposePort", "privatePreview", "background"],
      timeoutMs: 90_000,
      async run(ctx) {
        const served = await serveToken(ctx);
        const info = await served.ports.expose(served.port, { private: true });
        check(
          typeof info.token === "string" && info.token.length > 0,
          `expected a non-empty token for a private port, got ${show(info.token)}`,
        );
        await sleep(2_000);
        const anonymous = await fetch(joinUrl(info.url, "/conformance.txt"), {
          signal: AbortSignal.timeout(5_000),
        }).then(
          async (r) => `${r.status} ${await r.text()}`,
          (error: unknown) => `error ${show(error)}`,
        );
        check(
          !anonymous.includes(served.token),
          `expected the private URL to refuse a request without the token, got ${show(anonymous)}`,
        );
      },
    },
    {
      id: "ports.fetch.proxied",
      title: "ports.fetch(port, path) reaches a server inside the sandbox through the provider",
      requires: ["exposePort", "proxiedFetch", "background"],
      timeoutMs: 90_000,
      async run(ctx) {
        const served = await serveToken(ctx);
        const deadline = Date.now() + 30_000;
        let last = "no attempt";
        while (Date.now() < deadline) {
          try {
            if (!served.ports.fetch) {
              throw new ConformanceFailure(
                "expected sandbox.ports.fetch to be defined (proxiedFetch is supported)",
              );
            }
            const response = await served.ports.fetch(served.port, "/conformance.txt");
            const body = await response.text();
            if (response.status === 200 && body === served.token) return;
            last = `status ${response.status}, body ${show(body)}`;
          } catch (error) {
            last = show(error);
          }
          await sleep(300);
        }
        throw new ConformanceFailure(
          `expected ports.fetch to answer 200 with the token, last got ${last} (server output ${show(served.log())})`,
        );
      },
    },
  ];
}
