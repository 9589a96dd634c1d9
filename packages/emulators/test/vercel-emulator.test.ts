/**
 * The Vercel Sandbox emulator spoken to by the vendor's own client, `@vercel/sandbox` 3.5.0 (pinned), and
 * by plain HTTP where the SDK hides the wire: auth (access token with team and project, OIDC token),
 * validation against the service's limits, detached commands with NDJSON logs followed live by several
 * readers, signals as exit codes, command and session timeouts on the emulator's clock, files through the
 * tarball route, stop/resume with persistence, snapshots, forks, list filters and deletes. Runs on
 * provider-local unless SBOX_EMULATOR_BACKEND=docker.
 */
import { Writable } from "node:stream";
import { APIError, Sandbox, StreamError } from "@vercel/sandbox";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { EmulatorClock, EmulatorTimer } from "../src/clock.js";
import { startVercelEmulator, type VercelEmulator } from "../src/vercel/index.js";

const backend = process.env.SBOX_EMULATOR_BACKEND === "docker" ? ("docker" as const) : ("local" as const);

/** A clock whose timers fire only when the test moves it (`advance`). */
class TestClock implements EmulatorClock {
  private offset = 0;
  private timers: { due: number; fire: () => void; live: boolean }[] = [];
  now(): number {
    return Date.now() + this.offset;
  }
  setTimer(callback: () => void, ms: number): EmulatorTimer {
    const timer = { due: this.now() + Math.max(0, ms), fire: callback, live: true };
    this.timers.push(timer);
    return {
      cancel: () => {
        timer.live = false;
      },
    };
  }
  advance(ms: number): void {
    this.offset += ms;
    const due = this.timers.filter((t) => t.live && t.due <= this.now());
    this.timers = this.timers.filter((t) => !due.includes(t));
    for (const timer of due) {
      timer.live = false;
      timer.fire();
    }
  }
}

const clock = new TestClock();
let emu: VercelEmulator;
let creds: { token: string; teamId: string; projectId: string; fetch: typeof fetch };
beforeAll(async () => {
  emu = await startVercelEmulator({ backend, clock });
  creds = { token: emu.token, teamId: emu.teamId, projectId: emu.projectId, fetch: emu.fetch };
});
afterAll(() => emu?.close());

async function call(method: string, path: string, body?: unknown, token = emu.token, teamId = emu.teamId) {
  const url = new URL(`${emu.url}${path}`);
  if (teamId) url.searchParams.set("teamId", teamId);
  const response = await fetch(url, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // kept as text
  }
  // biome-ignore lint/suspicious/noExplicitAny: bodies are checked field by field
  return { status: response.status, headers: response.headers, body: parsed as any };
}

describe("auth", () => {
  test("a missing or unknown token is refused without quoting it; the OIDC token works like the access token", async () => {
    const none = await fetch(`${emu.url}/v2/sandboxes?teamId=${emu.teamId}`);
    expect(none.status).toBe(401);
    const wrong = await call("GET", "/v2/sandboxes", undefined, "vcp_not_a_real_token");
    expect(wrong.status).toBe(403);
    expect(JSON.stringify(wrong.body)).not.toContain("vcp_not_a_real_token");
    expect(wrong.body.error.code).toBe("forbidden");
    const otherTeam = await call("GET", "/v2/sandboxes", undefined, emu.token, "team_other");
    expect(otherTeam.status).toBe(403);
    const oidc = await call("GET", "/v2/sandboxes", undefined, emu.oidcToken);
    expect(oidc.status).toBe(200);
    expect(oidc.body.pagination).toEqual({ count: expect.any(Number), next: null });
  });

  test("the SDK takes the OIDC token on its own (team and project read from the token)", async () => {
    const page = await Sandbox.list({
      token: emu.oidcToken,
      teamId: emu.teamId,
      projectId: emu.projectId,
      fetch: emu.fetch,
    });
    expect(Array.isArray(page.sandboxes)).toBe(true);
  });
});

describe("validation", () => {
  test("the service's limits: runtime, timeout, vCPUs, ports, names, sources", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ runtime: "ruby3" }, /runtime must be one of/],
      [{ runtime: "node24", timeout: 6 * 3600_000 }, /timeout must be at most 18000000/],
      [{ runtime: "node24", resources: { vcpus: 9 } }, /vcpus must be an integer from 1 to 8/],
      [{ runtime: "node24", ports: [1, 2, 3, 4, 5] }, /at most 4 ports/],
      [{ runtime: "node24", name: "bad name/with slash" }, /name must be/],
      [{ runtime: "node24", source: { type: "svn", url: "x" } }, /source.type must be/],
      [{ runtime: "node24", networkPolicy: { mode: "sometimes" } }, /networkPolicy.mode/],
    ];
    for (const [body, message] of cases) {
      const answer = await call("POST", "/v2/sandboxes", { projectId: emu.projectId, ...body });
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error.message).toMatch(message);
    }
    const image = await call("POST", "/v3/sandboxes", {
      projectId: emu.projectId,
      image: "docker.io/library/alpine",
    });
    expect(image.status).toBe(400);
    const project = await call("POST", "/v2/sandboxes", { projectId: "prj_other", runtime: "node24" });
    expect(project.status).toBe(404);
    const missing = await call("GET", "/v2/sandboxes/no-such-sandbox");
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("sandbox_not_found");
  });

  test("the SDK's error for a refused create is its APIError with the service's message", async () => {
    const failure = await Sandbox.create({ ...creds, runtime: "node24", ports: [1, 2, 3, 4, 5] }).catch(
      (e) => e,
    );
    expect(failure).toBeInstanceOf(APIError);
    expect((failure as APIError<unknown>).response.status).toBe(400);
  });
});

describe("commands and files through the SDK", () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await Sandbox.create({ ...creds, runtime: "node24", env: { FROM_CREATE: "yes" } });
  });
  afterAll(() => sandbox?.delete().catch(() => undefined));

  test("a finished command: exit code, separated output, env from create and per command, cwd", async () => {
    const result = await sandbox.runCommand({
      cmd: "sh",
      args: ["-c", 'echo "$FROM_CREATE $PER_CMD"; pwd; echo oops >&2; exit 3'],
      env: { PER_CMD: "also" },
    });
    expect(result.exitCode).toBe(3);
    expect(await result.stdout()).toBe(`yes also\n${sandbox.cwd}\n`);
    expect(await result.stderr()).toBe("oops\n");
    const elsewhere = await sandbox.runCommand({ cmd: "pwd", cwd: "/tmp" });
    expect(await elsewhere.stdout()).toBe("/tmp\n");
  });

  test("a detached command streams: lines arrive while it runs, two readers see everything, stdout piped", async () => {
    const piped: string[] = [];
    const cmd = await sandbox.runCommand({
      cmd: "sh",
      args: ["-c", "for i in 1 2 3 4; do echo line $i; sleep 0.4; done"],
      detached: true,
      stdout: new Writable({
        write(chunk, _encoding, done) {
          piped.push(String(chunk));
          done();
        },
      }),
    });
    expect(cmd.exitCode).toBeNull();
    const started = Date.now();
    const arrivals: number[] = [];
    const [first, second] = await Promise.all([
      (async () => {
        let all = "";
        for await (const log of cmd.logs()) {
          arrivals.push(Date.now() - started);
          all += log.data;
        }
        return all;
      })(),
      cmd.stdout(),
    ]);
    expect(first).toBe("line 1\nline 2\nline 3\nline 4\n");
    expect(second).toBe(first);
    expect(piped.join("")).toBe(first);
    // The first line came long before the last: streamed, not buffered.
    expect(arrivals[0]!).toBeLessThan(arrivals.at(-1)! - 800);
    expect((await cmd.wait()).exitCode).toBe(0);
    const again = await sandbox.getCommand(cmd.cmdId);
    expect(again.exitCode).toBe(0);
  });

  test("kill sends the signal: SIGTERM is 143, SIGINT 130; a command timeout is SIGKILL (137)", async () => {
    const term = await sandbox.runCommand({ cmd: "sleep", args: ["200"], detached: true });
    await term.kill("SIGTERM");
    expect((await term.wait()).exitCode).toBe(143);
    const int = await sandbox.runCommand({ cmd: "sleep", args: ["200"], detached: true });
    await int.kill("SIGINT");
    expect((await int.wait()).exitCode).toBe(130);
    const timed = await sandbox.runCommand({
      cmd: "sleep",
      args: ["200"],
      detached: true,
      timeoutMs: 60_000,
    });
    clock.advance(60_000);
    expect((await timed.wait()).exitCode).toBe(137);
  });

  test("a command whose binary does not exist ends with a non-zero exit, not a hang", async () => {
    const result = await sandbox.runCommand("definitely-not-a-binary-xyz");
    expect(result.exitCode).not.toBe(0);
  });

  test("files: writeFiles (relative and absolute, mode, binary), readFile, a missing file is null, mkDir", async () => {
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    await sandbox.writeFiles([
      { path: "rel/dir/hello.txt", content: "hello ✓" },
      { path: "/tmp/bin.dat", content: bytes },
      { path: "run.sh", content: "#!/bin/sh\necho ran\n", mode: 0o755 },
      { path: `deep/${"n".repeat(120)}/long-name.txt`, content: "long path" },
    ]);
    expect((await sandbox.readFileToBuffer({ path: "rel/dir/hello.txt" }))?.toString()).toBe("hello ✓");
    expect(new Uint8Array((await sandbox.readFileToBuffer({ path: "/tmp/bin.dat" }))!)).toEqual(bytes);
    expect(
      (await sandbox.readFileToBuffer({ path: `deep/${"n".repeat(120)}/long-name.txt` }))?.toString(),
    ).toBe("long path");
    expect(await (await sandbox.runCommand("./run.sh")).stdout()).toBe("ran\n");
    expect(await sandbox.readFileToBuffer({ path: "no/such/file" })).toBeNull();
    await sandbox.mkDir("made");
    expect((await sandbox.runCommand("test", ["-d", "made"])).exitCode).toBe(0);
    const twice = await sandbox.mkDir("made").catch((e) => e);
    expect(twice).toBeInstanceOf(APIError);
  });

  test("extendTimeout moves the deadline; beyond the plan's maximum is refused", async () => {
    const before = (await Sandbox.get({ ...creds, name: sandbox.name })).expiresAt!.getTime();
    await sandbox.extendTimeout(60_000);
    const after = (await Sandbox.get({ ...creds, name: sandbox.name })).expiresAt!.getTime();
    expect(after - before).toBe(60_000);
    const tooMuch = await sandbox.extendTimeout(6 * 3600_000).catch((e) => e);
    expect(tooMuch).toBeInstanceOf(APIError);
  });
});

describe("sessions: timeout, stop, resume, snapshots, forks", () => {
  test("the session stops when its timeout runs out: a following reader gets sandbox_stopped, the SDK resumes on the next call", async () => {
    const sandbox = await Sandbox.create({ ...creds, runtime: "node24", timeout: 120_000 });
    try {
      const cmd = await sandbox.runCommand({
        cmd: "sh",
        args: ["-c", "echo started; sleep 300"],
        detached: true,
      });
      const firstSession = sandbox.currentSession().sessionId;
      const reading = (async () => {
        let seen = "";
        try {
          for await (const log of cmd.logs()) seen += log.data;
          return { seen, error: undefined };
        } catch (error) {
          return { seen, error };
        }
      })();
      await new Promise((resolve) => setTimeout(resolve, 500));
      clock.advance(120_000);
      const { seen, error } = await reading;
      expect(seen).toBe("started\n");
      expect(error).toBeInstanceOf(StreamError);
      expect((error as StreamError).code).toBe("sandbox_stopped");
      for (let i = 0; i < 100 && emu.sessionStatus(sandbox.name) !== "stopped"; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(emu.sessionStatus(sandbox.name)).toBe("stopped");
      const raw = await call("POST", `/v2/sandboxes/sessions/${firstSession}/cmd`, { command: "true" });
      expect(raw.status).toBe(410);
      // The SDK resumes on the 410: a new session.
      const after = await sandbox.runCommand("echo", ["resumed"]);
      expect(await after.stdout()).toBe("resumed\n");
      expect(sandbox.currentSession().sessionId).not.toBe(firstSession);
    } finally {
      await sandbox.delete();
    }
  });

  test("stop keeps a persistent sandbox's files for its next session, not a non-persistent one's", async () => {
    for (const persistent of [true, false]) {
      const sandbox = await Sandbox.create({ ...creds, runtime: "node24", persistent });
      try {
        await sandbox.writeFiles([{ path: "kept.txt", content: "kept" }]);
        await sandbox.stop();
        expect(sandbox.status).toBe("stopped");
        const got = await Sandbox.get({ ...creds, name: sandbox.name, resume: true });
        const file = await got.readFileToBuffer({ path: "kept.txt" });
        expect(file?.toString() ?? null).toBe(persistent ? "kept" : null);
      } finally {
        await sandbox.delete();
      }
    }
  });

  test("a snapshot stops the session and seeds new sandboxes; forks start from the source's snapshot; deleted snapshots are gone", async () => {
    const source = await Sandbox.create({ ...creds, runtime: "node24", tags: { role: "source" } });
    const made: Sandbox[] = [source];
    try {
      await source.writeFiles([{ path: "state.txt", content: "from the snapshot" }]);
      const snapshot = await source.snapshot();
      expect(snapshot.snapshotId).toMatch(/^snap_/);
      expect(emu.sessionStatus(source.name)).toBe("stopped");
      const seeded = await Sandbox.create({
        ...creds,
        source: { type: "snapshot", snapshotId: snapshot.snapshotId },
      });
      made.push(seeded);
      expect((await seeded.readFileToBuffer({ path: "state.txt" }))?.toString()).toBe("from the snapshot");
      const fork = await Sandbox.fork({ ...creds, sourceSandbox: source.name });
      made.push(fork);
      expect((await fork.readFileToBuffer({ path: "state.txt" }))?.toString()).toBe("from the snapshot");
      expect(fork.tags).toEqual({ role: "source" });
      await snapshot.delete();
      const gone = await Sandbox.create({
        ...creds,
        source: { type: "snapshot", snapshotId: snapshot.snapshotId },
      }).catch((e) => e);
      expect((gone as APIError<unknown>).response.status).toBe(410);
    } finally {
      await Promise.allSettled(made.map((s) => s.delete()));
    }
  });

  test("list filters by name prefix and tag and pages with cursors; delete frees the name", async () => {
    const names = ["lst-a", "lst-b", "lst-c"];
    const made = await Promise.all(
      names.map((name, i) =>
        Sandbox.create({ ...creds, runtime: "node24", name, tags: { group: i < 2 ? "ab" : "c" } }),
      ),
    );
    try {
      const tagged = await (await Sandbox.list({ ...creds, tags: { group: "ab" } })).toArray();
      expect(tagged.map((s) => s.name).sort()).toEqual(["lst-a", "lst-b"]);
      const paged = await Sandbox.list({ ...creds, namePrefix: "lst-", limit: 2 });
      expect(paged.sandboxes).toHaveLength(2);
      expect(paged.pagination.next).not.toBeNull();
      expect((await paged.toArray()).map((s) => s.name).sort()).toEqual(names);
      const taken = await Sandbox.create({ ...creds, runtime: "node24", name: "lst-a" }).catch((e) => e);
      expect((taken as APIError<unknown>).response.status).toBe(409);
    } finally {
      await Promise.all(made.map((s) => s.delete()));
    }
    const after = await call("GET", "/v2/sandboxes/lst-a");
    expect(after.status).toBe(404);
    expect(emu.sandboxNames().filter((n) => n.startsWith("lst-"))).toEqual([]);
  });
});
