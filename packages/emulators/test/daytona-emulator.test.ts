/**
 * The Daytona emulator's own behaviour, through the unmodified `@daytonaio/sdk`: states, the auto-stop /
 * auto-delete / auto-archive / ttl timers (on a clock the test moves), toolbox activity resetting
 * auto-stop, files kept across stop and start, the API key, and names.
 */
import { Daytona } from "@daytonaio/sdk";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import WebSocket from "ws";
import type { EmulatorClock, EmulatorTimer } from "../src/clock.js";
import { type DaytonaEmulator, startDaytonaEmulator } from "../src/daytona/index.js";

/** A clock the test moves by hand: timers fire when `advance` passes them. */
class ManualClock implements EmulatorClock {
  private at = Date.now();
  private timers: { due: number; callback: () => void; cancelled: boolean }[] = [];
  now(): number {
    return this.at;
  }
  setTimer(callback: () => void, ms: number): EmulatorTimer {
    const timer = { due: this.at + Math.max(0, ms), callback, cancelled: false };
    this.timers.push(timer);
    return {
      cancel() {
        timer.cancelled = true;
      },
    };
  }
  advance(ms: number): void {
    this.at += ms;
    const due = this.timers.filter((t) => !t.cancelled && t.due <= this.at);
    this.timers = this.timers.filter((t) => !due.includes(t));
    for (const timer of due) timer.callback();
  }
}

const MINUTE = 60_000;
const clock = new ManualClock();
let emulator: DaytonaEmulator;
let daytona: Daytona;

beforeAll(async () => {
  emulator = await startDaytonaEmulator({
    clock,
    ...(process.env.SBOX_EMULATOR_BACKEND === "docker" ? { backend: "docker" as const } : {}),
  });
  daytona = new Daytona({
    apiKey: emulator.apiKey,
    apiUrl: emulator.url,
    target: "us",
    useDeprecatedPolling: true,
  });
});
afterAll(() => emulator?.close());

/** Waits for the emulator's background work on a sandbox to reach `state`. */
async function settled(id: string, state: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (emulator.sandboxRecord(id)?.state !== state && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  expect(emulator.sandboxRecord(id)?.state).toBe(state);
}

describe("timers", () => {
  test("auto-stop after minutes without toolbox activity, then auto-delete after minutes stopped", async () => {
    const sandbox = await daytona.create({ autoStopInterval: 10, autoDeleteInterval: 5 }, { timeout: 300 });
    clock.advance(6 * MINUTE);
    // Toolbox activity starts the auto-stop countdown again.
    await sandbox.process.executeCommand("true");
    clock.advance(6 * MINUTE);
    expect(emulator.sandboxRecord(sandbox.id)?.state).toBe("started");
    clock.advance(5 * MINUTE);
    await settled(sandbox.id, "stopped");
    clock.advance(4 * MINUTE);
    expect(emulator.sandboxRecord(sandbox.id)?.state).toBe("stopped");
    clock.advance(2 * MINUTE);
    await settled(sandbox.id, "destroyed");
    await expect(daytona.get(sandbox.id)).rejects.toMatchObject({ statusCode: 404 });
  });

  test("ttlMinutes destroys a sandbox that long after creation, whatever its state", async () => {
    const sandbox = await daytona.create({ ttlMinutes: 30, autoStopInterval: 0 }, { timeout: 300 });
    await sandbox.stop(300);
    clock.advance(29 * MINUTE);
    expect(emulator.sandboxRecord(sandbox.id)?.state).toBe("stopped");
    clock.advance(2 * MINUTE);
    await settled(sandbox.id, "destroyed");
  });

  test("a stopped sandbox is archived after autoArchiveInterval and starts again with its files", async () => {
    const sandbox = await daytona.create({ autoStopInterval: 0, autoArchiveInterval: 60 }, { timeout: 300 });
    await sandbox.process.executeCommand("echo kept > /tmp/daytona-kept.txt");
    await sandbox.stop(300);
    clock.advance(61 * MINUTE);
    await settled(sandbox.id, "archived");
    await sandbox.start(300);
    const read = await sandbox.process.executeCommand("cat /tmp/daytona-kept.txt");
    expect(read.result.trim()).toBe("kept");
    await sandbox.delete();
    await settled(sandbox.id, "destroyed");
  });

  test("intervals set after create re-arm the timers", async () => {
    const sandbox = await daytona.create({ autoStopInterval: 0 }, { timeout: 300 });
    await sandbox.setAutostopInterval(2);
    expect(emulator.sandboxRecord(sandbox.id)?.autoStopInterval).toBe(2);
    clock.advance(3 * MINUTE);
    await settled(sandbox.id, "stopped");
    await sandbox.delete();
  });
});

describe("protocol", () => {
  test("a wrong API key is 401; an unknown sandbox 404; a taken name 409; an unknown snapshot 400", async () => {
    const intruder = new Daytona({
      apiKey: "dtn_wrong",
      apiUrl: emulator.url,
      target: "us",
      useDeprecatedPolling: true,
    });
    await expect(intruder.get("anything")).rejects.toMatchObject({ statusCode: 401 });
    await expect(daytona.get("no-such-sandbox")).rejects.toMatchObject({ statusCode: 404 });
    const sandbox = await daytona.create({ name: "unique-name" }, { timeout: 300 });
    await expect(daytona.create({ name: "unique-name" })).rejects.toMatchObject({ statusCode: 409 });
    expect((await daytona.get("unique-name")).id).toBe(sandbox.id);
    await expect(daytona.create({ snapshot: "no-such-snapshot" })).rejects.toMatchObject({ statusCode: 400 });
    await sandbox.delete();
  });

  test("session commands answer stdout, stderr and the exit code apart; async ones are followed by id", async () => {
    const sandbox = await daytona.create({}, { timeout: 300 });
    await sandbox.process.createSession("s");
    const sync = await sandbox.process.executeSessionCommand("s", {
      command: "printf out; printf err >&2; exit 7",
    });
    // The daemon's labellers end an unterminated last line with a newline.
    expect(sync).toMatchObject({ stdout: "out\n", stderr: "err\n", exitCode: 7 });
    const started = await sandbox.process.executeSessionCommand("s", {
      command: "sleep 0.3; echo late",
      runAsync: true,
    });
    expect(started.exitCode).toBeUndefined();
    const deadline = Date.now() + 30_000;
    let command = await sandbox.process.getSessionCommand("s", started.cmdId);
    while (command.exitCode === undefined && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      command = await sandbox.process.getSessionCommand("s", started.cmdId);
    }
    expect(command.exitCode).toBe(0);
    expect((await sandbox.process.getSessionCommandLogs("s", started.cmdId)).stdout).toBe("late\n");
    await sandbox.process.deleteSession("s");
    await expect(sandbox.process.getSession("s")).rejects.toMatchObject({ statusCode: 404 });
    await sandbox.delete();
  });
});

describe("session logs", () => {
  test("getSessionCommandLogs with callbacks follows a command's stdout and stderr live, then ends", {
    timeout: 120_000,
  }, async () => {
    const sandbox = await daytona.create({ autoStopInterval: 0 }, { timeout: 300 });
    await sandbox.process.createSession("follow");
    const { cmdId } = await sandbox.process.executeSessionCommand("follow", {
      command: "echo early; echo oops >&2; sleep 1; printf 'late \\342\\202\\254\\n'; exit 4",
      runAsync: true,
    });
    const seen: { stream: string; text: string; at: number }[] = [];
    const began = Date.now();
    await sandbox.process.getSessionCommandLogs(
      "follow",
      cmdId,
      (text) => seen.push({ stream: "stdout", text, at: Date.now() - began }),
      (text) => seen.push({ stream: "stderr", text, at: Date.now() - began }),
    );
    const out = seen
      .filter((s) => s.stream === "stdout")
      .map((s) => s.text)
      .join("");
    const err = seen
      .filter((s) => s.stream === "stderr")
      .map((s) => s.text)
      .join("");
    expect(out).toBe("early\nlate \u20ac\n");
    expect(err).toBe("oops\n");
    // "early" came before the command ended: the stream is live, not a replay at the end.
    const early = seen.find((s) => s.text.includes("early"))!;
    const late = seen.find((s) => s.text.includes("late"))!;
    expect(late.at - early.at).toBeGreaterThan(500);
    expect((await sandbox.process.getSessionCommand("follow", cmdId)).exitCode).toBe(4);
    // Following a command that already ended replays its output and ends at once.
    const again: string[] = [];
    await sandbox.process.getSessionCommandLogs(
      "follow",
      cmdId,
      (t) => again.push(t),
      (t) => again.push(t),
    );
    expect(again.join("")).toContain("late");
    await expect(
      sandbox.process.getSessionCommandLogs(
        "follow",
        "no-such-command",
        () => {},
        () => {},
      ),
    ).rejects.toBeTruthy();
    await sandbox.delete();
  });
});

describe("session labellers", () => {
  test("the log is as lossy as the daemon's: NUL bytes dropped, a newline added to an unterminated last line", {
    timeout: 120_000,
  }, async () => {
    const sandbox = await daytona.create({ autoStopInterval: 0 }, { timeout: 300 });
    await sandbox.process.createSession("lossy");
    // stdout: "a\0b\n", a line of NULs only, "  \\x\n" (blanks and a backslash kept), then "tail\0" unterminated;
    // stderr: only NULs, unterminated (nothing is left of it, so nothing is logged).
    const command = "printf 'a\\000b\\n\\000\\000\\n  \\\\x\\ntail\\000'; printf '\\000\\000' >&2";
    const sync = await sandbox.process.executeSessionCommand("lossy", { command });
    expect(sync.stdout).toBe("ab\n\n  \\x\ntail\n");
    expect(sync.stderr).toBe("");
    expect(sync.exitCode).toBe(0);
    // The log itself, labels included, as the logs socket sends it.
    const { cmdId } = await sandbox.process.executeSessionCommand("lossy", { command, runAsync: true });
    const logsUrl = `${emulator.listenUrl.replace(/^http/, "ws")}/toolbox/${sandbox.id}/process/session/lossy/command/${cmdId}/logs?follow=true`;
    const frames: Buffer[] = [];
    await new Promise<void>((resolve, reject) => {
      const ws = new WebSocket(logsUrl, { headers: { Authorization: `Bearer ${emulator.apiKey}` } });
      ws.on("message", (data: Buffer) => frames.push(data));
      ws.on("close", () => resolve());
      ws.on("error", reject);
    });
    const label = "\x01\x01\x01";
    expect(Buffer.concat(frames).toString("latin1")).toBe(
      `${label}ab\n${label}\n${label}  \\x\n${label}tail\n`,
    );
    await sandbox.delete();
  });
});

describe("session delete", () => {
  test("deleting a session ends its running commands, as Daytona's daemon does", {
    timeout: 120_000,
  }, async () => {
    const sandbox = await daytona.create({ autoStopInterval: 0 }, { timeout: 300 });
    const marker = `/tmp/session-delete-${Date.now()}`;
    await sandbox.process.createSession("doomed");
    await sandbox.process.executeSessionCommand("doomed", {
      command: `sleep 2; touch ${marker}`,
      runAsync: true,
    });
    await sandbox.process.deleteSession("doomed");
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const check = await sandbox.process.executeCommand(`test -e ${marker} && echo ran || echo killed`);
    expect(check.result.trim()).toBe("killed");
    await sandbox.delete();
  });
});

describe("preview proxy", () => {
  /** Serves `body` as /index.txt on `port` inside the sandbox, and waits until it answers there. */
  async function serve(sandbox: Awaited<ReturnType<Daytona["create"]>>, port: number, body: string) {
    await sandbox.process.executeCommand(`mkdir -p /tmp/site && printf %s '${body}' > /tmp/site/index.txt`);
    await sandbox.process.createSession("web");
    await sandbox.process.executeSessionCommand("web", {
      command: `python3 -m http.server ${port} --bind 0.0.0.0 --directory /tmp/site`,
      runAsync: true,
    });
    const deadline = Date.now() + 30_000;
    for (;;) {
      const probe = await sandbox.process.executeCommand(
        `python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:${port}/index.txt').read().decode())"`,
      );
      if (probe.result.includes(body)) return;
      if (Date.now() > deadline) throw new Error(`the server on ${port} never answered: ${probe.result}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  async function get(url: string, headers: Record<string, string> = {}) {
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(20_000) });
    return { status: response.status, body: await response.text() };
  }

  test("a private sandbox's port answers with its token (header or query), a signed URL until it expires", {
    timeout: 180_000,
  }, async () => {
    const sandbox = await daytona.create({ autoStopInterval: 0 }, { timeout: 300 });
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    await serve(sandbox, port, "private-content");
    const link = await sandbox.getPreviewLink(port);
    expect(link.token).toMatch(/^[0-9a-f]{32}$/);
    const file = `${link.url}/index.txt`;
    expect(await get(file)).toMatchObject({ status: 401 });
    expect(await get(file, { "X-Daytona-Preview-Token": "wrong" })).toMatchObject({ status: 401 });
    expect(await get(file, { "X-Daytona-Preview-Token": link.token })).toEqual({
      status: 200,
      body: "private-content",
    });
    expect(await get(`${file}?DAYTONA_SANDBOX_AUTH_KEY=${link.token}`)).toEqual({
      status: 200,
      body: "private-content",
    });
    // Another port's token does not open this one.
    const other = await sandbox.getPreviewLink(port + 1);
    expect(await get(file, { "X-Daytona-Preview-Token": other.token })).toMatchObject({ status: 401 });

    const signed = await sandbox.getSignedPreviewUrl(port, 60);
    expect(signed.token).toMatch(/^[0-9a-z]{16}$/);
    expect(signed.url).not.toContain(sandbox.id);
    expect(await get(`${signed.url}/index.txt`)).toEqual({ status: 200, body: "private-content" });
    // The signed token opens only its own port.
    expect((await get(signed.url.replace(`/${port}`, `/${port + 1}`))).status).toBeGreaterThanOrEqual(400);
    clock.advance(61_000);
    const expired = await get(`${signed.url}/index.txt`);
    expect(expired.status).toBeGreaterThanOrEqual(400);
    expect(expired.body).not.toContain("private-content");
    await expect(sandbox.getSignedPreviewUrl(port, 0)).rejects.toMatchObject({ statusCode: 400 });
    await expect(sandbox.getSignedPreviewUrl(port, 86_401)).rejects.toMatchObject({ statusCode: 400 });

    // Nothing answers on a port nobody listens on; a stopped sandbox's ports answer nothing.
    const closed = await sandbox.getSignedPreviewUrl(port + 2, 60);
    expect((await get(`${closed.url}/`)).status).toBe(502);
    await sandbox.stop(300);
    const stopped = await get(file, { "X-Daytona-Preview-Token": link.token });
    expect(stopped.status).toBe(400);
    expect(stopped.body).not.toContain("private-content");
    await sandbox.delete();
    await settled(sandbox.id, "destroyed");
    expect((await get(file, { "X-Daytona-Preview-Token": link.token })).status).toBe(404);
  });

  test("a public sandbox's preview link needs no token", { timeout: 120_000 }, async () => {
    const sandbox = await daytona.create({ autoStopInterval: 0, public: true }, { timeout: 300 });
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    await serve(sandbox, port, "public-content");
    const link = await sandbox.getPreviewLink(port);
    expect(await get(`${link.url}/index.txt`)).toEqual({ status: 200, body: "public-content" });
    await sandbox.delete();
  });
});

describe("images", () => {
  test("create({ image, resources }) builds FROM the image and is started, sized as asked", {
    timeout: 120_000,
  }, async () => {
    const sandbox = await daytona.create(
      { image: "debian:bookworm", resources: { cpu: 2, memory: 4, disk: 8 }, autoStopInterval: 0 },
      { timeout: 300 },
    );
    expect(sandbox.state).toBe("started");
    expect(sandbox).toMatchObject({ cpu: 2, memory: 4, disk: 8 });
    const record = emulator.sandboxRecord(sandbox.id);
    expect(record?.createRequest).toMatchObject({
      buildInfo: { dockerfileContent: "FROM debian:bookworm\n" },
    });
    expect(record?.buildInfo?.dockerfileContent).toBe("FROM debian:bookworm\n");
    expect((await sandbox.process.executeCommand("echo built")).result.trim()).toBe("built");
    await sandbox.delete();
  });

  test("an image the emulator does not know ends build_failed; Daytona's own refusals are 400", async () => {
    await expect(daytona.create({ image: "no-such/image:latest" }, { timeout: 300 })).rejects.toThrow(
      /build_failed/,
    );
    const failed = emulator
      .sandboxIds()
      .map((id) => emulator.sandboxRecord(id))
      .find((record) => record?.buildInfo?.dockerfileContent === "FROM no-such/image:latest\n");
    expect(failed).toMatchObject({ state: "build_failed" });
    expect(failed?.errorReason).toMatch(/no-such\/image/);
    // Resources come with an image only: a snapshot's sandbox is sized by the snapshot.
    await expect(
      daytona.create({ snapshot: "daytonaio/sandbox", resources: { cpu: 2 } } as never),
    ).rejects.toMatchObject({ statusCode: 400 });
    const api = (daytona as unknown as { sandboxApi: { createSandbox(body: unknown): Promise<unknown> } })
      .sandboxApi;
    await expect(
      api.createSandbox({
        snapshot: "daytonaio/sandbox",
        buildInfo: { dockerfileContent: "FROM debian:bookworm\n" },
      }),
    ).rejects.toMatchObject({ statusCode: 400 });
    await expect(
      api.createSandbox({ buildInfo: { dockerfileContent: "FROM debian:bookworm\nRUN rm -rf /\n" } }),
    ).rejects.toMatchObject({ statusCode: 400 });
  });
});

describe("terminals", () => {
  test("the SDK's createPty runs an interactive shell on a real pty: envs, input, resize, reconnect, exit code", {
    timeout: 120_000,
  }, async () => {
    const sandbox = await daytona.create({ autoStopInterval: 0 }, { timeout: 300 });
    const decoder = new TextDecoder();
    let output = "";
    const until = async (text: string) => {
      const deadline = Date.now() + 15_000;
      while (!output.includes(text) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(output).toContain(text);
    };
    const pty = await sandbox.process.createPty({
      id: "term-1",
      cols: 80,
      rows: 24,
      envs: { SBOX_GREETING: 'it\'s "quoted" $(no)' },
      onData: (data) => {
        output += decoder.decode(data, { stream: true });
      },
    });
    await pty.sendInput('printf "<%s>\\n" "$SBOX_GREETING"; [ -t 0 ] && echo is-a-tty; stty size\n');
    await until('<it\'s "quoted" $(no)>');
    await until("is-a-tty");
    await until("24 80");
    await pty.resize(100, 30);
    expect(await sandbox.process.getPtySessionInfo("term-1")).toMatchObject({
      cols: 100,
      rows: 30,
      active: true,
    });
    await pty.sendInput("stty size\n");
    await until("30 100");
    // A second client of the same terminal, then the shell's own exit code reaches both.
    await pty.disconnect();
    let again = "";
    const second = await sandbox.process.connectPty("term-1", {
      onData: (data) => {
        again += decoder.decode(data, { stream: true });
      },
    });
    await second.sendInput("echo back-$((1 + 1)); exit 5\n");
    expect(await second.wait()).toMatchObject({ exitCode: 5 });
    expect(again).toContain("back-2");
    expect((await sandbox.process.listPtySessions()).map((s) => s.id)).toContain("term-1");
    // Bad input: a duplicate id, a size out of range, an unknown session.
    const killed = await sandbox.process.createPty({ id: "term-2", onData: () => undefined });
    await expect(sandbox.process.createPty({ id: "term-2", onData: () => undefined })).rejects.toThrow();
    await expect(sandbox.process.resizePtySession("term-2", 0, 10)).rejects.toMatchObject({
      statusCode: 400,
    });
    await expect(sandbox.process.getPtySessionInfo("no-such-pty")).rejects.toMatchObject({ statusCode: 404 });
    // Kill ends the shell: the client sees it end, the session is gone.
    await killed.kill();
    await killed.wait();
    await expect(sandbox.process.getPtySessionInfo("term-2")).rejects.toMatchObject({ statusCode: 404 });
    await sandbox.delete();
  });
});
