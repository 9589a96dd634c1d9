/**
 * defineProvider owns the error path of every driver method: a provider throws what its SDK throws and
 * gets SandboxErrors out, mapped by its own mapError or the core's default, named and without secrets.
 */
import { describe, expect, test } from "vitest";
import { rejectionOf as rejection } from "../../test/rejection-of.js";
import { shDriverCapabilities, shDriverFlags } from "../../test/sh-driver.js";
import { NotSupportedError, SandboxError } from "../errors/sandbox-error.js";
import { defineProvider } from "./define-provider.js";
import type { DriverSandbox, SandboxProvider } from "./provider-spec.js";

const SECRET = "sk_live_0123456789abcdef";

const capabilities = {
  ...shDriverCapabilities,
  list: "native",
  background: "native",
  killProcess: "unsupported",
  stdin: "unsupported",
  filesUpload: "native",
} as const;

const sandbox: DriverSandbox = { id: "s1", native: undefined };
const call = () => ({ signal: new AbortController().signal });

/** A provider whose every method fails the way an SDK would. */
function failing(overrides: Partial<SandboxProvider> = {}): SandboxProvider {
  const sdkError = () => Object.assign(new Error(`request with key ${SECRET} failed`), { status: 404 });
  return defineProvider({
    specificationVersion: "v1",
    name: "fake",
    capabilities,
    flags: shDriverFlags,
    honours: [],
    secrets: () => [SECRET],
    async doCreate() {
      throw sdkError();
    },
    async doConnect() {
      throw new SandboxError("NotFound", `no sandbox (key ${SECRET})`);
    },
    async doDestroy() {},
    async doGetInfo() {
      throw new Error("plain failure");
    },
    async doExec() {
      throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    },
    async *doList() {
      yield { id: "s1", state: "running" as const, metadata: {} };
      throw sdkError();
    },
    async doSpawn() {
      return {
        pid: 7,
        wait: async () => {
          throw sdkError();
        },
        kill: async () => {},
      };
    },
    async doListProcesses() {
      return [];
    },
    async doConnectProcess() {
      throw sdkError();
    },
    async doReadFileStream() {
      let sent = false;
      return new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent) controller.error(sdkError());
          else controller.enqueue(new Uint8Array([1]));
          sent = true;
        },
      });
    },
    async doWriteFileStream() {},
    ...overrides,
  } as SandboxProvider);
}

describe("defineProvider maps every driver method's errors", () => {
  test("a raw SDK error becomes a SandboxError by the default mapping, named, without the secret", async () => {
    const error = await rejection(failing().doCreate({}, call()));
    expect(error).toMatchObject({ code: "NotFound", provider: "fake", status: 404 });
    expect(error.message).toBe("create: request with key [redacted] failed");
    expect(error.stack).not.toContain(SECRET);
  });

  test("a SandboxError the provider throws passes through, gets the provider's name and loses the secret", async () => {
    const error = await rejection(failing().doConnect("x", call()));
    expect(error).toMatchObject({ code: "NotFound", provider: "fake" });
    expect(error.message).not.toContain(SECRET);
  });

  test("errno codes map by the default table; file operations name their path", async () => {
    const provider = failing({
      doReadFile: async () => {
        throw Object.assign(new Error("no such file"), { code: "ENOENT" });
      },
    } as Partial<SandboxProvider>);
    const error = await rejection(provider.doReadFile!(sandbox, "/a/b", call()));
    expect(error).toMatchObject({ code: "NotFound", provider: "fake" });
    expect(error.message).toBe("files.read /a/b: no such file");
    expect((await rejection(provider.doExec(sandbox, { command: { shell: "true" }, ...call() }))).code).toBe(
      "Provider",
    );
  });

  test("mapError decides first; undefined leaves it to the default", async () => {
    const seen: unknown[] = [];
    const provider = failing({
      mapError: (error: unknown, context: { method: string; operation: string }) => {
        seen.push(context);
        return context.method === "doGetInfo"
          ? new SandboxError("InvalidState", `mapped: ${(error as Error).message}`)
          : undefined;
      },
    } as Partial<SandboxProvider>);
    const mapped = await rejection(provider.doGetInfo(sandbox, call()));
    expect(mapped).toMatchObject({
      code: "InvalidState",
      provider: "fake",
      message: "mapped: plain failure",
    });
    expect((await rejection(provider.doCreate({}, call()))).code).toBe("NotFound");
    expect(seen).toEqual([
      { method: "doGetInfo", operation: "getInfo", sandboxId: "s1" },
      { method: "doCreate", operation: "create", sandboxId: undefined },
    ]);
  });

  test("an aborted call's signal wins over what the SDK made of it", async () => {
    const controller = new AbortController();
    controller.abort(new SandboxError("Timeout", "the command timed out"));
    const error = await rejection(failing().doCreate({}, { signal: controller.signal }));
    expect(error.code).toBe("Timeout");
    const plain = new AbortController();
    plain.abort();
    expect((await rejection(failing().doCreate({}, { signal: plain.signal }))).code).toBe("Aborted");
  });

  test("doList's iteration, a returned stream and a returned process are covered too", async () => {
    const provider = failing();
    const listed: string[] = [];
    const listing = (async () => {
      for await (const info of provider.doList!({}, call())) listed.push(info.id);
    })();
    expect((await rejection(listing)).provider).toBe("fake");
    expect(listed).toEqual(["s1"]);

    const reader = (await provider.doReadFileStream!(sandbox, "/f", call())).getReader();
    expect((await reader.read()).value).toEqual(new Uint8Array([1]));
    const streamError = await rejection(reader.read());
    expect(streamError).toMatchObject({ code: "NotFound", provider: "fake" });
    expect(streamError.message).not.toContain(SECRET);

    const process = await provider.doSpawn!(sandbox, {
      command: { shell: "sleep 1" },
      ...call(),
      onStdout: () => {},
      onStderr: () => {},
    });
    expect(process.pid).toBe(7);
    const waitError = await rejection(process.wait());
    expect(waitError).toMatchObject({ code: "NotFound", provider: "fake" });
    expect(waitError.message).not.toContain(SECRET);
    await process.kill();
  });

  test("a remote's Timeout is retryable only where a retry cannot do the work twice", async () => {
    const timeout = async () => {
      throw new SandboxError("Timeout", "the remote did not answer");
    };
    const provider = failing({ doCreate: timeout, doGetInfo: timeout } as Partial<SandboxProvider>);
    expect((await rejection(provider.doCreate({}, call()))).retryable).toBe(false);
    expect((await rejection(provider.doGetInfo(sandbox, call()))).retryable).toBe(true);
    // The caller's own deadline stays what it was.
    const controller = new AbortController();
    controller.abort(new SandboxError("Timeout", "the command timed out"));
    expect((await rejection(provider.doCreate({}, { signal: controller.signal }))).retryable).toBe(true);
  });

  test("the declaration survives a spread into a new provider, and methods keep their `this`", async () => {
    class ClassProvider {
      readonly specificationVersion = "v1" as const;
      readonly name = "classy";
      readonly capabilities = shDriverCapabilities;
      readonly flags = shDriverFlags;
      readonly honours = [] as const;
      private readonly label = "own state";
      async doCreate() {
        return { id: this.label, native: undefined };
      }
      async doConnect(): Promise<DriverSandbox> {
        throw new Error("gone");
      }
      async doDestroy() {}
      async doGetInfo() {
        return { id: "x", state: "running" as const, metadata: {} };
      }
      async doExec() {
        return { stdout: "", stderr: "", exitCode: 0 };
      }
    }
    const defined = defineProvider(new ClassProvider() as unknown as SandboxProvider);
    expect((await defined.doCreate({}, call())).id).toBe("own state");
    const respread = defineProvider({ ...defined, name: "respread" });
    expect(respread.capabilities).toBe(defined.capabilities);
    expect((await rejection(respread.doConnect("x", call()))).provider).toBe("classy");
  });
});

describe("NotSupportedError.isInstance", () => {
  test("is true only for NotSupportedErrors, unlike SandboxError.isInstance", () => {
    expect(NotSupportedError.isInstance(new NotSupportedError("pty", "fake"))).toBe(true);
    expect(NotSupportedError.isInstance(new SandboxError("NotFound", "gone"))).toBe(false);
    expect(NotSupportedError.isInstance(new SandboxError("NotSupported", "no feature field"))).toBe(false);
    expect(SandboxError.isInstance(new NotSupportedError("pty", "fake"))).toBe(true);
  });
});
