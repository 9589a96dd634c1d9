import type { Sandbox } from "@sbox/core";
import { CAPABILITY_NAMES, type CapabilityName, type SandboxSpec } from "@sbox/core/spec";
import { check, expectEqual, expectRejects } from "../assertions.js";
import type { ConformanceCase, ConformanceContext } from "../conformance-case.js";
import { collectText, expectNoDriverCall, streamOf, utf8 } from "./case-helpers.js";
import { NAMESPACE_OF } from "./manifest-cases.js";

type Probe = (ctx: ConformanceContext, sandbox: Sandbox) => Promise<void>;

/** Capabilities without an entry point of their own: without them the core falls back to buffering. */
const DEGRADES: ReadonlySet<CapabilityName> = new Set(["streaming", "filesUpload"]);

/** Calls that must throw NotSupportedError before any provider call. */
const refuses =
  (
    what: string,
    call: (ctx: ConformanceContext, sandbox: Sandbox) => Promise<unknown> | PromiseLike<unknown>,
  ): Probe =>
  async (ctx, sandbox) => {
    await expectNoDriverCall(ctx, sandbox, what, () =>
      expectRejects(
        Promise.resolve().then(() => call(ctx, sandbox)),
        "NotSupported",
        what,
      ),
    );
  };

/** A create() with a field that needs the capability must be refused before `doCreate`. */
const refusesAtCreate =
  (field: string, spec: SandboxSpec): Probe =>
  async (ctx) => {
    const what = `create() with ${field}`;
    await expectNoDriverCall(ctx, undefined, what, () =>
      expectRejects(ctx.createSandbox(spec), ["Validation", "NotSupported"], what),
    );
  };

const first = async (iterable: AsyncIterable<unknown>): Promise<unknown> => {
  for await (const item of iterable) return item;
  return undefined;
};

/**
 * What a user observes when a capability is unsupported, beyond the gated namespace being undefined.
 * Capabilities the core always degrades gracefully (streaming, filesUpload) are checked to still work.
 */
const PROBES: Record<CapabilityName, Probe[]> = {
  list: [refuses("client.list()", (ctx) => first(ctx.client.list()))],
  stop: [refuses("stop()", (_, s) => s.stop())],
  pause: [refuses("pause()", (_, s) => s.pause())],
  setTimeout: [refuses("setTimeout(60000)", (_, s) => s.setTimeout(60_000))],
  streaming: [
    async (ctx) => {
      // Without streaming the output still arrives, whole, when the command ends.
      const sandbox = await ctx.sharedSandbox();
      const result = await sandbox.commands.run("printf a; printf b >&2");
      expectEqual(
        `${result.stdout}|${result.stderr}|${result.exitCode}`,
        "a|b|0",
        "stdout|stderr|exit without streaming",
      );
    },
  ],
  background: [
    refuses("commands.spawn()", (_, s) => s.commands.spawn("true")),
    refuses("commands.list()", (_, s) => s.commands.list()),
    refuses("commands.connect(1)", (_, s) => s.commands.connect(1)),
  ],
  killProcess: [refuses("commands.kill(1)", (_, s) => s.commands.kill(1))],
  stdin: [refuses('run("cat", { stdin })', (_, s) => s.commands.run("cat", { stdin: "x" }))],
  pty: [],
  filesWatch: [refuses("files.watch()", (_, s) => s.files.watch("/tmp", () => {}))],
  filesUpload: [
    async (ctx) => {
      // Without streamed transfer a stream is still written (through memory once) and readStream still reads.
      const sandbox = await ctx.sharedSandbox();
      const path = `${await ctx.scratchDir(sandbox)}/via-stream.txt`;
      await sandbox.files.write(path, streamOf(utf8("streamed without filesUpload"), 7));
      const back = await collectText(
        (async function* () {
          const decoder = new TextDecoder();
          const reader = sandbox.files.readStream(path).getReader();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) return;
            yield decoder.decode(value, { stream: true });
          }
        })(),
      );
      expectEqual(
        back,
        "streamed without filesUpload",
        "content written from a stream and read with readStream",
      );
    },
  ],
  codeInterpreter: [],
  statefulKernel: [
    async (ctx, sandbox) => {
      if (!sandbox.code) return;
      await refuses("code.run() with a context", (_, s) => s.code!.run("x = 1", { context: "c" }))(
        ctx,
        sandbox,
      );
    },
  ],
  exposePort: [],
  privatePreview: [
    async (ctx, sandbox) => {
      if (!sandbox.ports) return;
      await refuses("ports.expose(port, { private: true })", (_, s) =>
        s.ports!.expose(8080, { private: true }),
      )(ctx, sandbox);
    },
  ],
  egressControl: [refusesAtCreate('network { egress: "block-all" }', { network: { egress: "block-all" } })],
  ssh: [],
  proxiedFetch: [
    async (_ctx, sandbox) => {
      // Gated method by method, like the namespaces: absent at runtime as in the type.
      if (!sandbox.ports) return;
      check(
        sandbox.ports.fetch === undefined,
        "expected sandbox.ports.fetch to be undefined where proxiedFetch is unsupported",
      );
    },
  ],
  snapshot: [],
  fork: [],
  volumes: [
    refusesAtCreate("volumes", {
      volumes: [{ name: "sbox-conformance", mountPath: "/mnt/sbox-conformance" }],
    }),
  ],
  gpu: [refusesAtCreate("resources.gpu", { resources: { gpu: "any" } })],
  region: [refusesAtCreate("region", { region: "sbox-conformance-region" })],
  secretsVault: [refusesAtCreate("secrets", { secrets: ["SBOX_CONFORMANCE_SECRET"] })],
  metrics: [refuses("metrics()", (_, s) => s.metrics())],
};

/**
 * One negative case per capability, run only when the capability is unsupported: can() is false, the gated
 * namespace is undefined, and the entry points throw NotSupportedError before any provider call.
 */
export function unsupportedCases(): ConformanceCase[] {
  return CAPABILITY_NAMES.map(
    (name): ConformanceCase => ({
      id: `unsupported.${name}`,
      title: `with ${name} unsupported, can("${name}") is false${NAMESPACE_OF[name] ? `, sandbox.${NAMESPACE_OF[name]} is undefined` : ""}${
        DEGRADES.has(name)
          ? ", and the core degrades gracefully (the whole output or file still arrives, at the end)"
          : " and its entry points are refused with NotSupported before any provider call"
      }`,
      requires: [],
      unsupportedOf: name,
      // A refusal is the core's gate on the adapter's declaration: it passes whatever the adapter's code
      // does. The two capabilities the core degrades run real commands, so they hold the adapter.
      coreOnly: !DEGRADES.has(name),
      async run(ctx) {
        const sandbox = await ctx.quietSandbox();
        const namespace = NAMESPACE_OF[name];
        await expectNoDriverCall(
          ctx,
          sandbox,
          `can("${name}") and sandbox.${namespace ?? "capabilities"}`,
          async () => {
            expectEqual(sandbox.can(name), false, `sandbox.can("${name}")`);
            expectEqual(sandbox.capabilities.map[name], "unsupported", `sandbox.capabilities.map.${name}`);
            if (namespace) {
              const value = (sandbox as unknown as Record<string, unknown>)[namespace];
              check(
                value === undefined,
                `expected sandbox.${namespace} to be undefined (${name} is unsupported), got ${typeof value}`,
              );
            }
          },
        );
        for (const probe of PROBES[name]) await probe(ctx, sandbox);
      },
    }),
  );
}
