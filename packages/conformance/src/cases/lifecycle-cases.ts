import type { Sandbox, SandboxInfo } from "@sbox/core";
import {
  check,
  expectEqual,
  expectRejects,
  expectResolves,
  expectSandboxError,
  hexOf,
  show,
  sleep,
} from "../assertions.js";
import type { ConformanceCase, ConformanceContext } from "../conformance-case.js";
import { RUN_LABEL } from "../conformance-labels.js";
import { runOk, shArgs } from "../sandbox-scripts.js";
import {
  expectNoDriverCall,
  expectReapedUnlessEnded,
  nativeIdOf,
  stateOrGone,
  utf8,
} from "./case-helpers.js";

async function listAll(
  ctx: ConformanceContext,
  filter: Parameters<ConformanceContext["client"]["list"]>[0],
): Promise<SandboxInfo[]> {
  const out: SandboxInfo[] = [];
  for await (const info of ctx.client.list(filter)) out.push(info);
  return out;
}

/** Create, connect, getInfo, destroy, list, stop/resume, pause/resume, ttl. */
export function lifecycleCases(): ConformanceCase[] {
  return [
    {
      id: "lifecycle.create.running",
      title:
        'create() returns a running sandbox whose id is "<provider>:<native id>" and whose getInfo() reports it live',
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.createSandbox();
        check(
          sandbox.id.startsWith(`${ctx.providerName}:`),
          `expected sandbox.id to start with "${ctx.providerName}:", got ${show(sandbox.id)}`,
        );
        check(nativeIdOf(sandbox).length > 0, `expected a non-empty native id in ${show(sandbox.id)}`);
        expectEqual(sandbox.provider, ctx.providerName, "sandbox.provider");
        const info = await sandbox.getInfo();
        expectEqual(info.id, sandbox.id, "getInfo().id");
        expectEqual(info.provider, ctx.providerName, "getInfo().provider");
        expectEqual(info.state, "running", "getInfo().state after create");
        check(
          typeof info.metadata === "object" && info.metadata !== null,
          `expected getInfo().metadata to be an object, got ${show(info.metadata)}`,
        );
        if (info.createdAt !== undefined)
          check(
            info.createdAt instanceof Date && !Number.isNaN(info.createdAt.getTime()),
            "expected createdAt to be a valid Date",
          );
        const result = await runOk(sandbox, "echo ready", "running a command right after create");
        expectEqual(result.stdout, "ready\n", "stdout of `echo ready`");
      },
    },
    {
      id: "lifecycle.create.metadata",
      title: "metadata given at create is reported unchanged by getInfo()",
      requires: [],
      honours: ["metadata"],
      async run(ctx) {
        const value = "value with spaces, commas, colons: and 'quotes'";
        const sandbox = await ctx.createSandbox({ metadata: { "sbox-conformance-note": value } });
        const info = await sandbox.getInfo();
        expectEqual(
          info.metadata["sbox-conformance-note"],
          value,
          "getInfo().metadata[sbox-conformance-note]",
        );
        expectEqual(info.metadata[RUN_LABEL], ctx.runId, `getInfo().metadata[${RUN_LABEL}]`);
      },
    },
    {
      id: "lifecycle.create.env",
      title: "env given at create reaches every command byte-exact, and a command's own env overrides it",
      requires: [],
      honours: ["env"],
      async run(ctx) {
        const hostile = 'it\'s "quoted" $(echo no) `echo no` $HOME \\ \n second line ünïcödé 🎉';
        const sandbox = await ctx.createSandbox({
          env: { SBOX_CONF_A: hostile, SBOX_CONF_B: "from-create", SBOX_CONF_EMPTY: "" },
        });
        const seen = await runOk(
          sandbox,
          ["sh", "-c", 'printf "%s" "$SBOX_CONF_A" | od -An -v -tx1 | tr -d " \\n"'],
          "printing SBOX_CONF_A",
        );
        expectEqual(seen.stdout.trim(), hexOf(utf8(hostile)), "hex of $SBOX_CONF_A");
        const both = await runOk(
          sandbox,
          // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
          ["sh", "-c", 'printf "%s|%s|%s" "$SBOX_CONF_B" "${SBOX_CONF_EMPTY-unset}" "$SBOX_CONF_C"'],
          "printing env",
          {
            env: { SBOX_CONF_B: "from-command", SBOX_CONF_C: "only-command" },
          },
        );
        expectEqual(both.stdout, "from-command||only-command", "env seen by a command with its own env");
      },
    },
    {
      id: "lifecycle.connect.second-client",
      title:
        'connect("<provider>:<id>") from a second client (a fresh provider instance) attaches to the same live sandbox',
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.createSandbox();
        const token = `token-${ctx.runId}`;
        const file = `${await ctx.scratchDir(sandbox)}/marker.txt`;
        await runOk(sandbox, shArgs('printf "%s" "$1" > "$2"', token, file), "writing a marker file");
        const other = await ctx.secondClient().connect(sandbox.id);
        expectEqual(other.id, sandbox.id, "id of the connected sandbox");
        expectEqual((await other.getInfo()).state, "running", "getInfo().state through the second client");
        const seen = await runOk(other, ["cat", file], "reading the marker through the second client");
        expectEqual(seen.stdout, token, "marker file content seen through the second client");
      },
    },
    {
      id: "lifecycle.connect.native-id",
      title: "connect() also accepts the native id without the provider prefix",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const again = await ctx.client.connect(nativeIdOf(sandbox));
        expectEqual(again.id, sandbox.id, "id of the sandbox connected by native id");
        await runOk(again, "true", "running a command on the sandbox connected by native id");
      },
    },
    {
      id: "lifecycle.get-info.live",
      title:
        "getInfo() reads live state: after another client destroys the sandbox, the first handle reports destroyed (or NotFound), never a cached running",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.createSandbox();
        expectEqual((await sandbox.getInfo()).state, "running", "getInfo().state before destroy");
        const other = await ctx.secondClient().connect(sandbox.id);
        await other.destroy();
        expectEqual(
          await stateOrGone(sandbox),
          "destroyed",
          "getInfo().state of the first handle after another client destroyed it",
        );
      },
    },
    {
      id: "lifecycle.destroy.idempotent",
      title: "destroy() is idempotent, and afterwards connect() rejects with NotFound (or reports destroyed)",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.createSandbox();
        await expectResolves(sandbox.destroy(), "the first destroy()");
        await expectResolves(sandbox.destroy(), "a second destroy() of the same sandbox");
        expectEqual(await stateOrGone(sandbox), "destroyed", "getInfo().state after destroy");
        let again: Sandbox | undefined;
        try {
          again = await ctx.client.connect(sandbox.id);
        } catch (error) {
          expectSandboxError(error, "NotFound", "connect() to a destroyed sandbox");
        }
        if (again) {
          expectEqual(
            await stateOrGone(again),
            "destroyed",
            "state of a destroyed sandbox reached by connect()",
          );
          await expectResolves(again.destroy(), "destroy() through a new handle of a destroyed sandbox");
        }
      },
    },
    {
      id: "lifecycle.list.filters",
      title: "client.list() honours metadata, state and limit filters and reports live state",
      requires: ["list"],
      honours: ["metadata"],
      async run(ctx) {
        const tag = `sbox-conformance-tag-${ctx.runId}`;
        const [a, b] = await Promise.all([
          ctx.createSandbox({ metadata: { [tag]: "a" } }),
          ctx.createSandbox({ metadata: { [tag]: "b" } }),
        ]);
        const onlyA = await listAll(ctx, { metadata: { [tag]: "a" } });
        expectEqual(onlyA.map((i) => i.id).join(","), a!.id, "ids listed with metadata filter a");
        expectEqual(onlyA[0]!.state, "running", "state listed for a");
        expectEqual(onlyA[0]!.provider, ctx.providerName, "provider listed for a");
        const running = await listAll(ctx, { metadata: { [RUN_LABEL]: ctx.runId }, state: "running" });
        for (const s of [a!, b!])
          check(
            running.some((i) => i.id === s.id),
            `expected list({ state: "running" }) to include ${s.id}, got ${show(running.map((i) => i.id))}`,
          );
        const stopped = await listAll(ctx, { metadata: { [tag]: "a" }, state: "stopped" });
        expectEqual(stopped.length, 0, 'number of sandboxes listed with state "stopped" (a is running)');
        const limited = await listAll(ctx, { metadata: { [tag]: "a" }, limit: 0 });
        expectEqual(limited.length, 0, "number of sandboxes listed with limit 0");
        const one = await listAll(ctx, { metadata: { [RUN_LABEL]: ctx.runId }, limit: 1 });
        expectEqual(one.length, 1, "number of sandboxes listed with limit 1");
        await b!.destroy();
        const afterDestroy = await listAll(ctx, { metadata: { [tag]: "b" } });
        check(
          afterDestroy.every((i) => i.state === "destroyed"),
          `expected a destroyed sandbox to be absent from list() or listed as destroyed, got ${show(afterDestroy.map((i) => i.state))}`,
        );
      },
    },
    {
      id: "lifecycle.stop.resume",
      title:
        "stop() reports stopped, resume() brings the sandbox back running, and files survive when flags.preservesDiskOnStop says so",
      requires: ["stop"],
      timeoutMs: 120_000,
      async run(ctx) {
        const sandbox = await ctx.createSandbox();
        const dir = await ctx.scratchDir(sandbox);
        await sandbox.files.write(`${dir}/kept.txt`, "kept across stop");
        await sandbox.stop();
        expectEqual(await stateOrGone(sandbox), "stopped", "getInfo().state after stop()");
        await sandbox.resume();
        expectEqual(await stateOrGone(sandbox), "running", "getInfo().state after resume()");
        await runOk(sandbox, "true", "running a command after resume()");
        if (ctx.capabilities.flags.preservesDiskOnStop) {
          expectEqual(
            await sandbox.files.readText(`${dir}/kept.txt`),
            "kept across stop",
            "file content after stop and resume (preservesDiskOnStop)",
          );
        }
      },
    },
    {
      id: "lifecycle.pause.resume",
      title:
        "pause() reports paused, resume() brings it back running with its files (and processes when flags.preservesMemoryOnPause)",
      requires: ["pause"],
      timeoutMs: 120_000,
      async run(ctx) {
        const sandbox = await ctx.createSandbox();
        const dir = await ctx.scratchDir(sandbox);
        await sandbox.files.write(`${dir}/kept.txt`, "kept across pause");
        const memory =
          ctx.capabilities.flags.preservesMemoryOnPause && ctx.capabilities.map.background !== "unsupported";
        const proc = memory ? await sandbox.commands.spawn("sleep 300") : undefined;
        await sandbox.pause();
        expectEqual(await stateOrGone(sandbox), "paused", "getInfo().state after pause()");
        await sandbox.resume();
        expectEqual(await stateOrGone(sandbox), "running", "getInfo().state after resume()");
        expectEqual(
          await sandbox.files.readText(`${dir}/kept.txt`),
          "kept across pause",
          "file content after pause and resume",
        );
        if (proc) {
          const listed = await sandbox.commands.list();
          check(
            listed.some((p) => p.pid === proc.pid && p.running),
            `expected process ${proc.pid} to be running after pause and resume (preservesMemoryOnPause), got ${show(listed)}`,
          );
        }
      },
    },
    {
      id: "lifecycle.set-timeout",
      title:
        "setTimeout(ms) is accepted, moves expiresAt when reported, and rejects a non-positive value with Validation",
      requires: ["setTimeout"],
      async run(ctx) {
        const sandbox = await ctx.createSandbox();
        const before = Date.now();
        await sandbox.setTimeout(10 * 60_000);
        const info = await sandbox.getInfo();
        if (info.expiresAt !== undefined) {
          const delta = info.expiresAt.getTime() - before;
          check(
            delta > 8 * 60_000 && delta < 12 * 60_000,
            `expected expiresAt about 10 minutes ahead, got ${Math.round(delta / 1000)} s`,
          );
        }
        expectEqual(info.state, "running", "getInfo().state after setTimeout");
        await expectRejects(sandbox.setTimeout(-1), "Validation", "setTimeout(-1)");
      },
    },
    {
      id: "lifecycle.ttl.expires",
      title:
        "a ttlMs given at create is enforced (by the provider, or by client.reap() where flags.nativeExpiry is false), or refused with Validation before any provider call",
      requires: [],
      timeoutMs: 90_000,
      async run(ctx) {
        const p = ctx.provider;
        const recordable = p.honours.includes("metadata") && ctx.capabilities.map.list !== "unsupported";
        if (!p.honours.includes("ttlMs") && !recordable) {
          await expectNoDriverCall(
            ctx,
            undefined,
            "create({ ttlMs }) on a provider that cannot keep a ttl",
            () =>
              expectRejects(
                ctx.createSandbox({ ttlMs: 60_000 }),
                "Validation",
                "create({ ttlMs }) on a provider that cannot keep a ttl",
              ),
          );
          return;
        }
        const sandbox = await ctx.createSandbox({ ttlMs: 2_000 });
        await sleep(3_000);
        await expectReapedUnlessEnded(ctx, sandbox, "1 s after its ttl ran out");
        const deadline = Date.now() + 60_000;
        let state = await stateOrGone(sandbox);
        while (state === "running" && Date.now() < deadline) {
          await sleep(1_000);
          state = await stateOrGone(sandbox);
        }
        check(
          state !== "running",
          `expected the sandbox to be stopped or destroyed after its ttl, still ${state}`,
        );
      },
    },
  ];
}
