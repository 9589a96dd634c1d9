/**
 * The one redaction path: no credential and no engine host path in the message, the stack, the cause
 * chain, util.inspect or JSON.stringify of an error that leaves the SDK.
 */
import { inspect } from "node:util";
import { describe, expect, test } from "vitest";
import { scrubHostPaths } from "./host-paths.js";
import { RedactedCause, redactError } from "./redact-error.js";
import { SandboxError } from "./sandbox-error.js";

const KEY = "e2b_planted_fake_key_7f3a9c1d2b";

/** Every way a logger or a user could print the error. */
function renderings(error: Error): string[] {
  const chain: string[] = [];
  const seen = new Set<unknown>();
  const walk = (value: unknown): void => {
    if (typeof value !== "object" || value === null || seen.has(value)) return;
    seen.add(value);
    const e = value as { message?: unknown; stack?: unknown; cause?: unknown; errors?: unknown };
    chain.push(String(e.message), String(e.stack));
    walk(e.cause);
    if (Array.isArray(e.errors)) for (const inner of e.errors) walk(inner);
  };
  walk(error);
  return [
    error.message,
    String(error.stack),
    String(error),
    inspect(error, { depth: Number.POSITIVE_INFINITY, showHidden: false }),
    JSON.stringify(error),
    ...chain,
  ];
}

describe("redactError", () => {
  test("a credential echoed by a server appears nowhere: message, stack, cause chain, inspect, JSON", () => {
    const transport = Object.assign(new TypeError("fetch failed"), {
      cause: Object.assign(new Error(`connect to host failed, X-API-Key: ${KEY}`), { code: "ECONNRESET" }),
    });
    const sdkError = Object.assign(new Error(`401: invalid key ${KEY}`), {
      statusCode: 401,
      request: { headers: { "X-API-KEY": KEY, accept: "application/json" } },
      cause: transport,
    });
    const error = redactError(
      new SandboxError("Unauthorized", `create: invalid key ${KEY}`, { cause: sdkError, provider: "e2b" }),
      [KEY],
    );
    for (const text of renderings(error)) expect(text).not.toContain(KEY);
    // What debugging needs is kept.
    const cause = error.cause as RedactedCause;
    expect(cause).toBeInstanceOf(RedactedCause);
    expect(cause).toMatchObject({ name: "Error", status: 401 });
    expect(cause.message).toBe("401: invalid key [redacted]");
    const innermost = (cause.cause as RedactedCause).cause as RedactedCause;
    expect(innermost.code).toBe("ECONNRESET");
    expect(error.code).toBe("Unauthorized");
  });

  test("a clean native cause is kept as it is", () => {
    const native = Object.assign(new Error("no such file"), { code: "ENOENT" });
    const error = redactError(
      new SandboxError("NotFound", "files.read /a: no such file", { cause: native }),
      [KEY],
    );
    expect(error.cause).toBe(native);
  });

  test("causes that are SandboxErrors or aggregates are cleaned too, cycles and strings included", () => {
    const inner = new SandboxError("Provider", `token=${KEY}`);
    const aggregate = new AggregateError([inner, new Error(`Bearer ${KEY}`)], "all failed");
    const looping = new Error(`password: ${KEY}`) as Error & { cause?: unknown };
    looping.cause = looping;
    const error = redactError(
      new SandboxError("AllProvidersFailed", "every provider failed", { cause: aggregate }),
      [KEY],
    );
    for (const text of renderings(error)) expect(text).not.toContain(KEY);
    const second = redactError(new SandboxError("Provider", "x", { cause: looping }), [KEY]);
    for (const text of renderings(second)) expect(text).not.toContain(KEY);
    const stringy = redactError(new SandboxError("Provider", "x", { cause: `key ${KEY}` }), [KEY]);
    expect(String(stringy.cause)).not.toContain(KEY);
  });

  test("URL-encoded secrets, passwords in URLs and signed-URL signatures are scrubbed without being named", () => {
    const secret = "p@ss/word+1";
    const error = redactError(
      new SandboxError(
        "Provider",
        `GET https://u:hunter22@api.test/x?key=${encodeURIComponent(secret)} and https://b.test/o?X-Amz-Signature=abcdef0123456789 failed`,
      ),
      [secret],
    );
    expect(error.message).not.toContain("hunter22");
    expect(error.message).not.toContain(encodeURIComponent(secret));
    expect(error.message).not.toContain("abcdef0123456789");
  });

  test("engine host paths become the sandbox path the user gave", () => {
    const layer = "3f1c0e9d8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0";
    const message = `open /var/lib/docker/overlay2/${layer}/merged/tmp/${"n".repeat(300)}: file name too long`;
    const error = redactError(new SandboxError("Provider", message));
    expect(error.message).toBe(`open /tmp/${"n".repeat(300)}: file name too long`);
    expect(error.stack).not.toContain("/var/lib/docker");
    expect(scrubHostPaths(`mkdir /var/lib/docker/overlay2/${layer}-init/diff/etc: denied`)).toBe(
      "mkdir /etc: denied",
    );
    expect(
      scrubHostPaths(
        "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/42/fs/home/user/a",
      ),
    ).toBe("/home/user/a");
    expect(scrubHostPaths(`lstat /var/lib/docker/overlay2/${layer}/merged: bad`)).toBe("lstat /: bad");
    expect(scrubHostPaths("volume /var/lib/docker/volumes/v/_data is busy")).toBe(
      "volume [host path] is busy",
    );
    expect(scrubHostPaths("/tmp/sbox/overlay2/notes.txt stays")).toBe("/tmp/sbox/overlay2/notes.txt stays");
  });
});
