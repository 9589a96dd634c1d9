/**
 * Error mapping: the SDK's own error classes, and failures the E2B emulator answers the way E2B does
 * (401 for a wrong or expired key, 429, 503, 500, 404), all become SandboxErrors with the right code.
 */
import { createSandboxClient } from "@sbox/core";
import { SandboxError } from "@sbox/core/spec";
import * as sdk from "e2b";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { e2b, toE2BError } from "../src/index.js";
import { startTestEnv, TEST_API_KEY, TEST_DOMAIN } from "./e2b-test-env.js";

let env: Awaited<ReturnType<typeof startTestEnv>>;
beforeAll(async () => {
  env = await startTestEnv();
});
afterAll(async () => {
  await env?.emulator.close();
});

async function rejection(promise: Promise<unknown>): Promise<SandboxError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(SandboxError.isInstance(error), `expected a SandboxError, got ${String(error)}`).toBe(true);
  return error as SandboxError;
}

describe("credentials", () => {
  test("a wrong or expired key gives Unauthorized naming E2B_API_KEY, never the key", async () => {
    const wrongKey = "e2b_expired_key_ffffffffffffffffffffffffffff";
    const client = createSandboxClient({ provider: env.provider({ apiKey: wrongKey }) });
    const error = await rejection(client.create());
    expect(error.code).toBe("Unauthorized");
    expect(error.retryable).toBe(false);
    expect(error.status).toBe(401);
    expect(error.message).toContain("E2B_API_KEY");
    expect(error.message).not.toContain(wrongKey);
    expect(error.provider).toBe("e2b");
    expect(env.routes().has("POST /v2/sandboxes")).toBe(true);
  });

  test("listing with a wrong key is Unauthorized too", async () => {
    const client = createSandboxClient({
      provider: env.provider({ apiKey: "e2b_wrong_0000000000000000000000" }),
    });
    const error = await rejection(
      (async () => {
        for await (const _ of client.list()) {
          // Only the rejection matters.
        }
      })(),
    );
    expect(error.code).toBe("Unauthorized");
    expect(error.message).toContain("E2B_API_KEY");
  });

  test.skipIf(Boolean(process.env.E2B_API_KEY))(
    "no key at all is Unauthorized naming E2B_API_KEY (E2B_API_KEY unset)",
    async () => {
      const provider = e2b({
        apiUrl: env.emulator.url,
        sandboxUrl: env.emulator.sandboxUrl,
        domain: TEST_DOMAIN,
      });
      const error = await rejection(createSandboxClient({ provider }).create());
      expect(error.code).toBe("Unauthorized");
      expect(error.message).toContain("E2B_API_KEY");
    },
  );
});

describe("control-plane failures answered like E2B", () => {
  test.each([
    [429, "QuotaExceeded", true],
    [503, "Provider", true],
    [500, "Provider", true],
    [400, "Validation", false],
  ] as const)("create answered %i is %s (retryable %s)", async (status, code, retryable) => {
    env.emulator.faults.add({
      match: "POST /v2/sandboxes",
      kind: "error",
      status,
      message: `injected ${status}`,
      times: 1,
    });
    const error = await rejection(createSandboxClient({ provider: env.provider() }).create());
    expect(error.code).toBe(code);
    expect(error.retryable).toBe(retryable);
    expect(error.message).toContain(`injected ${status}`);
  });

  test("an unknown template is NotFound", async () => {
    const error = await rejection(
      createSandboxClient({ provider: env.provider() }).create({ template: "nope" }),
    );
    expect(error.code).toBe("NotFound");
  });

  test("connect to a missing sandbox is NotFound, also for an id E2B could never have made", async () => {
    const client = createSandboxClient({ provider: env.provider() });
    expect((await rejection(client.connect("e2b:doesnotexist000000"))).code).toBe("NotFound");
    expect((await rejection(client.connect("e2b:../../etc"))).code).toBe("NotFound");
  });
});

describe("the SDK's error classes", () => {
  const context = { operation: "op", apiKey: TEST_API_KEY };
  test.each([
    [() => new sdk.SandboxNotFoundError("gone"), "NotFound", false],
    [() => new sdk.FileNotFoundError("no file"), "NotFound", false],
    [() => new sdk.NotFoundError("nothing"), "NotFound", false],
    [() => new sdk.TimeoutError("slow"), "Timeout", true],
    [() => new sdk.RateLimitError("too many"), "QuotaExceeded", true],
    [() => new sdk.ServiceBusyError("busy"), "Provider", true],
    [() => new sdk.InvalidArgumentError("bad"), "Validation", false],
    [() => new sdk.NotEnoughSpaceError("full"), "QuotaExceeded", false],
    [() => new sdk.TemplateError("old envd"), "Validation", false],
    [() => new sdk.AuthenticationError("no"), "Unauthorized", false],
    [() => new sdk.SandboxError("6: [already_exists] directory already exists"), "Conflict", false],
    [() => new sdk.SandboxError("9: [failed_precondition] nope"), "InvalidState", false],
    [
      () => new sdk.SandboxError("500: error ensuring directories: mkdir /a/f: not a directory"),
      "Validation",
      false,
    ],
    [
      () => new TypeError("fetch failed", { cause: Object.assign(new Error("x"), { code: "ECONNREFUSED" }) }),
      "Provider",
      true,
    ],
    [() => Object.assign(new Error("aborted"), { name: "AbortError" }), "Aborted", false],
  ] as const)("%s maps to %s", (make, code, retryable) => {
    const original = make();
    const error = toE2BError(original, context);
    expect(error.code).toBe(code);
    expect(error.retryable).toBe(retryable);
    expect(error.cause).toBe(original);
    expect(error.provider).toBe("e2b");
  });

  test("a key inside an SDK message is scrubbed", () => {
    const error = toE2BError(new sdk.SandboxError(`400: bad key ${TEST_API_KEY}`), context);
    expect(error.message).not.toContain(TEST_API_KEY);
  });
});
