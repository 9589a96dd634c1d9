import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { hasBusybox } from "../../test/sh-driver.js";
import type { DriverCommand, DriverProcess } from "../spec/provider-spec.js";
import { emulatedBackground } from "./e4-background.js";
import type { EmulationContext } from "./emulation-context.js";
import { MAX_COMMAND_LINE_BYTES } from "./emulation-context.js";
import { createExecBed, EXEC_VARIANTS, type ExecBed, groupAlive, testSignal } from "./shell-exec-test-bed.js";

const decoder = new TextDecoder();

/** Output collected from the callbacks of one spawn or connect. */
class Output {
  stdout = "";
  stderr = "";
  readonly callbacks = {
    onStdout: (chunk: Uint8Array | string) => {
      this.stdout += typeof chunk === "string" ? chunk : decoder.decode(chunk);
    },
    onStderr: (chunk: Uint8Array | string) => {
      this.stderr += typeof chunk === "string" ? chunk : decoder.decode(chunk);
    },
  };
  /** Resolves once stdout satisfies `ready`; fails the test after a while instead of hanging. */
  async until(ready: (stdout: string) => boolean): Promise<void> {
    const deadline = Date.now() + 20_000;
    while (!ready(this.stdout)) {
      if (Date.now() > deadline) throw new Error(`output never became ready: ${JSON.stringify(this.stdout)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

describe.skipIf(!hasBusybox()).each(EXEC_VARIANTS)(
  "E4 background on $userland (exit codes: $exitCodes, stdin: $stdin)",
  (variant) => {
    let bed: ExecBed;
    let background: ReturnType<typeof emulatedBackground>;
    beforeAll(async () => {
      bed = await createExecBed(variant);
      background = emulatedBackground(bed.ctx);
    });
    afterAll(async () => {
      // Leave nothing running: kill every process the tests recorded.
      for (const info of await background.doListProcesses(bed.sandbox, { signal: testSignal() })) {
        if (info.running)
          await background.doKillProcess(bed.sandbox, info.pid, "SIGKILL", { signal: testSignal() });
      }
      await bed.cleanup();
    });

    const spawn = async (
      command: DriverCommand,
      extra: { cwd?: string; env?: Record<string, string>; stdin?: Uint8Array; signal?: AbortSignal } = {},
    ): Promise<{ process: DriverProcess; output: Output }> => {
      const output = new Output();
      const process = await background.doSpawn(bed.sandbox, {
        command,
        signal: extra.signal ?? testSignal(),
        ...(extra.cwd === undefined ? {} : { cwd: extra.cwd }),
        ...(extra.env === undefined ? {} : { env: extra.env }),
        ...(extra.stdin === undefined ? {} : { stdin: extra.stdin }),
        ...output.callbacks,
      });
      return { process, output };
    };

    /** Another client: its own exec and its own emulation objects, sharing only the sandbox. */
    const otherClient = (): ReturnType<typeof emulatedBackground> => {
      const ctx: EmulationContext = bed.secondClient();
      return emulatedBackground(ctx);
    };

    test("a sandbox handle's own emulationStateDir keeps its processes apart from the provider-wide one", async () => {
      const own = { ...bed.sandbox, emulationStateDir: `${bed.root}/own state/` };
      const output = new Output();
      const process = await background.doSpawn(own, {
        command: { shell: "echo started; sleep 30" },
        signal: testSignal(),
        ...output.callbacks,
      });
      try {
        await output.until((stdout) => stdout === "started\n");
        expect(existsSync(`${bed.root}/own state/proc/${process.pid}`)).toBe(true);
        const listedOwn = await background.doListProcesses(own, { signal: testSignal() });
        expect(listedOwn.map((p) => p.pid)).toContain(process.pid);
        const listedShared = await background.doListProcesses(bed.sandbox, { signal: testSignal() });
        expect(listedShared.map((p) => p.pid)).not.toContain(process.pid);
      } finally {
        await process.kill("SIGKILL");
        await process.wait().catch(() => undefined);
      }
    });

    test("a spawned command delivers its output and exit code", async () => {
      const { process, output } = await spawn({
        shell: "echo start; echo oops >&2; sleep 0.3; echo done; exit 4",
      });
      expect(process.pid).toBeGreaterThan(1);
      expect(await process.wait()).toEqual({ exitCode: 4 });
      expect(output.stdout).toBe("start\ndone\n");
      expect(output.stderr).toBe("oops\n");
    });

    test("cwd and env apply to the spawned command", async () => {
      const { process, output } = await spawn(
        { argv: ["sh", "-c", 'pwd; printf %s "$SBOX_X"'] },
        { cwd: "/tmp", env: { SBOX_X: "x 'y' $(z)" } },
      );
      await process.wait();
      expect(output.stdout).toBe("/tmp\nx 'y' $(z)");
    });

    test("list, connect from another client, and kill of the whole tree", async () => {
      const command = '# it\'s "ünï" ✓\necho pid=$$; sleep 1000 & sleep 1000 & wait';
      const { process, output } = await spawn({ shell: command });
      await output.until((s) => s.includes("pid="));
      expect(output.stdout).toBe(`pid=${process.pid}\n`);
      expect(groupAlive(process.pid)).toBe(true);

      const other = otherClient();
      const listed = await other.doListProcesses(bed.sandbox, { signal: testSignal() });
      expect(listed).toContainEqual({ pid: process.pid, command, running: true });

      const replay = new Output();
      const connected = await other.doConnectProcess(bed.sandbox, process.pid, {
        signal: testSignal(),
        ...replay.callbacks,
      });
      await replay.until((s) => s.includes("pid="));
      expect(replay.stdout).toBe(`pid=${process.pid}\n`);

      await other.doKillProcess(bed.sandbox, process.pid, "TERM", { signal: testSignal() });
      expect(await process.wait()).toEqual({ exitCode: 143, signal: "SIGTERM" });
      expect(await connected.wait()).toEqual({ exitCode: 143, signal: "SIGTERM" });
      expect(groupAlive(process.pid)).toBe(false);
      const after = await background.doListProcesses(bed.sandbox, { signal: testSignal() });
      expect(after.find((p) => p.pid === process.pid)).toEqual({
        pid: process.pid,
        command,
        running: false,
        exitCode: 143,
      });
    });

    test("kill() without a signal escalates to SIGKILL for a command that ignores SIGTERM", async () => {
      const { process, output } = await spawn({
        shell: "trap '' TERM; echo ready; sleep 1000 & wait; sleep 1000",
      });
      await output.until((s) => s.includes("ready"));
      await process.kill();
      expect(await process.wait()).toEqual({ exitCode: 137, signal: "SIGKILL" });
      expect(groupAlive(process.pid)).toBe(false);
    });

    test("stdin through the FIFO: written pieces arrive while it stays open, close gives end of file", async () => {
      const { process, output } = await spawn({ shell: "cat; echo closed" });
      await process.writeStdin!(new TextEncoder().encode("hello\n"));
      await output.until((s) => s === "hello\n");
      await process.writeStdin!(new TextEncoder().encode("wörld\n"));
      await output.until((s) => s === "hello\nwörld\n");
      await process.closeStdin!();
      expect(await process.wait()).toEqual({ exitCode: 0 });
      expect(output.stdout).toBe("hello\nwörld\nclosed\n");
      await expect(process.writeStdin!(new Uint8Array([1]))).rejects.toMatchObject({ code: "InvalidState" });
    });

    test("large stdin (more than one command line) arrives complete", async () => {
      const { process, output } = await spawn({ shell: "wc -c" });
      const data = new Uint8Array(150_000).map((_, i) => (i * 31) % 256);
      await process.writeStdin!(data);
      await process.closeStdin!();
      expect(await process.wait()).toEqual({ exitCode: 0 });
      expect(output.stdout.trim()).toBe("150000");
    });

    test("stdin given at spawn is written and then closed", async () => {
      const { process, output } = await spawn(
        { shell: "cat" },
        { stdin: new TextEncoder().encode("given\nat spawn") },
      );
      expect(await process.wait()).toEqual({ exitCode: 0 });
      expect(output.stdout).toBe("given\nat spawn");
    });

    test("aborting the spawn signal kills the process group and wait() rejects with Aborted", async () => {
      const controller = new AbortController();
      const { process, output } = await spawn(
        { shell: "echo up; sleep 1000 & wait" },
        { signal: controller.signal },
      );
      await output.until((s) => s.includes("up"));
      controller.abort();
      await expect(process.wait()).rejects.toMatchObject({ code: "Aborted" });
      expect(groupAlive(process.pid)).toBe(false);
    });

    test("aborting a connection only stops following: the process keeps running", async () => {
      const { process, output } = await spawn({ shell: "echo up; sleep 1000" });
      await output.until((s) => s.includes("up"));
      const controller = new AbortController();
      const connected = await otherClient().doConnectProcess(bed.sandbox, process.pid, {
        signal: controller.signal,
        ...new Output().callbacks,
      });
      controller.abort();
      await expect(connected.wait()).rejects.toMatchObject({ code: "Aborted" });
      const listed = await background.doListProcesses(bed.sandbox, { signal: testSignal() });
      expect(listed.find((p) => p.pid === process.pid)?.running).toBe(true);
      await background.doKillProcess(bed.sandbox, process.pid, "KILL", { signal: testSignal() });
      expect(await process.wait()).toEqual({ exitCode: 137, signal: "SIGKILL" });
    });

    test("unknown pids are NotFound, bad pids and signals are Validation errors", async () => {
      const options = { signal: testSignal() };
      await expect(
        background.doConnectProcess(bed.sandbox, 999_999_999, { ...options, ...new Output().callbacks }),
      ).rejects.toMatchObject({
        code: "NotFound",
      });
      await expect(
        background.doKillProcess(bed.sandbox, 999_999_999, "SIGTERM", options),
      ).rejects.toMatchObject({
        code: "NotFound",
      });
      await expect(background.doKillProcess(bed.sandbox, -1, "SIGTERM", options)).rejects.toMatchObject({
        code: "Validation",
      });
      const { process } = await spawn({ shell: "sleep 1000" });
      await expect(
        background.doKillProcess(bed.sandbox, process.pid, "SIGNOPE; rm -rf /", options),
      ).rejects.toMatchObject({
        code: "Validation",
      });
      await process.kill("SIGKILL");
      await process.wait();
    });

    test("a state directory with spaces, quotes and unicode in its path works", async () => {
      const hostile = emulatedBackground({
        ...bed.ctx,
        stateDir: `${bed.root}/state 'dir' "$(touch pwned)" ü`,
      });
      const output = new Output();
      const process = await hostile.doSpawn(bed.sandbox, {
        command: { shell: "cat; echo end" },
        signal: testSignal(),
        stdin: new TextEncoder().encode("in\n"),
        ...output.callbacks,
      });
      expect(await process.wait()).toEqual({ exitCode: 0 });
      expect(output.stdout).toBe("in\nend\n");
      const listed = await hostile.doListProcesses(bed.sandbox, { signal: testSignal() });
      expect(listed).toEqual([{ pid: process.pid, command: "cat; echo end", running: false, exitCode: 0 }]);
      expect(existsSync(`${bed.root}/pwned`)).toBe(false);
    });

    test("idle followed processes share one held poll instead of polling each other awake", async () => {
      let execs = 0;
      const counted: EmulationContext = {
        ...bed.ctx,
        exec: (sandbox, script, options) => {
          execs++;
          return bed.ctx.exec(sandbox, script, options);
        },
      };
      const idle = emulatedBackground(counted);
      const processes: DriverProcess[] = [];
      for (let i = 0; i < 5; i++) {
        processes.push(
          await idle.doSpawn(bed.sandbox, {
            command: { shell: "sleep 60" },
            signal: testSignal(),
            ...new Output().callbacks,
          }),
        );
      }
      // Let the joins settle into one hold, then count: a hold lasts 5 s, so 1.5 s see at most one or two
      // execs; polls that keep waking each other make dozens.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      execs = 0;
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(execs).toBeLessThanOrEqual(3);
      for (const process of processes) await process.kill("SIGKILL");
      for (const process of processes) await process.wait().catch(() => undefined);
    });

    test("the longest command line stays within 64 KiB", () => {
      expect(bed.provider.longestCommandBytes()).toBeLessThanOrEqual(MAX_COMMAND_LINE_BYTES);
    });
  },
);
