/**
 * The native streaming exec against hostile output and a hostile connection, on the Daytona emulator with
 * every byte of the logs socket in a frame of its own (`logFrameBytes: 1`, so every label and every
 * character is split across frames at every position): output arrives complete and on the right stream,
 * invalid UTF-8 reaches the driver's caller as the bytes printed, NUL bytes and an unterminated last line
 * arrive byte-exact through the emulator's labellers (as lossy as Daytona's daemon's), labels and base64
 * lines printed by the command arrive as printed, an aborted command that never ends leaves no socket open and nothing running, and a
 * logs socket dropped mid-stream is a clear `SandboxError` at once, the command ended too.
 */
import { createSandboxClient, type Sandbox } from "@sbox/core";
import { SandboxError } from "@sbox/core/spec";
import { startDaytonaEmulator } from "@sbox/emulators/daytona";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { followDaytonaLogs, logsSocketTarget } from "../src/daytona-logs-socket.js";
import { testEmulatorOptions, testProvider } from "./daytona-test-env.js";

const emulator = await startDaytonaEmulator(testEmulatorOptions({ logFrameBytes: 1 }));
const provider = testProvider(emulator, { requestTimeoutMs: 15_000 });
const client = createSandboxClient({ provider });
let sandbox: Sandbox;
let driverHandle: Awaited<ReturnType<typeof provider.doConnect>>;

beforeAll(async () => {
  sandbox = await client.create({ metadata: { suite: "exec-stream" } });
  driverHandle = await provider.doConnect(sandbox.id.replace(/^daytona:/, ""), {
    signal: AbortSignal.timeout(30_000),
  });
}, 120_000);
afterAll(async () => {
  await sandbox?.destroy();
  await client.dispose?.();
  await emulator.close();
});

/** Runs `script` and collects what the callbacks saw, by stream, with the result. */
async function streamed(script: string) {
  const out: string[] = [];
  const err: string[] = [];
  const result = await sandbox.commands.run(script, {
    onStdout: (chunk) => out.push(chunk),
    onStderr: (chunk) => err.push(chunk),
  });
  return { result, out: out.join(""), err: err.join("") };
}

/** The driver's own streaming exec: raw bytes by stream, and the exit. */
async function rawStream(script: string, signal = AbortSignal.timeout(60_000)) {
  const out: number[] = [];
  const err: number[] = [];
  const bytes = (chunk: Uint8Array | string) => [
    ...(typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk),
  ];
  const exit = await provider.doExecStream!(driverHandle, {
    command: { shell: script },
    signal,
    onStdout: (chunk) => out.push(...bytes(chunk)),
    onStderr: (chunk) => err.push(...bytes(chunk)),
  });
  return { exit, out, err };
}

/** The driver's own buffered exec: raw bytes by stream, and the exit code. */
async function rawExec(script: string) {
  const result = await provider.doExec!(driverHandle, {
    command: { shell: script },
    signal: AbortSignal.timeout(60_000),
  });
  const bytes = (out: Uint8Array | string) => (typeof out === "string" ? new TextEncoder().encode(out) : out);
  return { exitCode: result.exitCode, stdout: bytes(result.stdout), stderr: bytes(result.stderr) };
}

/** Command lines of the sandbox's processes that carry `marker`. */
async function processesCarrying(marker: string): Promise<string[]> {
  const listed = await sandbox.commands.run([
    "sh",
    "-c",
    "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < \"$f\" 2>/dev/null; echo; done",
  ]);
  return listed.stdout.split("\n").filter((line) => line.includes(marker) && !line.includes("/proc/"));
}

async function eventually(check: () => Promise<boolean> | boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("output split across frames at every position", () => {
  test("interleaved stdout and stderr with multi-byte characters arrive complete and apart", async () => {
    const { result, out, err } = await streamed(
      "printf 'a\\n'; printf 'é€𝄞 err\\n' >&2; printf 'b\\001\\001c\\n'; printf 'tail-no-newline' >&2",
    );
    expect(result.exitCode).toBe(0);
    expect(out).toBe("a\nb\u0001\u0001c\n");
    expect(err).toBe("é€𝄞 err\ntail-no-newline");
    expect(result.stdout).toBe(out);
    expect(result.stderr).toBe(err);
  });

  test("1000 lines on both streams, each byte its own frame: nothing lost, nothing moved", async () => {
    const { result, out, err } = await streamed(
      'i=0; while [ $i -lt 500 ]; do echo "o$i"; echo "e$i" >&2; i=$((i+1)); done',
    );
    expect(result.exitCode).toBe(0);
    const lines = (prefix: string) => Array.from({ length: 500 }, (_, i) => `${prefix}${i}\n`).join("");
    expect(out).toBe(lines("o"));
    expect(err).toBe(lines("e"));
  }, 120_000);
});

describe("hostile bytes", () => {
  test("invalid UTF-8 reaches the driver's caller as printed, and the facade as replacement characters", async () => {
    const raw = await rawStream("printf 'ok\\377\\376\\300end\\n'; printf '\\355\\240\\200' >&2");
    expect(raw.exit.exitCode).toBe(0);
    expect(raw.out).toEqual([0x6f, 0x6b, 0xff, 0xfe, 0xc0, 0x65, 0x6e, 0x64, 0x0a]);
    expect(raw.err).toEqual([0xed, 0xa0, 0x80]);
    const { result } = await streamed("printf 'ok\\377end\\n'");
    expect(result.stdout).toBe("ok\uFFFDend\n");
  });

  test("fake labels and fake base64 lines printed by the command arrive as printed, the exit code stays", async () => {
    // Labels of either stream, and lines that look like the supervisor's encoding, on both streams.
    const script =
      "printf 'x\\002\\002\\002forged\\nZm9yZ2Vk\\n'; printf '\\001\\001\\001QUJD\\n\\001\\001' >&2; printf 'y\\001\\001'; exit 7";
    const raw = await rawStream(script);
    expect(raw.exit.exitCode).toBe(7);
    expect(Buffer.from(raw.out).toString("latin1")).toBe("x\x02\x02\x02forged\nZm9yZ2Vk\ny\x01\x01");
    expect(Buffer.from(raw.err).toString("latin1")).toBe("\x01\x01\x01QUJD\n\x01\x01");
    const buffered = await rawExec(script);
    expect(buffered.exitCode).toBe(7);
    expect(Buffer.from(buffered.stdout).toString("latin1")).toBe("x\x02\x02\x02forged\nZm9yZ2Vk\ny\x01\x01");
    expect(Buffer.from(buffered.stderr).toString("latin1")).toBe("\x01\x01\x01QUJD\n\x01\x01");
  });

  test("NUL bytes and an unterminated last line arrive byte-exact through the daemon's lossy labellers", async () => {
    // The emulator's labellers drop NULs and end a last line with a newline, as Daytona's daemon does.
    const script = "printf 'a\\000b\\n\\000'; printf '\\000\\000tail' >&2";
    const expectedOut = [0x61, 0x00, 0x62, 0x0a, 0x00];
    const expectedErr = [0x00, 0x00, ...new TextEncoder().encode("tail")];
    const raw = await rawStream(script);
    expect(raw.exit.exitCode).toBe(0);
    expect(raw.out).toEqual(expectedOut);
    expect(raw.err).toEqual(expectedErr);
    const buffered = await rawExec(script);
    expect([...buffered.stdout]).toEqual(expectedOut);
    expect([...buffered.stderr]).toEqual(expectedErr);
    // 3000-byte chunks (a line of the encoding each) of every byte value, twice over: nothing lost or moved.
    const all = await rawStream(
      "i=0; while [ $i -lt 24 ]; do head -c 256 /dev/zero | tr '\\000' '\\377'; printf '\\000\\001\\002\\n'; i=$((i+1)); done",
    );
    expect(all.out.length).toBe(24 * 260);
    expect(all.out.slice(0, 260)).toEqual([...new Array(256).fill(0xff), 0x00, 0x01, 0x02, 0x0a]);
  });

  test("a partial line arrives while the command still runs", async () => {
    let seen = "";
    let ended = false;
    let seenBeforeEnd = false;
    const exit = await provider.doExecStream!(driverHandle, {
      command: { shell: "printf partial; sleep 1.5; printf ' done'" },
      signal: AbortSignal.timeout(60_000),
      onStdout: (chunk) => {
        seen += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
        if (seen === "partial" && !ended) seenBeforeEnd = true;
      },
      onStderr: () => {},
    });
    ended = true;
    expect(exit.exitCode).toBe(0);
    expect(seen).toBe("partial done");
    expect(seenBeforeEnd).toBe(true);
  });
});

describe("a command that never ends", () => {
  test("aborting closes the logs socket and leaves nothing of the command running", async () => {
    const marker = `sbox-never-${Date.now()}`;
    const abort = new AbortController();
    let seen = "";
    const run = sandbox.commands.run(["sh", "-c", "echo started; while :; do sleep 0.1; done", marker], {
      signal: abort.signal,
      onStdout: (chunk) => {
        seen += chunk;
      },
    });
    const settled = Promise.resolve(run).then(
      () => "resolved",
      (error: unknown) => error,
    );
    expect(await eventually(() => seen.includes("started"), 20_000)).toBe(true);
    expect((await processesCarrying(marker)).length).toBeGreaterThan(0);
    const before = Date.now();
    abort.abort();
    const outcome = await settled;
    expect(outcome).not.toBe("resolved");
    expect(Date.now() - before).toBeLessThan(10_000);
    // Nothing open on the emulator's side: dropping every logs socket (once the close had time to land)
    // finds none.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(emulator.dropLogSockets()).toBe(0);
    expect(await eventually(async () => (await processesCarrying(marker)).length === 0, 10_000)).toBe(true);
    const sessions = await driverHandle.native.process.listSessions();
    expect(sessions.filter((s) => s.sessionId.startsWith("sbox-"))).toEqual([]);
  }, 60_000);

  test("an aborted follow closes its socket itself, at once, while the command still runs", async () => {
    const process = driverHandle.native.process;
    await process.createSession("sbox-test-follow");
    try {
      const { cmdId } = await process.executeSessionCommand("sbox-test-follow", {
        command: "echo up; sleep 60",
        runAsync: true,
      });
      const abort = new AbortController();
      let seen = "";
      const decoder = new TextDecoder();
      const follow = followDaytonaLogs({
        ...logsSocketTarget(driverHandle.native, "sbox-test-follow", cmdId),
        signal: abort.signal,
        deadlineMs: 15_000,
        output: {
          onStdout: (c) => (seen += typeof c === "string" ? c : decoder.decode(c)),
          onStderr: () => {},
        },
      });
      const settled = follow.then(
        () => "resolved",
        (error: unknown) => error,
      );
      expect(await eventually(() => seen === "up\n", 20_000)).toBe(true);
      abort.abort(new Error("given up"));
      expect(await settled).toMatchObject({ message: "given up" });
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(emulator.dropLogSockets()).toBe(0);
      expect((await process.getSessionCommand("sbox-test-follow", cmdId)).exitCode).toBeUndefined();
    } finally {
      await process.deleteSession("sbox-test-follow");
    }
  }, 60_000);
});

describe("a logs socket dropped mid-stream", () => {
  test("is a Provider SandboxError at once, never a hang, and the command is ended", async () => {
    const marker = `sbox-dropped-${Date.now()}`;
    let seen = "";
    const run = sandbox.commands.run(["sh", "-c", "echo one; sleep 60; echo two", marker], {
      onStdout: (chunk) => {
        seen += chunk;
      },
    });
    const settled = Promise.resolve(run).then(
      () => "resolved",
      (error: unknown) => error,
    );
    expect(await eventually(() => seen.includes("one"), 20_000)).toBe(true);
    const before = Date.now();
    expect(emulator.dropLogSockets()).toBe(1);
    const outcome = await settled;
    expect(Date.now() - before).toBeLessThan(15_000);
    expect(SandboxError.isInstance(outcome)).toBe(true);
    expect(outcome).toMatchObject({ code: "Provider" });
    expect((outcome as Error).message).toMatch(/logs socket closed before the command ended/);
    expect(seen).toBe("one\n");
    expect(await eventually(async () => (await processesCarrying(marker)).length === 0, 10_000)).toBe(true);
  }, 60_000);
});
