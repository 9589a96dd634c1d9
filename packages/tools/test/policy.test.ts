/**
 * The policy against a real provider-local sandbox whose driver is recorded (@sbox/conformance's driver
 * recorder): denied calls give the model a bounded, readable result and never reach the sandbox.
 */
import { createDriverRecorder } from "@sbox/conformance";
import { createSandboxClient, SandboxError } from "@sbox/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandboxTools, type ToolAuditEvent } from "../src/index.js";
import { localProvider, tempRoot } from "./helpers.js";

const root = tempRoot("policy");
const recorder = createDriverRecorder();
const client = createSandboxClient({ provider: recorder.record(localProvider(root.dir)) });
let sandbox: Awaited<ReturnType<typeof client.create>>;
let nativeId: string;
const events: ToolAuditEvent[] = [];
const policy = {
  commands: { deny: ["rm -rf", "curl"], ask: ["echo approve-me"] },
  paths: { deny: [".env", "secrets/**"], readOnly: ["locked"] },
  limits: { timeoutMs: 1500, maxOutputBytes: 4096, maxOutputLines: 60 },
} as const;

beforeAll(async () => {
  sandbox = await client.create();
  nativeId = sandbox.id.slice("local:".length);
  await sandbox.commands.run(
    "mkdir -p secrets && echo top > secrets/key && echo SECRET=1 > .env && ln -s /etc escape && ln -s /etc/passwd pw && echo keep > locked",
  );
});
afterAll(async () => {
  await sandbox.destroy();
  await client.dispose();
  root.cleanup();
});

/** Runs `fn` and returns the driver calls it made on this sandbox. */
async function callsDuring(fn: () => Promise<unknown>): Promise<string[]> {
  const mark = recorder.mark();
  await fn();
  return recorder.since(mark, { sandboxId: nativeId }).map((call) => call.method);
}

describe("denied calls never reach the sandbox", () => {
  const tools = () => createSandboxTools(sandbox, { policy, audit: (event) => void events.push(event) });

  it("a denied command gives a readable result and no driver call", async () => {
    const set = tools();
    await set.run_command.execute({ command: "true" }); // resolves the working root once
    let result: Awaited<ReturnType<typeof set.run_command.execute>> | undefined;
    const calls = await callsDuring(async () => {
      result = await set.run_command.execute({ command: "cd /tmp && sudo /bin/rm -f -r /" });
    });
    expect(calls).toEqual([]);
    expect(result).toMatchObject({ ok: false, error: { code: "PolicyDenied" } });
    expect(result?.text).toContain('matches the denied command "rm -rf"');
    const denial = events.filter((event) => event.phase === "result").at(-1);
    expect(denial).toMatchObject({
      tool: "run_command",
      decision: { action: "deny" },
      outcome: { ok: false, code: "PolicyDenied" },
    });
  });

  it("paths escaping the root by ../ or an absolute path are refused before anything runs", async () => {
    const set = tools();
    await set.read_file.execute({ path: "locked" });
    for (const path of ["../../etc/passwd", "/etc/passwd", "a/../../outside", "/", ".env", "secrets/key"]) {
      let text = "";
      const calls = await callsDuring(async () => {
        const result = await set.read_file.execute({ path });
        expect(result).toMatchObject({ ok: false, error: { code: "PolicyDenied" } });
        text = result.text;
      });
      expect({ path, calls }).toEqual({ path, calls: [] });
      expect(text.length).toBeLessThan(300);
    }
  });

  it("a symlink out of the root is caught when it resolves; the file is never opened", async () => {
    const set = tools();
    for (const path of ["escape/passwd", "pw", "escape"]) {
      let result: Awaited<ReturnType<typeof set.read_file.execute>> | undefined;
      const calls = await callsDuring(async () => {
        result = await set.read_file.execute({ path });
      });
      expect(result).toMatchObject({ ok: false, error: { code: "PolicyDenied" } });
      expect(result?.text).toContain("outside the allowed directory");
      // Only the resolution (one exec inside the sandbox) ran: no file was read.
      expect({ path, calls: calls.map((method) => method.replace("doExecStream", "doExec")) }).toEqual({
        path,
        calls: ["doExec"],
      });
    }
    const write = await set.write_file.execute({ path: "escape/evil", content: "x" });
    expect(write).toMatchObject({ ok: false, error: { code: "PolicyDenied" } });
    const locked = await set.write_file.execute({ path: "locked", content: "changed" });
    expect(locked.text).toContain("read-only");
    expect((await sandbox.commands.run("cat locked")).stdout).toBe("keep\n");
    const listing = await set.list_files.execute({});
    expect(listing.text).not.toContain(".env");
    expect(listing.text).toContain("hidden by the policy");
    const search = await set.search_files.execute({ pattern: "SECRET|top", path: "." });
    expect(search.text).not.toContain("SECRET");
    expect(search.text).not.toContain("top");
  });

  it("an ask rule without an approval hook denies; a hook that says no denies; yes runs", async () => {
    const unasked = await callsDuring(async () => {
      const result = await tools().run_command.execute({ command: "echo approve-me" });
      expect(result.text).toContain("no approval hook is set");
    });
    expect(unasked).toEqual([]);
    const requests: string[] = [];
    const no = createSandboxTools(sandbox, {
      policy,
      approve: (r) => {
        requests.push(r.reason);
        return false;
      },
    });
    await no.run_command.execute({ command: "true" });
    const refused = await callsDuring(async () => {
      expect((await no.run_command.execute({ command: "echo approve-me" })).error?.code).toBe("PolicyDenied");
    });
    expect(refused).toEqual([]);
    expect(requests[0]).toContain('"echo approve-me"');
    const throwing = createSandboxTools(sandbox, {
      policy,
      approve: () => {
        throw new Error("hook broke");
      },
    });
    expect((await throwing.run_command.execute({ command: "echo approve-me" })).error?.code).toBe(
      "PolicyDenied",
    );
    const yes = createSandboxTools(sandbox, { policy, approve: () => true });
    const ran = await yes.run_command.execute({ command: "echo approve-me" });
    expect(ran).toMatchObject({ ok: true });
    expect(ran.text).toContain("approve-me");
    const framework = await tools().run_command.execute({ command: "echo approve-me" }, { approved: true });
    expect(framework.ok).toBe(true);
  });

  it("an audit hook that fails on the call refuses the call", async () => {
    const set = createSandboxTools(sandbox, {
      policy,
      audit: (event) => {
        if (event.phase === "call") throw new Error("audit store down");
      },
    });
    await createSandboxTools(sandbox, { policy }).run_command.execute({ command: "true" });
    const calls = await callsDuring(async () => {
      const result = await set.write_file.execute({ path: "audited.txt", content: "x" });
      expect(result.text).toContain("could not be audited");
    });
    // At most the path resolution ran (an exec); nothing was written.
    expect(calls.filter((method) => !method.startsWith("doExec"))).toEqual([]);
    expect(await sandbox.files.exists("audited.txt")).toBe(false);
  });

  it("errors: throw rejects into the loop with a SandboxError", async () => {
    const set = createSandboxTools(sandbox, { policy: { ...policy, errors: "throw" } });
    const error = await set.run_command
      .execute({ command: "curl http://127.0.0.1:1/" })
      .catch((e: unknown) => e);
    expect(SandboxError.isInstance(error)).toBe(true);
    expect((error as SandboxError).code).toBe("Unauthorized");
  });
});

describe("bounded results", () => {
  it("100 MB of output gives the head, the tail and how much was cut", async () => {
    const set = createSandboxTools(sandbox, {
      policy: { limits: { maxOutputBytes: 4096, maxOutputLines: 60 } },
    });
    const started = Date.now();
    const result = await set.run_command.execute({
      command: "head -c 100000000 /dev/zero | tr '\\0' a; echo; echo the-end",
      timeoutMs: 120_000,
    });
    console.log(`100 MB through run_command: ${Date.now() - started} ms`);
    expect(result.ok).toBe(true);
    expect(result.truncated).toBe(true);
    expect(Buffer.byteLength(result.text)).toBeLessThan(4096 + 400);
    expect(result.text).toMatch(/^exit code 0/);
    expect(result.text).toMatch(
      /\[\.\.\. \d+ bytes \(\d+ lines\) of stdout cut: 100000009 bytes, 2 lines in total \.\.\.\]/,
    );
    expect(result.text).toContain("the-end");
    expect(result.data).toMatchObject({ stdoutBytes: 100_000_009, truncated: true });
  });

  it("many lines are cut to the line budget", async () => {
    const set = createSandboxTools(sandbox, {
      policy: { limits: { maxOutputBytes: 1_000_000, maxOutputLines: 20 } },
    });
    const result = await set.run_command.execute({ command: "seq 1 200000" });
    const lines = result.text.split("\n");
    expect(lines.length).toBeLessThan(30);
    expect(lines).toContain("1");
    expect(lines).toContain("200000");
    expect(result.text).toMatch(/lines\) of stdout cut/);
    const file = await set.run_command.execute({ command: "seq 1 2000000 > big.txt" });
    expect(file.ok).toBe(true);
    const read = await set.read_file.execute({ path: "big.txt" });
    expect(read.truncated).toBe(true);
    expect(read.text.split("\n").length).toBeLessThan(30);
    const range = await set.read_file.execute({ path: "big.txt", startLine: 1_999_999, endLine: 2_000_005 });
    expect(range.text).toBe("1999999\n2000000\n");
  });

  it("a hung command is killed at the default timeout and the model is told so", async () => {
    const set = createSandboxTools(sandbox, { policy });
    const started = Date.now();
    const result = await set.run_command.execute({ command: "echo started; sleep 1000.4242" });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(result).toMatchObject({ ok: false, error: { code: "Timeout" } });
    expect(result.text).toContain("did not finish within 1500 ms and was killed");
    expect(result.text).toContain("started");
    const left = await sandbox.commands.run("grep -l '1000[.]4242' /proc/[0-9]*/cmdline 2>/dev/null || true");
    expect(left.stdout).toBe("");
  });
});
