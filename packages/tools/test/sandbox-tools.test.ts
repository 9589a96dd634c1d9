import { createSandboxClient } from "@sbox/core";
import { afterAll, describe, expect, it } from "vitest";
import { createSandboxTools, type ToolAuditEvent } from "../src/index.js";
import { clientFor, localProvider, tempRoot } from "./helpers.js";

const root = tempRoot("tools");
const env = clientFor(localProvider(root.dir));
afterAll(async () => {
  await env.cleanup();
  root.cleanup();
});

describe("the framework-neutral tool set on provider-local", () => {
  it("lists only what the sandbox and the policy allow", async () => {
    const sandbox = await env.create();
    const tools = createSandboxTools(sandbox);
    const names = Object.keys(tools);
    expect(names).toContain("run_command");
    expect(names).toContain("expose_port");
    expect(names).not.toContain("run_code"); // provider-local has no code interpreter
    expect(names).not.toContain("remove_file"); // destructive: off by default
    const withDestructive = createSandboxTools(sandbox, { policy: { destructive: true } });
    expect(Object.keys(withDestructive)).toContain("remove_file");
    expect(Object.keys(withDestructive)).toContain("stop_sandbox");
    const onlyRemove = createSandboxTools(sandbox, {
      policy: { tools: { remove_file: "ask", write_file: "deny" } },
    });
    expect(Object.keys(onlyRemove)).toContain("remove_file");
    expect(Object.keys(onlyRemove)).not.toContain("write_file");
    expect(onlyRemove.read_file.jsonSchema).toMatchObject({ type: "object", required: ["path"] });
    expect(onlyRemove.read_file.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
  });

  it("writes, reads, edits, lists, searches and runs, with the effects visible through commands", async () => {
    const sandbox = await env.create();
    const events: ToolAuditEvent[] = [];
    const tools = createSandboxTools(sandbox, { audit: (event) => void events.push(event) });
    const write = await tools.write_file.execute({
      path: "src/app.py",
      content: "print('one')\nprint('two')\n",
    });
    expect(write).toMatchObject({ ok: true });
    expect((await sandbox.commands.run("cat src/app.py")).stdout).toBe("print('one')\nprint('two')\n");
    const run = await tools.run_command.execute({ command: "python3 src/app.py; echo oops >&2; exit 3" });
    expect(run.ok).toBe(true);
    expect(run.text).toContain("exit code 3");
    expect(run.text).toContain("one\ntwo");
    expect(run.text).toContain("--- stderr ---\noops");
    const edit = await tools.edit_file.execute({
      path: "src/app.py",
      oldString: "print('two')",
      newString: "print('three')",
    });
    expect(edit.ok).toBe(true);
    expect((await sandbox.commands.run("cat src/app.py")).stdout).toBe("print('one')\nprint('three')\n");
    const ambiguous = await tools.edit_file.execute({
      path: "src/app.py",
      oldString: "print",
      newString: "echo",
    });
    expect(ambiguous).toMatchObject({ ok: false, error: { code: "Validation" } });
    expect(ambiguous.text).toContain("appears 2 times");
    const read = await tools.read_file.execute({ path: "src/app.py", startLine: 2, endLine: 2 });
    expect(read.text).toBe("print('three')\n");
    const list = await tools.list_files.execute({ depth: 2 });
    expect(list.text).toContain("src/");
    expect(list.text).toContain("src/app.py (28 bytes)");
    const search = await tools.search_files.execute({ pattern: "three" });
    expect(search.text).toMatch(/src\/app\.py:2:print\('three'\)/);
    const none = await tools.search_files.execute({ pattern: "absent-string" });
    expect(none.text).toContain("No matches");
    expect(events.filter((event) => event.phase === "result")).toHaveLength(8);
    expect(events.every((event) => event.sandboxId === sandbox.id)).toBe(true);
  });

  it("turns bad input and missing files into results the model can read", async () => {
    const sandbox = await env.create();
    const tools = createSandboxTools(sandbox);
    const bad = await tools.read_file.execute({ path: 42 });
    expect(bad).toMatchObject({ ok: false, error: { code: "Validation" } });
    expect(bad.text).toContain("path");
    const extra = await tools.run_command.execute({ command: "true", sudo: true });
    expect(extra).toMatchObject({ ok: false, error: { code: "Validation" } });
    const missing = await tools.read_file.execute({ path: "nope.txt" });
    expect(missing).toMatchObject({ ok: false, error: { code: "NotFound" } });
    await sandbox.commands.run("mkfifo pipe");
    const started = Date.now();
    const fifo = await tools.read_file.execute({ path: "pipe" });
    expect(fifo).toMatchObject({ ok: false, error: { code: "Validation" } });
    expect(fifo.text).toContain("not a regular file");
    expect((await tools.edit_file.execute({ path: "pipe", oldString: "a", newString: "b" })).ok).toBe(false);
    expect(Date.now() - started).toBeLessThan(5000);
    const hostile = await tools.write_file.execute({ path: "we'ird $(name)\n.txt", content: "x" });
    expect(hostile.ok).toBe(true);
    expect((await sandbox.commands.run(["cat", "we'ird $(name)\n.txt"])).stdout).toBe("x");
  });
});

describe("the tools beyond files and commands, on provider-local", () => {
  it("background commands, ports, snapshots, lifecycle and egress", async () => {
    const sandbox = await env.create();
    const tools = createSandboxTools(sandbox, { policy: { destructive: true } });
    await sandbox.files.write("www/index.html", "hello from the sandbox");
    const started = await tools.run_command.execute({
      // On all interfaces: provider-local forwards an exposed port to the sandbox's network address, not to
      // its loopback (its README says so).
      command: "python3 -m http.server 18731 --bind 0.0.0.0 --directory www > server.log 2>&1",
      background: true,
    });
    expect(started.text).toMatch(/^Started in the background with pid \d+\.$/);
    let body = "";
    const exposed = await tools.expose_port.execute({ port: 18731 });
    expect(exposed.ok, exposed.text).toBe(true);
    const url = (exposed.data as { url: string }).url;
    for (let attempt = 0; attempt < 50 && body === ""; attempt++) {
      body = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
        (response) => response.text(),
        () => "",
      );
      if (body === "") await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(body).toBe("hello from the sandbox");

    await sandbox.files.write("state.txt", "before");
    const snapshot = await tools.create_snapshot.execute({ name: "before-change" });
    expect(snapshot.ok).toBe(true);
    const id = (snapshot.data as { id: string }).id;
    await sandbox.files.write("state.txt", "after");
    expect((await tools.list_snapshots.execute({})).text).toContain(id);
    expect((await tools.restore_snapshot.execute({ id })).ok).toBe(true);
    expect((await sandbox.commands.run("cat state.txt")).stdout).toBe("before");
    expect((await tools.restore_snapshot.execute({ id: "nope" })).error?.code).toBe("NotFound");

    expect((await tools.extend_timeout.execute({ timeoutMs: 3_600_000 })).ok).toBe(true);
    expect((await sandbox.getInfo()).expiresAt).toBeInstanceOf(Date);
    expect((await tools.pause_sandbox.execute({})).ok).toBe(true);
    expect((await sandbox.getInfo()).state).toBe("paused");
    expect((await tools.resume_sandbox.execute({})).ok).toBe(true);

    expect((await tools.set_egress.execute({ mode: "allow-list" })).error?.code).toBe("Validation");
    // The provider refuses while a port is exposed; the model gets its reason to act on.
    const refused = await tools.set_egress.execute({ mode: "block-all" });
    expect(refused).toMatchObject({ ok: false, error: { code: "InvalidState" } });
    expect(refused.text).toContain("unexpose ports 18731 first");
    if (sandbox.can("exposePort")) await sandbox.ports.unexpose?.(18731);
    const egress = await tools.set_egress.execute({ mode: "block-all" });
    expect(egress.text).toBe("Outbound network access is now block-all.");
    expect((await tools.stop_sandbox.execute({})).ok).toBe(true);
    expect((await sandbox.getInfo()).state).toBe("stopped");
  });

  it("run_code appears where the code interpreter is (here the core's opt-in runner)", async () => {
    const client = createSandboxClient({ provider: localProvider(root.dir), emulate: ["codeInterpreter"] });
    const sandbox = await client.create();
    try {
      const tools = createSandboxTools(sandbox);
      const result = await tools.run_code.execute({ code: "print(6 * 7)" });
      expect(result.ok).toBe(true);
      expect(result.text).toContain("42");
    } finally {
      await sandbox.destroy();
      await client.dispose();
    }
  });
});
