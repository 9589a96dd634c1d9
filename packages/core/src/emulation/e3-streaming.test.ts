import { existsSync, readdirSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { hasBusybox } from "../../test/sh-driver.js";
import { SandboxError } from "../errors/sandbox-error.js";
import type { DriverExecRequest } from "../spec/provider-spec.js";
import { emulatedExecStream } from "./e3-streaming.js";
import { withTimeout } from "./e7-timeout.js";
import { MAX_COMMAND_LINE_BYTES } from "./emulation-context.js";
import { createExecBed, EXEC_VARIANTS, type ExecBed, groupAlive, testSignal } from "./shell-exec-test-bed.js";

const decoder = new TextDecoder();

interface Collected {
  stdout: Uint8Array[];
  stderr: Uint8Array[];
  firstStdoutAt: number | undefined;
}

async function stream(
  bed: ExecBed,
  request: Omit<DriverExecRequest, "signal"> & { signal?: AbortSignal },
): Promise<Collected & { exitCode: number | undefined; signal: string | undefined; ms: number }> {
  const collected: Collected = { stdout: [], stderr: [], firstStdoutAt: undefined };
  const start = Date.now();
  const exit = await emulatedExecStream(bed.ctx)(bed.sandbox, {
    signal: testSignal(),
    ...request,
    onStdout: (chunk) => {
      collected.firstStdoutAt ??= Date.now() - start;
      collected.stdout.push(typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk);
    },
    onStderr: (chunk) => {
      collected.stderr.push(typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk);
    },
  });
  return { ...collected, exitCode: exit.exitCode, signal: exit.signal, ms: Date.now() - start };
}

const text = (chunks: Uint8Array[]): string => decoder.decode(Buffer.concat(chunks));

/** Run directories left under the state dir (the pid index of E4 and the pollers' wake files aside). */
const leftovers = (bed: ExecBed): string[] =>
  existsSync(bed.ctx.stateDir)
    ? readdirSync(bed.ctx.stateDir).filter((name) => name !== "proc" && name !== "poll")
    : [];

describe.skipIf(!hasBusybox()).each(EXEC_VARIANTS)(
  "E3 streaming on $userland (exit codes: $exitCodes, stdin: $stdin)",
  (variant) => {
    let bed: ExecBed;
    beforeAll(async () => {
      bed = await createExecBed(variant);
    });
    afterAll(async () => {
      await bed.cleanup();
    });

    test("stdout, stderr and the exit code are kept apart, and the run directory is removed", async () => {
      const result = await stream(bed, { command: { shell: "echo out; echo err >&2; exit 7" } });
      expect(text(result.stdout)).toBe("out\n");
      expect(text(result.stderr)).toBe("err\n");
      expect(result.exitCode).toBe(7);
      expect(leftovers(bed)).toEqual([]);
    });

    test("argv commands, cwd and env arrive unchanged (E1 inside the detached command)", async () => {
      const hostile = 'it\'s "quoted" $(touch pwned) `id` \n ünïcödé ✓';
      const result = await stream(bed, {
        command: { argv: ["printf", "%s|%s|%s", hostile, "$HOME"] },
      });
      expect(text(result.stdout)).toBe(`${hostile}|$HOME|`);
      await bed.run("mkdir -p 'sub dir'");
      const inDir = await stream(bed, {
        command: { shell: 'pwd; printf %s "$SBOX_V"' },
        cwd: `${bed.root}/sub dir`,
        env: { SBOX_V: hostile },
      });
      expect(text(inDir.stdout)).toBe(`${bed.root}/sub dir\n${hostile}`);
      expect(existsSync(`${bed.root}/pwned`)).toBe(false);
    });

    test("a missing cwd fails the command instead of running it elsewhere", async () => {
      const result = await stream(bed, {
        command: { shell: "touch created-here" },
        cwd: `${bed.root}/missing`,
      });
      expect(result.exitCode).toBe(126);
      expect(text(result.stderr)).toContain("missing");
      expect(existsSync(`${bed.root}/created-here`)).toBe(false);
    });

    test("output arrives while the command runs: the first chunk long before the end", async () => {
      const result = await stream(bed, { command: { shell: "echo a; sleep 2; echo b" } });
      expect(text(result.stdout)).toBe("a\nb\n");
      expect(result.ms).toBeGreaterThanOrEqual(2000);
      expect(result.firstStdoutAt).toBeLessThan(1500);
      expect(result.stdout.length).toBeGreaterThanOrEqual(2);
    });

    // The text-only variant is the hardest path (base64 polls through the exit-code marker); once per userland.
    test.runIf(!variant.exitCodes)(
      "50 MB of output arrives complete, in order, in bounded pieces",
      async () => {
        let total = 0;
        let pieces = 0;
        let wrong = 0;
        const exit = await emulatedExecStream(bed.ctx)(bed.sandbox, {
          command: { shell: "head -c 52428800 /dev/zero | tr '\\0' a; echo end >&2" },
          signal: testSignal(),
          onStdout: (chunk) => {
            const bytes = typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk;
            pieces++;
            total += bytes.length;
            for (const byte of bytes) if (byte !== 0x61) wrong++;
          },
          onStderr: () => {},
        });
        expect(exit.exitCode).toBe(0);
        expect(total).toBe(52428800);
        expect(wrong).toBe(0);
        expect(pieces).toBeGreaterThan(1);
      },
    );

    test("binary output with every byte value survives the text-only transport", async () => {
      const result = await stream(bed, {
        command: { shell: 'i=0; while [ $i -lt 256 ]; do printf "\\\\$(printf %o $i)"; i=$((i+1)); done' },
      });
      const bytes = Buffer.concat(result.stdout);
      expect([...bytes]).toEqual(Array.from({ length: 256 }, (_, i) => i));
    });

    test("stdin bytes (larger than one command line) are fed to the command", async () => {
      const input = new Uint8Array(200_000).map((_, i) => (i * 7) % 256);
      const result = await stream(bed, { command: { shell: "cat" }, stdin: input });
      expect(Buffer.concat(result.stdout).equals(Buffer.from(input))).toBe(true);
    });

    test("a ReadableStream stdin is read to its end before the command starts", async () => {
      const parts = ["first line\n", "second ", "line\n", "ünïcödé\n"];
      const source = new ReadableStream<Uint8Array>({
        start(controller) {
          for (const part of parts) controller.enqueue(new TextEncoder().encode(part));
          controller.close();
        },
      });
      const result = await stream(bed, { command: { shell: "cat" }, stdin: source });
      expect(text(result.stdout)).toBe(parts.join(""));
    });

    test("a state directory with spaces, quotes and unicode in its path works", async () => {
      const stateDir = `${bed.root}/state 'dir' "$(touch pwned)" ü`;
      const result = await stream(
        { ...bed, ctx: { ...bed.ctx, stateDir } },
        {
          command: { shell: "cat; echo end" },
          stdin: new TextEncoder().encode("in\n"),
        },
      );
      expect(text(result.stdout)).toBe("in\nend\n");
      expect(readdirSync(stateDir).filter((name) => name !== "poll")).toEqual([]);
      expect(existsSync(`${bed.root}/pwned`)).toBe(false);
    });

    test("a command longer than one command line is uploaded, not passed inline", async () => {
      const filler = "x'y".repeat(40_000);
      const result = await stream(bed, {
        command: { shell: `v='${filler.replace(/'/g, "'\\''")}'\necho \${#v}` },
      });
      expect(text(result.stdout)).toBe(`${filler.length}\n`);
      expect(bed.provider.longestCommandBytes()).toBeLessThanOrEqual(MAX_COMMAND_LINE_BYTES);
    });

    test("no stdin means end of file at once", async () => {
      const result = await stream(bed, { command: { shell: "cat; echo done" } });
      expect(text(result.stdout)).toBe("done\n");
    });

    /** Starts a command whose children sleep, aborts it through `signal`, returns its pgid and the error. */
    async function abortTree(signal: AbortSignal): Promise<{ pgid: number; error: unknown }> {
      let printed = "";
      const error = await emulatedExecStream(bed.ctx)(bed.sandbox, {
        // $$ of the detached script is its pid, which is also its process group.
        command: { shell: "sleep 1000 & sleep 1000 & echo $$; wait" },
        signal,
        onStdout: (chunk) => {
          printed += typeof chunk === "string" ? chunk : decoder.decode(chunk);
        },
        onStderr: () => {},
      }).then(
        () => undefined,
        (e: unknown) => e,
      );
      return { pgid: Number(printed.trim()), error };
    }

    test("a timeout kills the whole process group and rejects with Timeout", async () => {
      const deadline = withTimeout(undefined, 700, "command");
      const { pgid, error } = await abortTree(deadline.signal);
      deadline.dispose();
      expect(SandboxError.isInstance(error) && error.code).toBe("Timeout");
      expect(pgid).toBeGreaterThan(1);
      expect(groupAlive(pgid)).toBe(false);
      expect(leftovers(bed)).toEqual([]);
    });

    test("an abort kills the whole process group and rejects with Aborted", async () => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error("user gave up")), 500);
      const { pgid, error } = await abortTree(controller.signal);
      expect(SandboxError.isInstance(error) && error.code).toBe("Aborted");
      expect(pgid).toBeGreaterThan(1);
      expect(groupAlive(pgid)).toBe(false);
    });

    test("a supervisor killed from outside is reported as lost, with a Provider error", async () => {
      let runDir: string | undefined;
      const pending = stream(bed, { command: { shell: "echo started; sleep 30" } }).catch((e: unknown) => e);
      // Find the run once its command has started, then kill only its supervisor.
      for (let i = 0; i < 200 && runDir === undefined; i++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
        runDir = leftovers(bed)
          .map((name) => `${bed.ctx.stateDir}/${name}`)
          .find((dir) => existsSync(`${dir}/pid`));
      }
      expect(runDir).toBeDefined();
      const runner = Number(readFileSync(`${runDir}/runner`, "utf8").split(" ")[0]);
      const group = Number(readFileSync(`${runDir}/pid`, "utf8"));
      process.kill(runner, "SIGKILL");
      const error = await pending;
      try {
        process.kill(-group, "SIGKILL");
      } catch {
        // already gone
      }
      expect(SandboxError.isInstance(error) && error.code).toBe("Provider");
      expect(String((error as Error).message)).toMatch(/lost its supervisor/);
    });

    test("an already aborted signal runs nothing", async () => {
      const controller = new AbortController();
      controller.abort();
      const error = await stream(bed, {
        command: { shell: "touch never-made" },
        signal: controller.signal,
      }).catch((e: unknown) => e);
      expect(SandboxError.isInstance(error) && error.code).toBe("Aborted");
      expect(existsSync(`${bed.root}/never-made`)).toBe(false);
    });

    test("the longest command line stays within 64 KiB", () => {
      expect(bed.provider.longestCommandBytes()).toBeGreaterThan(0);
      expect(bed.provider.longestCommandBytes()).toBeLessThanOrEqual(MAX_COMMAND_LINE_BYTES);
    });
  },
);
