import { createHash } from "node:crypto";
import type { Sandbox } from "@sbox/core";
import { SandboxError } from "@sbox/core/spec";
import { ConformanceFailure, show } from "../assertions.js";
import type { ConformanceContext } from "../conformance-case.js";
import { RUN_LABEL } from "../conformance-labels.js";
import { runOk } from "../sandbox-scripts.js";

/** Size of a file measured inside the sandbox, 0 when it does not exist (yet). */
async function sizeOrZero(sandbox: Sandbox, path: string): Promise<number> {
  const result = await runOk(
    sandbox,
    ["sh", "-c", 'if [ -e "$1" ]; then wc -c < "$1"; else echo 0; fi', "sh", path],
    `measuring ${show(path)}`,
  );
  return Number.parseInt(result.stdout.trim(), 10);
}

/** Live state, or `"destroyed"` when the provider no longer knows the sandbox. */
export async function stateOrGone(sandbox: Sandbox): Promise<string> {
  try {
    return (await sandbox.getInfo()).state;
  } catch (error) {
    if (SandboxError.isInstance(error) && error.code === "NotFound") return "destroyed";
    throw error;
  }
}

/**
 * Where the provider keeps no expiry of its own (`flags.nativeExpiry` false), `client.reap()` must end an
 * expired sandbox and return it, unless the provider already ended it (on a call that touched it, or by a
 * timer of its own), which listing shows without touching the sandbox.
 */
export async function expectReapedUnlessEnded(
  ctx: ConformanceContext,
  sandbox: Sandbox,
  when: string,
): Promise<void> {
  if (ctx.capabilities.flags.nativeExpiry) return;
  let listed: string | undefined;
  if (ctx.capabilities.map.list !== "unsupported") {
    const labelled = ctx.provider.honours.includes("metadata");
    for await (const info of ctx.client.list(labelled ? { metadata: { [RUN_LABEL]: ctx.runId } } : {})) {
      if (info.id === sandbox.id) listed = info.state;
    }
  }
  const reaped = await ctx.client.reap();
  if (reaped.some((i) => i.id === sandbox.id) || (listed !== undefined && listed !== "running")) return;
  throw new ConformanceFailure(
    `expected client.reap() ${when} to return ${sandbox.id} (listed ${listed ?? "nowhere"} just before), got ${show(reaped.map((i) => i.id))}`,
  );
}

/** Concatenates an async iterable of text chunks. */
export async function collectText(chunks: AsyncIterable<string>): Promise<string> {
  let text = "";
  for await (const chunk of chunks) text += chunk;
  return text;
}

/** Runs `fn` over `items` with at most `limit` in flight; results in input order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** The native id of a sandbox: its id without the `"<provider>:"` prefix. */
export function nativeIdOf(sandbox: Sandbox): string {
  const prefix = `${sandbox.provider}:`;
  return sandbox.id.startsWith(prefix) ? sandbox.id.slice(prefix.length) : sandbox.id;
}

/**
 * Runs `probe` and fails if any driver method was called for `sandbox` (or without a sandbox, like
 * `doCreate`/`doList`) while it ran: proves that a refusal happened in the core, before the provider.
 */
export async function expectNoDriverCall(
  ctx: ConformanceContext,
  sandbox: Sandbox | undefined,
  what: string,
  probe: () => Promise<unknown>,
): Promise<void> {
  const mark = ctx.calls.mark();
  await probe();
  const calls = ctx.calls.since(mark, sandbox ? { sandboxId: nativeIdOf(sandbox) } : undefined);
  if (calls.length > 0) {
    throw new ConformanceFailure(
      `expected ${what} to be refused before any provider call, but the driver was called: ${calls.map((c) => c.method).join(", ")}`,
    );
  }
}

/** UTF-8 bytes of a string. */
export function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

/** `length` deterministic pseudo-random bytes (xorshift), so large payloads are not compressible runs. */
export function patternBytes(length: number, seed = 0x9e3779b9): Uint8Array {
  const out = new Uint8Array(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i += 4) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
    if (i + 1 < length) out[i + 1] = (x >>> 8) & 0xff;
    if (i + 2 < length) out[i + 2] = (x >>> 16) & 0xff;
    if (i + 3 < length) out[i + 3] = (x >>> 24) & 0xff;
  }
  return out;
}

/** Every byte value 0..255, then the same descending: 512 bytes. */
export function allByteValues(): Uint8Array {
  const out = new Uint8Array(512);
  for (let i = 0; i < 256; i++) {
    out[i] = i;
    out[511 - i] = i;
  }
  return out;
}

/** SHA-256 hex of bytes. */
export function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Reads a whole web stream into one byte array. */
export async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let total = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    total += value.length;
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** A web stream that yields `bytes` in `chunkSize` pieces, with a macrotask between pieces. */
export function streamOf(bytes: Uint8Array, chunkSize: number): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (offset >= bytes.length) {
        controller.close();
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 0));
      controller.enqueue(bytes.slice(offset, offset + chunkSize));
      offset += chunkSize;
    },
  });
}

/**
 * Starts a process tree that appends to two heartbeat files every second (see HEARTBEAT_TREE_SCRIPT),
 * and returns a check that fails when either file still grows: the tree was not killed.
 */
export function heartbeatFiles(dir: string): {
  files: [string, string];
  expectStopped(sandbox: Sandbox, what: string): Promise<void>;
} {
  const files: [string, string] = [`${dir}/heartbeat-parent`, `${dir}/heartbeat-child`];
  return {
    files,
    async expectStopped(sandbox, what) {
      // Give the kill a moment to land, then watch for growth over more than two beats.
      await new Promise((resolve) => setTimeout(resolve, 1200));
      const before = await Promise.all(files.map((f) => sizeOrZero(sandbox, f)));
      if (before.some((size) => !(size > 0))) {
        throw new ConformanceFailure(`${what}: the command never started (heartbeat sizes ${show(before)})`);
      }
      await new Promise((resolve) => setTimeout(resolve, 2500));
      const after = await Promise.all(files.map((f) => sizeOrZero(sandbox, f)));
      if (after[0] !== before[0] || after[1] !== before[1]) {
        throw new ConformanceFailure(
          `${what}: expected the whole process tree to be gone, but heartbeat files kept growing (${show(before)} -> ${show(after)}; parent, child)`,
        );
      }
    },
  };
}

/** Waits until `path` exists with content inside the sandbox (up to `timeoutMs`). */
export async function waitForNonEmpty(sandbox: Sandbox, path: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await sandbox.commands.run(["sh", "-c", 'test -s "$1"', "sh", path]);
    if (result.exitCode === 0) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
