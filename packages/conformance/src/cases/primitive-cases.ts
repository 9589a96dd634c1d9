import type { Sandbox } from "@sbox/core";
import {
  type DriverCommand,
  type DriverExecRequest,
  type DriverSandbox,
  exitCodeForSignal,
  type SandboxProvider,
} from "@sbox/core/spec";
import { ConformanceFailure, check, expectEqual, hexOf, show } from "../assertions.js";
import type { ConformanceCase, ConformanceContext } from "../conformance-case.js";
import { printfFormatOf } from "../sandbox-scripts.js";
import { allByteValues, mapLimit, nativeIdOf } from "./case-helpers.js";

/** What one call of a driver exec primitive gave back, bytes as bytes where the driver had them. */
interface PrimitiveOutcome {
  readonly stdout: Uint8Array | string;
  readonly stderr: Uint8Array | string;
  readonly exitCode: number | undefined;
  readonly signal: string | undefined;
}

/** One of the driver's own exec primitives, called directly (no core pipeline, no emulation in between). */
interface Primitive {
  readonly name: "doExec" | "doExecStream";
  run(command: DriverCommand, extra?: { stdin?: Uint8Array | undefined }): Promise<PrimitiveOutcome>;
}

const decoder = new TextDecoder();

function textOf(data: Uint8Array | string): string {
  return typeof data === "string" ? data : decoder.decode(data);
}

function concat(parts: readonly (Uint8Array | string)[]): Uint8Array | string {
  if (parts.every((p) => typeof p !== "string")) return Buffer.concat(parts as Uint8Array[]);
  return parts.map(textOf).join("");
}

/** The exit code a shell would report: the code, or 128 + the signal's number. */
function effectiveCode(outcome: PrimitiveOutcome): number | undefined {
  if (typeof outcome.exitCode === "number") return outcome.exitCode;
  if (outcome.signal === undefined) return undefined;
  const name = outcome.signal.toUpperCase().startsWith("SIG")
    ? outcome.signal.toUpperCase()
    : `SIG${outcome.signal.toUpperCase()}`;
  return exitCodeForSignal(name);
}

/**
 * The driver's exec primitives for `sandbox`, on the provider as its factory made it: `doExec` always,
 * `doExecStream` where streaming is declared native. Whatever level the core runs user commands at (E3
 * turns every user command into polls of files), these are the adapter's own code.
 */
async function primitivesOf(ctx: ConformanceContext, sandbox: Sandbox): Promise<Primitive[]> {
  const provider: SandboxProvider = ctx.provider;
  const handle: DriverSandbox = await provider.doConnect(nativeIdOf(sandbox), { signal: ctx.signal });
  const request = (command: DriverCommand, stdin: Uint8Array | undefined): DriverExecRequest => ({
    command,
    signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(60_000)]),
    ...(stdin === undefined ? {} : { stdin }),
  });
  const primitives: Primitive[] = [
    {
      name: "doExec",
      async run(command, extra = {}) {
        const result = await provider.doExec(handle, request(command, extra.stdin));
        return {
          stdout: result.stdout,
          stderr: result.stderr,
          exitCode: result.exitCode,
          signal: result.signal,
        };
      },
    },
  ];
  const stream = provider.doExecStream;
  if (provider.capabilities.streaming === "native" && typeof stream === "function") {
    primitives.push({
      name: "doExecStream",
      async run(command, extra = {}) {
        const out: (Uint8Array | string)[] = [];
        const err: (Uint8Array | string)[] = [];
        const exit = await stream.call(provider, handle, {
          ...request(command, extra.stdin),
          // Copies: a driver may reuse its buffers once the callback returns.
          onStdout: (chunk) => out.push(typeof chunk === "string" ? chunk : chunk.slice()),
          onStderr: (chunk) => err.push(typeof chunk === "string" ? chunk : chunk.slice()),
        });
        return { stdout: concat(out), stderr: concat(err), exitCode: exit.exitCode, signal: exit.signal };
      },
    });
  }
  return primitives;
}

/** Codes checked on a streaming primitive (the buffered one gets all 256). */
const SAMPLE_CODES = [0, 1, 2, 3, 42, 100, 126, 127, 128, 129, 137, 143, 200, 254, 255];

/** The driver's own exec primitive, held to the contract whatever the streaming level. */
export function primitiveCases(): ConformanceCase[] {
  return [
    {
      id: "exec.primitive.exit-codes",
      title:
        "the driver's own exec primitive (doExec, and doExecStream where streaming is native), called directly whatever level the core runs user commands at, reports every exit code 0..255 exactly, 137 for `kill -9 $$` and 143 for `kill -15 $$` (as the code or as the signal)",
      requires: [],
      timeoutMs: 180_000,
      async run(ctx) {
        if (!ctx.provider.flags.exitCodeNative) {
          ctx.skip(
            "the provider declares exitCodeNative false: its exec reports no exit code, the core's marker (E2) holds them (exec.exit-code.*)",
          );
        }
        const sandbox = await ctx.sharedSandbox();
        const wrong: string[] = [];
        for (const primitive of await primitivesOf(ctx, sandbox)) {
          const codes = primitive.name === "doExec" ? Array.from({ length: 256 }, (_, i) => i) : SAMPLE_CODES;
          await mapLimit(codes, 8, async (code) => {
            const outcome = await primitive.run({ shell: `printf x; exit ${code}` });
            const got = effectiveCode(outcome);
            if (got !== code) wrong.push(`${primitive.name} exit ${code} gave ${show(got)}`);
          });
          for (const [signal, code] of [
            ["-9", 137],
            ["-15", 143],
          ] as const) {
            const outcome = await primitive.run({ shell: `kill ${signal} $$; sleep 5` });
            const got = effectiveCode(outcome);
            if (got !== code)
              wrong.push(
                `${primitive.name} \`kill ${signal} $$\` gave ${show(got)} (exitCode ${show(outcome.exitCode)}, signal ${show(outcome.signal)})`,
              );
          }
        }
        if (wrong.length > 0) {
          throw new ConformanceFailure(
            `expected the driver's exec to report each exit code exactly; ${wrong.length} wrong: ${wrong.slice(0, 8).join(", ")}`,
          );
        }
      },
    },
    {
      id: "exec.primitive.streams",
      title:
        "the driver's own exec primitive, called directly, keeps stdout and stderr apart and complete (all 256 byte values, 1 MB of stderr), passes argv words unexpanded, and feeds stdin where stdin is native",
      requires: [],
      timeoutMs: 120_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const bytes = allByteValues();
        const lines = 120_000;
        const seqScript = `if command -v seq >/dev/null 2>&1; then seq 1 ${lines}; else awk 'BEGIN { for (i = 1; i <= ${lines}; i++) print i }'; fi`;
        let expectedSeq = "";
        for (let i = 1; i <= lines; i++) expectedSeq += `${i}\n`;
        for (const primitive of await primitivesOf(ctx, sandbox)) {
          const name = primitive.name;
          const apart = await primitive.run({
            shell: "printf 'out\\n'; printf 'err\\n' >&2; printf out2; printf err2 >&2",
          });
          expectEqual(textOf(apart.stdout), "out\nout2", `stdout of ${name}`);
          expectEqual(textOf(apart.stderr), "err\nerr2", `stderr of ${name}`);

          const binary = await primitive.run({ shell: `printf '${printfFormatOf(bytes)}'` });
          if (typeof binary.stdout === "string") {
            expectEqual(
              binary.stdout,
              decoder.decode(bytes),
              `text stdout of ${name} for all 256 byte values`,
            );
          } else {
            expectEqual(hexOf(binary.stdout), hexOf(bytes), `hex of the stdout bytes of ${name}`);
          }
          expectEqual(textOf(binary.stderr), "", `stderr of ${name} for a command writing only stdout`);

          const big = await primitive.run({ shell: `${seqScript} >&2; printf done` });
          const bigErr = textOf(big.stderr);
          check(
            bigErr === expectedSeq,
            `expected ${expectedSeq.length} bytes of stderr from ${name} (seq 1 ${lines}), got ${bigErr.length} bytes${bigErr === expectedSeq.slice(0, bigErr.length) ? " (a prefix)" : ""}`,
          );
          expectEqual(textOf(big.stdout), "done", `stdout of ${name} next to 1 MB of stderr`);

          const argv = await primitive.run({ argv: ["printf", "%s|", "$HOME", "a b", "$(id)", "`id`", "*"] });
          expectEqual(
            textOf(argv.stdout),
            "$HOME|a b|$(id)|`id`|*|",
            `stdout of ${name} for an argv command`,
          );

          if (ctx.provider.capabilities.stdin === "native") {
            const fed = await primitive.run({ shell: 'od -An -v -tx1 | tr -d " \\n"' }, { stdin: bytes });
            expectEqual(textOf(fed.stdout), hexOf(bytes), `hex of the stdin bytes ${name} fed to od`);
          }
        }
      },
    },
  ];
}
