import { describe, expect, test } from "vitest";
import { redactSecrets } from "./redact.js";
import { NotSupportedError, SandboxError } from "./sandbox-error.js";
import { codeForHttpStatus, toSandboxError } from "./to-sandbox-error.js";

describe("SandboxError", () => {
  test("isInstance recognises errors from another copy of the package", async () => {
    // A query string makes the module loader evaluate a second, independent copy of the module.
    const secondCopy: string = "./sandbox-error.js?second-copy";
    const copy = (await import(/* @vite-ignore */ secondCopy)) as typeof import("./sandbox-error.js");
    expect(copy.SandboxError).not.toBe(SandboxError);
    const foreign = new copy.SandboxError("NotFound", "gone");
    expect(foreign instanceof SandboxError).toBe(false);
    expect(SandboxError.isInstance(foreign)).toBe(true);
    expect(SandboxError.isInstance(new Error("plain"))).toBe(false);
    expect(SandboxError.isInstance({ code: "NotFound" })).toBe(false);
    expect(SandboxError.isInstance(null)).toBe(false);
  });

  test("retryable defaults follow the code and can be overridden", () => {
    expect(new SandboxError("Timeout", "t").retryable).toBe(true);
    expect(new SandboxError("Validation", "v").retryable).toBe(false);
    expect(new SandboxError("Provider", "p", { retryable: false }).retryable).toBe(false);
  });

  test("NotSupportedError names the feature and the provider", () => {
    const error = new NotSupportedError("pty", "fly");
    expect(error.code).toBe("NotSupported");
    expect(error.feature).toBe("pty");
    expect(error.message).toContain("pty is not supported by provider fly");
    expect(SandboxError.isInstance(error)).toBe(true);
  });

  test("messages never carry credentials", () => {
    const key = "e2b_1234567890abcdef";
    const error = new SandboxError("Unauthorized", `request with api_key=${key} and Bearer ${key} failed`, {
      secrets: [key],
    });
    expect(error.message).not.toContain(key);
    expect(redactSecrets("https://user:hunter2@example.test/x")).not.toContain("hunter2");
    expect(redactSecrets("token: abcdefgh1234")).toBe("token: [redacted]");
  });
});

describe("toSandboxError", () => {
  test("passes SandboxErrors through and wraps everything else with cause", () => {
    const original = new SandboxError("Conflict", "busy");
    expect(toSandboxError(original)).toBe(original);
    const native = Object.assign(new Error("no such file"), { code: "ENOENT" });
    const wrapped = toSandboxError(native, { provider: "local", operation: "files.read /x" });
    expect(wrapped).toMatchObject({ code: "NotFound", provider: "local" });
    expect(wrapped.message).toBe("files.read /x: no such file");
    expect(wrapped.cause).toBe(native);
    expect(toSandboxError("a string").code).toBe("Provider");
    expect(toSandboxError(new DOMException("stop", "AbortError")).code).toBe("Aborted");
  });

  test("HTTP statuses map to the taxonomy with retryability", () => {
    expect(codeForHttpStatus(404)).toBe("NotFound");
    expect(codeForHttpStatus(401)).toBe("Unauthorized");
    expect(codeForHttpStatus(429)).toBe("QuotaExceeded");
    expect(codeForHttpStatus(503)).toBe("Provider");
    const e = toSandboxError(Object.assign(new Error("slow down"), { status: 429 }));
    expect(e).toMatchObject({ code: "QuotaExceeded", status: 429, retryable: true });
    expect(toSandboxError(Object.assign(new Error("bad"), { status: 400 })).retryable).toBe(false);
  });
});
