import { randomUUID } from "node:crypto";
import { ConformanceSkip, check, expectEqual, expectRejects, hexOf, sleep } from "../assertions.js";
import type { ConformanceCase } from "../conformance-case.js";
import { runOk } from "../sandbox-scripts.js";
import { expectNoDriverCall, expectReapedUnlessEnded, stateOrGone, utf8 } from "./case-helpers.js";
import { startHostHeartbeat } from "./host-reach.js";

/** A value that breaks naive quoting, for env that must survive a reconnect. */
const HOSTILE_VALUE = 'it\'s "quoted" $(echo no) `echo no` \\ \n second line ünïcödé 🎉';

/** Lifecycle effects seen from outside: processes ended by destroy and by expiry, spec kept by connect, idempotent create. */
export function lifecycleEffectCases(): ConformanceCase[] {
  return [
    {
      id: "lifecycle.destroy.ends-processes",
      title:
        "destroy() ends every process of the sandbox: loops calling a server on this machine (a background process, and one left behind by a command) make no call 1-4 s after destroy",
      requires: [],
      timeoutMs: 120_000,
      async run(ctx) {
        const sandbox = await ctx.createSandbox();
        const heartbeat = await startHostHeartbeat(ctx, sandbox);
        await sandbox.destroy();
        await heartbeat.expectStopped("after destroy()");
      },
    },
    {
      id: "lifecycle.connect.preserves-spec",
      title:
        "a sandbox reached by connect() from a second client keeps what it was created with: its env (byte-exact) reaches commands, and getInfo() reports its metadata",
      requires: [],
      async run(ctx) {
        const honours = ctx.provider.honours;
        if (!honours.includes("env") && !honours.includes("metadata"))
          ctx.skip("the provider honours neither env nor metadata at create");
        const sandbox = await ctx.createSandbox({
          ...(honours.includes("env")
            ? { env: { SBOX_CONF_KEPT: HOSTILE_VALUE, SBOX_CONF_PLAIN: "plain" } }
            : {}),
          ...(honours.includes("metadata") ? { metadata: { "sbox-conformance-kept": "kept value" } } : {}),
        });
        const other = await ctx.secondClient().connect(sandbox.id);
        if (honours.includes("env")) {
          const seen = await runOk(
            other,
            [
              "sh",
              "-c",
              'printf "%s" "$SBOX_CONF_KEPT" | od -An -v -tx1 | tr -d " \\n"; echo; printf "%s" "$SBOX_CONF_PLAIN"',
            ],
            "printing the create-time env through the second client",
          );
          expectEqual(
            seen.stdout,
            `${hexOf(utf8(HOSTILE_VALUE))}\nplain`,
            "hex of $SBOX_CONF_KEPT and $SBOX_CONF_PLAIN seen through a connected client",
          );
          if (ctx.capabilities.map.background !== "unsupported") {
            const proc = await other.commands.spawn(["sh", "-c", 'printf "%s" "$SBOX_CONF_PLAIN"']);
            let out = "";
            for await (const chunk of proc.stdout) out += chunk;
            await proc.wait();
            expectEqual(
              out,
              "plain",
              "create-time env of a background process spawned through a connected client",
            );
          }
        }
        if (honours.includes("metadata")) {
          const info = await other.getInfo();
          expectEqual(
            info.metadata["sbox-conformance-kept"],
            "kept value",
            "getInfo().metadata[sbox-conformance-kept] through a connected client",
          );
        }
      },
    },
    {
      id: "lifecycle.set-timeout.enforced",
      title:
        "setTimeout(ms) really ends the sandbox when the time is up (by the provider, or by client.reap() where flags.nativeExpiry is false): it stops running and its processes end",
      requires: ["setTimeout"],
      timeoutMs: 150_000,
      async run(ctx) {
        const sandbox = await ctx.createSandbox();
        let heartbeat: Awaited<ReturnType<typeof startHostHeartbeat>> | undefined;
        try {
          heartbeat = await startHostHeartbeat(ctx, sandbox);
        } catch (error) {
          // Without a way to watch processes from outside, the state alone is checked.
          if (!(error instanceof ConformanceSkip)) throw error;
        }
        // A sandbox whose time is not up must be left alone by the same reaping.
        const later = await ctx.createSandbox();
        await later.setTimeout(10 * 60_000);
        await sandbox.setTimeout(2_000);
        await sleep(3_500);
        await expectReapedUnlessEnded(ctx, sandbox, "1.5 s after the time set by setTimeout(2000) ran out");
        const deadline = Date.now() + 90_000;
        let state = await stateOrGone(sandbox);
        while (state === "running" && Date.now() < deadline) {
          await sleep(1_000);
          state = await stateOrGone(sandbox);
        }
        check(state !== "running", `expected the sandbox not to run after its time ran out, still ${state}`);
        await heartbeat?.expectStopped("after the time set by setTimeout ran out");
        expectEqual(
          await stateOrGone(later),
          "running",
          "state of a sandbox whose time (10 minutes) is not up",
        );
      },
    },
    {
      id: "lifecycle.create.idempotency-key",
      title:
        "a create repeated with the same idempotencyKey returns the sandbox the first one made (no second sandbox), another key makes another; where neither the provider nor the core can keep keys, the key is refused with Validation before any provider call",
      requires: [],
      timeoutMs: 120_000,
      async run(ctx) {
        const key = `sbox-conformance-${ctx.runId}-${randomUUID().slice(0, 8)}`;
        const p = ctx.provider;
        const keeps =
          p.honours.includes("idempotencyKey") ||
          (p.honours.includes("metadata") && ctx.capabilities.map.list !== "unsupported");
        if (!keeps) {
          await expectNoDriverCall(ctx, undefined, "create({ idempotencyKey }) that nothing can keep", () =>
            expectRejects(
              ctx.createSandbox({ idempotencyKey: key }),
              "Validation",
              "create({ idempotencyKey }) on a provider that cannot keep it",
            ),
          );
          return;
        }
        const first = await ctx.createSandbox({ idempotencyKey: key });
        const again = await ctx.createSandbox({ idempotencyKey: key });
        expectEqual(
          again.id,
          first.id,
          "id of the sandbox a repeated create with the same idempotencyKey returned",
        );
        const marker = `${await ctx.workdir(first)}/sbox-conformance-idempotent-${ctx.runId}`;
        await runOk(first, ["touch", marker], "writing a marker in the first sandbox");
        await runOk(
          again,
          ["test", "-e", marker],
          "finding the marker through the repeated create's sandbox",
        );
        const other = await ctx.createSandbox({ idempotencyKey: `${key}-other` });
        check(
          other.id !== first.id,
          `expected another idempotencyKey to make another sandbox, got ${other.id} again`,
        );
        await first.destroy();
        const afterDestroy = await ctx.createSandbox({ idempotencyKey: key });
        check(
          afterDestroy.id !== first.id,
          `expected a create with the key of a destroyed sandbox to make a new one, got the destroyed ${first.id}`,
        );
        expectEqual(
          await stateOrGone(afterDestroy),
          "running",
          "state of the sandbox made after the first was destroyed",
        );
      },
    },
  ];
}
