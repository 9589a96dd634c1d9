import type { DriverSandbox } from "@sbox/core/spec";
import { SandboxError } from "@sbox/core/spec";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { DockerSandboxNative } from "../src/index.js";
import { docker } from "../src/index.js";
import {
  call,
  ENGINE,
  ensureTestImage,
  RUN_ID,
  RUN_LABEL,
  removeLeftovers,
  SKIP_NOTE,
  TEST_IMAGE,
  text,
} from "./docker-test-env.js";

const provider = docker({ image: TEST_IMAGE, labels: { [RUN_LABEL]: RUN_ID } });

async function run(
  s: DriverSandbox<DockerSandboxNative>,
  command: string | string[],
  extra: Record<string, unknown> = {},
) {
  const result = await provider.doExec(s, {
    command: typeof command === "string" ? { shell: command } : { argv: command },
    ...call(),
    ...extra,
  });
  return { stdout: text(result.stdout), stderr: text(result.stderr), exitCode: result.exitCode };
}

describe.skipIf(!ENGINE.ok)(`docker exec${SKIP_NOTE}`, () => {
  let sandbox: DriverSandbox<DockerSandboxNative>;

  beforeAll(async () => {
    ensureTestImage();
    sandbox = await provider.doCreate({ env: { FROM_SPEC: "spec value" } }, call());
  });

  afterAll(async () => {
    if (sandbox) await provider.doDestroy(sandbox, call());
    expect(await removeLeftovers()).toBe(0);
  });

  test("stdout and stderr arrive separately with the real exit code", async () => {
    const result = await run(sandbox, "echo out; echo err >&2; exit 7");
    expect(result).toEqual({ stdout: "out\n", stderr: "err\n", exitCode: 7 });
  });

  test.each([0, 1, 42, 128, 255])("exit code %i is reported as data", async (code) => {
    expect((await run(sandbox, `exit ${code}`)).exitCode).toBe(code);
  });

  test("argv words reach the program unchanged, hostile ones included", async () => {
    const words = [
      "plain",
      "with space",
      "quote ' and \" both",
      "$(echo no)",
      "`echo no`",
      "new\nline",
      "ünïcödé ✓",
      "*",
      "",
    ];
    const result = await run(sandbox, ["printf", "[%s]\\n", ...words]);
    expect(result.stdout).toBe(words.map((w) => `[${w}]\n`).join(""));
  });

  test("a missing program exits 127 with the reason on stderr, never on stdout", async () => {
    const result = await run(sandbox, ["/no/such/program"]);
    expect(result.exitCode).toBe(127);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/no such file/i);
  });

  test("per-command env and cwd, with hostile values, on top of the spec env", async () => {
    const hostile = "a'b\"c $(id) `id` \\ \n end ✓";
    const result = await run(sandbox, 'printf "%s|%s|%s" "$HOSTILE" "$FROM_SPEC" "$(pwd)"', {
      env: { HOSTILE: hostile },
      cwd: "/etc",
    });
    expect(result.stdout).toBe(`${hostile}|spec value|/etc`);
  });

  test("a missing cwd fails the command without running it", async () => {
    const result = await run(sandbox, "touch /tmp/ran-anyway", { cwd: "/does/not/exist" });
    expect(result.exitCode).not.toBe(0);
    expect((await run(sandbox, "test -e /tmp/ran-anyway")).exitCode).toBe(1);
  });

  test("stdin bytes are fed and closed", async () => {
    const bytes = new Uint8Array(256).map((_, i) => i);
    const result = await provider.doExec(sandbox, { command: { shell: "cat" }, stdin: bytes, ...call() });
    expect(Buffer.from(result.stdout as Uint8Array)).toEqual(Buffer.from(bytes));
  });

  test("a stdin stream larger than one write is streamed with backpressure", async () => {
    const chunk = new Uint8Array(1024 * 1024).fill(120);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 8) return controller.close();
        sent++;
        controller.enqueue(chunk);
      },
    });
    const result = await provider.doExec(sandbox, { command: { shell: "wc -c" }, stdin: stream, ...call() });
    expect(text(result.stdout).trim()).toBe(String(8 * 1024 * 1024));
  });

  test("output streams while the command runs: the command waits for a reaction to its first chunk", async () => {
    const seen: string[] = [];
    let released = false;
    const exit = await provider.doExecStream!(sandbox, {
      command: { shell: "echo ready; while [ ! -e /tmp/go-stream ]; do sleep 0.05; done; echo done" },
      ...call(30_000),
      onStdout(chunk) {
        seen.push(text(chunk));
        if (!released && seen.join("").includes("ready")) {
          released = true;
          void run(sandbox, "touch /tmp/go-stream");
        }
      },
      onStderr() {},
    });
    expect(exit.exitCode).toBe(0);
    expect(seen.join("")).toBe("ready\ndone\n");
  });

  test("50 MB of output arrives without loss", async () => {
    let bytes = 0;
    let last = "";
    const exit = await provider.doExecStream!(sandbox, {
      command: {
        shell:
          "yes 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmn | head -c 52428800; echo END >&2",
      },
      ...call(),
      onStdout(chunk) {
        bytes += chunk.length;
      },
      onStderr(chunk) {
        last += text(chunk);
      },
    });
    expect(exit.exitCode).toBe(0);
    expect(bytes).toBe(52428800);
    expect(last).toBe("END\n");
  });

  test("aborting a command kills its whole tree, also children that left the session", async () => {
    const controller = new AbortController();
    const pending = provider.doExecStream!(sandbox, {
      command: { shell: "sleep 1001 & setsid sleep 1002 & echo started; wait" },
      signal: controller.signal,
      onStdout(chunk) {
        if (text(chunk).includes("started")) controller.abort();
      },
      onStderr() {},
    });
    await expect(pending).rejects.toMatchObject({ code: "Aborted" });
    const ps = await run(sandbox, "ps -o pid,args | grep -c '[s]leep 100' || true");
    expect(ps.stdout.trim()).toBe("0");
  });

  test("a timeout reason on the signal rejects with Timeout after killing the tree", async () => {
    const pending = provider.doExec(sandbox, {
      command: { shell: "sleep 1003" },
      signal: AbortSignal.timeout(300),
    });
    await expect(pending).rejects.toMatchObject({ code: "Timeout" });
    const ps = await run(sandbox, "ps -o args | grep -c '[s]leep 1003' || true");
    expect(ps.stdout.trim()).toBe("0");
  });

  test("doKillProcess signals a process, its descendants and its group; unknown pids are NotFound", async () => {
    const started = await run(
      sandbox,
      "setsid sh -c 'sleep 1004 & sleep 1005 & wait' >/dev/null 2>&1 & echo $!",
    );
    const pid = Number(started.stdout.trim());
    expect(pid).toBeGreaterThan(1);
    await provider.doKillProcess!(sandbox, pid, "SIGTERM", call());
    let left = "1";
    for (let i = 0; i < 50 && left !== "0"; i++) {
      left = (await run(sandbox, "ps -o args | grep -c '[s]leep 100[45]' || true")).stdout.trim();
    }
    expect(left).toBe("0");
    await expect(provider.doKillProcess!(sandbox, 999999, "SIGTERM", call())).rejects.toMatchObject({
      code: "NotFound",
    });
    await expect(provider.doKillProcess!(sandbox, 1, "SIGKILL", call())).rejects.toMatchObject({
      code: "Validation",
    });
  });

  test("twenty commands in parallel on one sandbox", async () => {
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => run(sandbox, `echo ${i}`)));
    expect(results.map((r) => r.stdout.trim())).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
  });

  test("a pty echoes, resizes and reports its exit", async () => {
    let output = "";
    const pty = await provider.doCreatePty!(sandbox, {
      cols: 80,
      rows: 24,
      // Engines before API 1.42 size the terminal only after start: read once before asking.
      command: "read first; stty size; read line; stty size; echo got:$line; exit 3",
      ...call(),
      onData(data) {
        output += text(data);
      },
    });
    expect(pty.pid).toBeGreaterThan(1);
    await pty.write("go\r");
    for (let i = 0; i < 100 && !output.includes("24 80"); i++) await new Promise((r) => setTimeout(r, 20));
    expect(output).toContain("24 80");
    await pty.resize(100, 40);
    await pty.write("hello\r");
    const exit = await pty.wait();
    expect(exit.exitCode).toBe(3);
    expect(output).toContain("40 100");
    expect(output).toContain("got:hello");
  });

  test("errors are SandboxErrors with codes", async () => {
    const gone = await provider.doConnect(sandbox.id, call());
    await expect(provider.doConnect("sbox-000000000000", call())).rejects.toMatchObject({ code: "NotFound" });
    await expect(provider.doConnect("../etc", call())).rejects.toMatchObject({ code: "NotFound" });
    const error = await provider.doExec(gone, { command: { argv: [] }, ...call() }).catch((e: unknown) => e);
    expect(SandboxError.isInstance(error) && error.code).toBe("Validation");
  });
});
