import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idsOf, makeSboxHome } from "./sbox-harness.js";

const home = makeSboxHome();
const scratch = mkdtempSync(join(tmpdir(), "sbox-cli-files-"));
let id = "";

beforeAll(async () => {
  const created = await home.run(["create", "--label", "suite=cli-local", "--label", "odd=a b=c"]);
  expect(created.stderr).toBe("");
  expect(created.code).toBe(0);
  id = created.stdout.trim();
  expect(id).toMatch(/^local:\S+$/);
});

afterAll(async () => {
  await home.cleanup();
  rmSync(scratch, { recursive: true, force: true });
});

const ALL_BYTES = Buffer.from(Array.from({ length: 256 }, (_, index) => index));

describe("sbox against provider-local (the real binary)", () => {
  it("ls --json lists the sandbox with its labels; --label filters", async () => {
    const listed = await home.run(["ls", "--json"]);
    expect(listed.code).toBe(0);
    const infos = JSON.parse(listed.stdout) as {
      id: string;
      state: string;
      metadata: Record<string, string>;
    }[];
    const mine = infos.find((info) => info.id === id);
    expect(mine?.state).toBe("running");
    expect(mine?.metadata).toMatchObject({ suite: "cli-local", odd: "a b=c" });
    expect(idsOf(await home.run(["ls", "--json", "--label", "suite=cli-local"]))).toEqual([id]);
    expect(idsOf(await home.run(["ls", "--json", "--label", "suite=other"]))).toEqual([]);
  });

  it("ls prints a table with a header", async () => {
    const listed = await home.run(["ls"]);
    expect(listed.code).toBe(0);
    const [header, ...rows] = listed.stdout.trimEnd().split("\n");
    expect(header).toMatch(/^ID\s+STATE\s+CREATED\s+EXPIRES\s+LABELS$/);
    expect(rows.some((row) => row.startsWith(id) && row.includes("running"))).toBe(true);
  });

  it("info --json reports live state and the capability map", async () => {
    const info = await home.run(["info", "--json", id]);
    expect(info.code).toBe(0);
    const parsed = JSON.parse(info.stdout) as {
      id: string;
      state: string;
      capabilities: Record<string, string>;
    };
    expect(parsed.id).toBe(id);
    expect(parsed.state).toBe("running");
    expect(Object.keys(parsed.capabilities)).toHaveLength(25);
  });

  it("exec passes the exit code through", async () => {
    for (const code of [0, 1, 42, 255]) {
      const result = await home.run(["exec", id, "--", "sh", "-c", `exit ${code}`]);
      expect(result.code).toBe(code);
    }
  });

  it("exec streams stdout and stderr apart", async () => {
    const result = await home.run(["exec", id, "--", "sh", "-c", "echo to-out; echo to-err >&2"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("to-out\n");
    expect(result.stderr).toBe("to-err\n");
  });

  it("exec passes hostile argv verbatim (no shell in between)", async () => {
    const hostile = ["$(touch /tmp/sbox-pwned)", "`id`", "a'b\"c", "line1\nline2", "ünï😀", "*", "--", ""];
    const result = await home.run(["exec", id, "--", "printf", "[%s]\\n", ...hostile]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(hostile.map((arg) => `[${arg}]\n`).join(""));
  });

  it("exec pipes stdin through when it is not a terminal", async () => {
    const input = `first line\n$(not run) 'quoted' ünïcödé\n${"x".repeat(200_000)}\nlast`;
    const result = await home.run(["exec", id, "--", "cat"], { input });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(input);
    const counted = await home.run(["exec", id, "--", "wc", "-c"], { input: ALL_BYTES });
    expect(counted.stdout.trim()).toBe("256");
  });

  it("exec --no-stdin does not read stdin", async () => {
    const result = await home.run(["exec", "--no-stdin", id, "--", "cat"], { input: "ignored" });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("");
  });

  it("exec -e and -w set env and cwd of the command", async () => {
    await home.run(["exec", id, "--", "mkdir", "-p", "sub dir"]);
    const result = await home.run([
      "exec",
      id,
      "-e",
      "GREETING=a b$c'd",
      "-w",
      "sub dir",
      "--",
      "sh",
      "-c",
      'printf "%s|" "$GREETING"; basename "$PWD"',
    ]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("a b$c'd|sub dir\n");
  });

  it("exec --timeout kills the command and exits 124", async () => {
    const result = await home.run(["exec", "--timeout", "500ms", id, "--", "sleep", "20"]);
    expect(result.code).toBe(124);
    expect(result.stderr).toMatch(/^error\[Timeout\]: the command exceeded --timeout/);
  });

  it("cp copies a directory with binary files up and back down unchanged", async () => {
    const source = join(scratch, "src tree");
    mkdirSync(join(source, "nested", "déeper"), { recursive: true });
    mkdirSync(join(source, "empty-dir"));
    writeFileSync(join(source, "all-bytes.bin"), ALL_BYTES);
    writeFileSync(join(source, "nested", "big.bin"), Buffer.alloc(3 * 1024 * 1024 + 7, 0xa5));
    writeFileSync(join(source, "nested", "déeper", 'it\'s "quoted".txt'), "hostile name\n");
    writeFileSync(join(source, "empty.txt"), "");
    writeFileSync(join(source, "script.sh"), "#!/bin/sh\necho ran\n", { mode: 0o755 });

    const up = await home.run(["cp", source, `${id}:/workspace/up`]);
    expect(up.stderr).toBe("");
    expect(up.code).toBe(0);
    // A second channel: read what landed with a command, not with the files API.
    const sum = await home.run([
      "exec",
      id,
      "--",
      "sh",
      "-c",
      "cd /workspace/up && od -An -tx1 all-bytes.bin | tr -d ' \\n' && echo && wc -c < nested/big.bin && ./script.sh && ls -A",
    ]);
    expect(sum.code).toBe(0);
    const [hex, bigSize, ran, ...names] = sum.stdout.trimEnd().split("\n");
    expect(hex).toBe(ALL_BYTES.toString("hex"));
    expect(bigSize?.trim()).toBe(String(3 * 1024 * 1024 + 7));
    expect(ran).toBe("ran");
    expect(names.sort()).toEqual(["all-bytes.bin", "empty-dir", "empty.txt", "nested", "script.sh"]);

    const down = join(scratch, "down");
    const back = await home.run(["cp", `${id}:/workspace/up`, down]);
    expect(back.stderr).toBe("");
    expect(back.code).toBe(0);
    expect(readFileSync(join(down, "all-bytes.bin")).equals(ALL_BYTES)).toBe(true);
    expect(
      readFileSync(join(down, "nested", "big.bin")).equals(readFileSync(join(source, "nested", "big.bin"))),
    ).toBe(true);
    expect(readFileSync(join(down, "nested", "déeper", 'it\'s "quoted".txt'), "utf8")).toBe("hostile name\n");
    expect(readFileSync(join(down, "empty.txt")).length).toBe(0);
    expect(readdirSync(join(down, "empty-dir"))).toEqual([]);
    expect(statSync(join(down, "script.sh")).mode & 0o111).not.toBe(0);
  });

  it("cp into an existing directory copies into it, like cp -r", async () => {
    const file = join(scratch, "single.bin");
    writeFileSync(file, ALL_BYTES);
    const up = await home.run(["cp", file, `${id}:/workspace/`]);
    expect(up.code).toBe(0);
    const check = await home.run(["exec", id, "--", "wc", "-c", "/workspace/single.bin"]);
    expect(check.stdout).toMatch(/^256 /);
  });

  it("cp - streams stdin into a file, cp ID:FILE - streams it to stdout, binary-safe", async () => {
    const up = await home.run(["cp", "-", `${id}:/workspace/from-stdin.bin`], { input: ALL_BYTES });
    expect(up.code).toBe(0);
    const down = await home.run(["cp", `${id}:/workspace/from-stdin.bin`, "-"]);
    expect(down.code).toBe(0);
    expect(down.stdoutBytes.equals(ALL_BYTES)).toBe(true);
  });

  it("cp of a missing sandbox path is NotFound, exit 3", async () => {
    const result = await home.run(["cp", `${id}:/workspace/no-such-file`, join(scratch, "x")]);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/^error\[NotFound\]: /);
  });

  it("exec -d starts a background process; logs shows its output", async () => {
    const started = await home.run([
      "exec",
      "-d",
      id,
      "--",
      "sh",
      "-c",
      "echo out-line; echo err-line >&2; sleep 0.2; echo done",
    ]);
    expect(started.code).toBe(0);
    const pid = started.stdout.trim();
    expect(pid).toMatch(/^\d+$/);
    const logs = await home.run(["logs", "--follow", id, pid]);
    expect(logs.code).toBe(0);
    expect(logs.stdout).toBe("out-line\ndone\n");
    expect(logs.stderr).toBe("err-line\n");
  });

  it("logs without --follow prints the kept output of a running process and returns", async () => {
    const started = await home.run([
      "exec",
      "-d",
      id,
      "--",
      "sh",
      "-c",
      "echo early; echo early-err >&2; sleep 30",
    ]);
    const pid = started.stdout.trim();
    expect(pid).toMatch(/^\d+$/);
    let logs = await home.run(["logs", id, pid]);
    for (let attempt = 0; attempt < 20 && logs.stdout === ""; attempt += 1)
      logs = await home.run(["logs", id, pid]);
    expect(logs.code).toBe(0);
    expect(logs.stdout).toBe("early\n");
    expect(logs.stderr).toBe("early-err\n");
    const json = await home.run(["logs", "--json", id, pid]);
    const events = json.stdout
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as { stream: string; data: string });
    expect(events).toEqual(
      expect.arrayContaining([
        { stream: "stdout", data: "early\n" },
        { stream: "stderr", data: "early-err\n" },
      ]),
    );
  });

  it("logs of a process that does not exist is NotFound", async () => {
    const result = await home.run(["logs", id, "999999"]);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/^error\[NotFound\]: /);
  });

  it("shell without a terminal is a usage error naming the alternative", async () => {
    const result = await home.run(["shell", id]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^error\[Usage\]: sbox shell needs a terminal on stdin; for scripts use: sbox exec /,
    );
  });

  it("port prints a URL that reaches a server in the sandbox", async () => {
    const port = 20000 + Math.floor(Math.random() * 20000);
    // On all interfaces: provider-local forwards an exposed port to the sandbox's network address, not to
    // its loopback (the provider's README says so).
    const server = `require("http").createServer((q, s) => s.end("pong")).listen(${port}, "0.0.0.0")`;
    const started = await home.run(["exec", "-d", id, "--", process.execPath, "-e", server]);
    expect(started.code).toBe(0);
    const exposed = await home.run(["port", id, String(port)]);
    expect(exposed.code).toBe(0);
    const url = exposed.stdout.trim();
    expect(url).toMatch(/^https?:\/\//);
    let body = "";
    for (let attempt = 0; attempt < 50 && body !== "pong"; attempt += 1) {
      body = await fetch(url, { signal: AbortSignal.timeout(2_000) })
        .then((response) => response.text())
        .catch(() => "");
      if (body !== "pong") await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(body).toBe("pong");
  });

  it("stop and resume keep files; rm removes the sandbox", async () => {
    await home.run(["exec", id, "--", "sh", "-c", "echo kept > /workspace/kept.txt"]);
    const stopped = await home.run(["stop", id]);
    expect(stopped.code).toBe(0);
    expect(stopped.stdout.trim()).toBe(id);
    expect(JSON.parse((await home.run(["info", "--json", id])).stdout).state).toBe("stopped");
    expect((await home.run(["resume", id])).code).toBe(0);
    const kept = await home.run(["exec", id, "--", "cat", "/workspace/kept.txt"]);
    expect(kept.stdout).toBe("kept\n");

    const removed = await home.run(["rm", id]);
    expect(removed.code).toBe(0);
    expect(idsOf(await home.run(["ls", "--json"]))).not.toContain(id);
    const gone = await home.run(["exec", id, "--", "true"]);
    expect(gone.code).toBe(3);
  });

  it("reap stops an expired sandbox; ttl gives it time again so it resumes", async () => {
    const short = (await home.run(["create", "--ttl", "1s", "-l", "reap=me"])).stdout.trim();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const reaped = await home.run(["reap", "--json"]);
    expect(reaped.code).toBe(0);
    // Recorded sandboxes expire through their record (stopExpired), others through client.reap().
    const report = JSON.parse(reaped.stdout) as {
      reaped: { id: string }[];
      records: { stopped: string[] } | null;
    };
    expect([...report.reaped.map((info) => info.id), ...(report.records?.stopped ?? [])]).toContain(short);
    expect(JSON.parse((await home.run(["info", "--json", short])).stdout).state).toBe("stopped");
    expect((await home.run(["exec", short, "--", "true"])).code).not.toBe(0);
    const extended = await home.run(["ttl", "--json", short, "1h"]);
    expect(extended.code).toBe(0);
    expect(Date.parse(JSON.parse(extended.stdout).expiresAt) - Date.now()).toBeGreaterThan(50 * 60_000);
    expect((await home.run(["resume", short])).code).toBe(0);
    expect((await home.run(["exec", short, "--", "echo", "back"])).stdout).toBe("back\n");
    expect((await home.run(["rm", short])).code).toBe(0);
  });

  it("create records owner and labels (@sbox/manager); ls and info show them; rm keeps the record as destroyed", async () => {
    const created = await home.run(["create", "--owner", "alice", "-l", "team=blue", "--json"]);
    expect(created.code).toBe(0);
    const made = JSON.parse(created.stdout) as {
      id: string;
      record: { id: string; ownerId: string; labels: object };
    };
    expect(made.record.ownerId).toBe("alice");
    expect(made.record.labels).toEqual({ team: "blue" });
    const listed = JSON.parse((await home.run(["ls", "--json"])).stdout) as {
      id: string;
      record?: { ownerId: string };
    }[];
    expect(listed.find((info) => info.id === made.id)?.record?.ownerId).toBe("alice");
    const table = (await home.run(["ls"])).stdout;
    expect(table).toMatch(/\bOWNER\b/);
    expect(table.split("\n").find((line) => line.startsWith(made.id))).toMatch(/\balice\b.*team=blue/);
    const info = JSON.parse((await home.run(["info", "--json", made.id])).stdout) as {
      record: { id: string };
    };
    expect(info.record.id).toBe(made.record.id);
    // stop/resume go through the record's transitions, so record and provider agree.
    const recordStatus = async (): Promise<[string, string]> => {
      const current = JSON.parse((await home.run(["info", "--json", made.id])).stdout) as {
        state: string;
        record: { status: string };
      };
      return [current.state, current.record.status];
    };
    expect((await home.run(["stop", made.id])).code).toBe(0);
    expect(await recordStatus()).toEqual(["stopped", "stopped"]);
    expect((await home.run(["resume", made.id])).code).toBe(0);
    expect(await recordStatus()).toEqual(["running", "running"]);
    expect((await home.run(["rm", made.id])).code).toBe(0);
    expect(idsOf(await home.run(["ls", "--json"]))).not.toContain(made.id);
    // Without records the same commands work on the provider alone.
    const plain = await home.run(["create", "--json"], { env: { SBOX_RECORDS: "0" } });
    const plainInfo = JSON.parse(plain.stdout) as { id: string; record?: unknown };
    expect(plainInfo.record).toBeUndefined();
    expect((await home.run(["rm", plainInfo.id], { env: { SBOX_RECORDS: "0" } })).code).toBe(0);
  });

  it("rm --all --label --yes removes only the labelled sandboxes", async () => {
    const a = (await home.run(["create", "-l", "batch=x"])).stdout.trim();
    const b = (await home.run(["create", "-l", "batch=x"])).stdout.trim();
    const other = (await home.run(["create", "-l", "batch=y"])).stdout.trim();
    const refused = await home.run(["rm", "--all", "--label", "batch=x"]);
    expect(refused.code).toBe(2);
    const removed = await home.run(["rm", "--all", "--label", "batch=x", "--yes", "--json"]);
    expect(removed.code).toBe(0);
    const outcomes = JSON.parse(removed.stdout) as { id: string; ok: boolean }[];
    expect(outcomes.map((outcome) => outcome.id).sort()).toEqual([a, b].sort());
    expect(idsOf(await home.run(["ls", "--json"]))).toEqual([other]);
    expect((await home.run(["rm", other])).code).toBe(0);
    expect(idsOf(await home.run(["ls", "--json"]))).toEqual([]);
  });
});
