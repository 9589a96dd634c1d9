import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { recordingProvider } from "../../test/faulty-provider.js";
import { hasBusybox, shDriver } from "../../test/sh-driver.js";
import { SandboxError } from "../errors/sandbox-error.js";
import type { SandboxProvider } from "../spec/provider-spec.js";
import { createShellExec, toBytes } from "./shell-exec.js";
import { EXEC_VARIANTS, testSignal } from "./shell-exec-test-bed.js";

const decoder = new TextDecoder();

/** The sh driver behind a text-only exec primitive, as some providers' SDKs return strings. */
function textOnly(provider: SandboxProvider): SandboxProvider {
  return {
    ...provider,
    async doExec(sandbox, request) {
      const result = await provider.doExec(sandbox, request);
      return {
        ...result,
        stdout: decoder.decode(toBytes(result.stdout)),
        stderr: decoder.decode(toBytes(result.stderr)),
      };
    },
  };
}

describe.skipIf(!hasBusybox()).each(EXEC_VARIANTS)(
  "createShellExec on $userland (native exit codes: $exitCodes, native cwd/env: $envCwd)",
  (variant) => {
    const provider = shDriver(variant);
    let sandbox: Awaited<ReturnType<typeof provider.doCreate>>;
    beforeAll(async () => {
      sandbox = await provider.doCreate({}, { signal: testSignal() });
    });
    afterAll(async () => {
      await provider.doDestroy(sandbox, { signal: testSignal() });
      provider.cleanup();
    });

    test("returns stdout and stderr as bytes and a numeric exit code, saying whether stdout is raw", async () => {
      const exec = createShellExec(provider);
      const result = await exec(sandbox, "printf 'o\\377'; printf e >&2; exit 4", { signal: testSignal() });
      // A text-only provider's output was decoded as UTF-8 before the core saw it: 0xff is U+FFFD by then.
      expect([...result.stdout]).toEqual(variant.textOutput ? [0x6f, 0xef, 0xbf, 0xbd] : [0x6f, 0xff]);
      expect(result.rawStdout).toBe(!variant.textOutput);
      expect(decoder.decode(result.stderr)).toBe("e");
      expect(result.exitCode).toBe(4);
    });

    test("string output of a text-only provider becomes UTF-8 bytes", async () => {
      const exec = createShellExec(textOnly(provider));
      const result = await exec(sandbox, "printf 'ünï ✓'; exit 3", { signal: testSignal() });
      expect(result.stdout).toBeInstanceOf(Uint8Array);
      expect(decoder.decode(result.stdout)).toBe("ünï ✓");
      expect(result.exitCode).toBe(3);
    });

    test("cwd, env and stdin reach the command", async () => {
      const exec = createShellExec(provider);
      const result = await exec(sandbox, 'pwd; printf "%s|" "$SBOX_A"; cat', {
        signal: testSignal(),
        cwd: "/tmp",
        env: { SBOX_A: "a 'b' $(c)" },
        // Stdin bytes are only for exec primitives that take them (EmulationContext.execAcceptsStdin).
        ...(variant.stdin ? { stdin: new TextEncoder().encode("from stdin") } : {}),
      });
      expect(decoder.decode(result.stdout)).toBe(`/tmp\na 'b' $(c)|${variant.stdin ? "from stdin" : ""}`);
    });

    test("a command killed by a signal has exit code 128+n", async () => {
      const exec = createShellExec(provider);
      const result = await exec(sandbox, "kill -9 $$", { signal: testSignal() });
      expect(result.exitCode).toBe(137);
    });

    test("errors thrown by the provider become SandboxErrors naming the provider", async () => {
      const faulty = recordingProvider(provider, {
        doExec: () => Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }),
      });
      const error = await createShellExec(faulty)(sandbox, "true", { signal: testSignal() }).catch(
        (e: unknown) => e,
      );
      expect(SandboxError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ code: "Provider", provider: provider.name, retryable: true });
      expect((error as Error).message).toContain("socket hang up");
    });

    test("an aborted signal rejects with Aborted", async () => {
      const controller = new AbortController();
      controller.abort();
      await expect(
        createShellExec(provider)(sandbox, "true", { signal: controller.signal }),
      ).rejects.toMatchObject({
        code: "Aborted",
      });
    });
  },
);
