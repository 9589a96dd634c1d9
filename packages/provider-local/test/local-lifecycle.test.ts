import { existsSync, readdirSync, readFileSync, renameSync } from "node:fs";
import { type DriverSandbox, SandboxError } from "@sbox/core/spec";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalSandboxHandle, local } from "../src/index.js";
import {
  type AnyLocalProvider,
  bundleChild,
  call,
  destroyAll,
  eventually,
  MODES,
  processesWithMarker,
  providerFor,
  run,
  tempStateRoot,
} from "./helpers.js";

const state = tempStateRoot("lifecycle");
let child: Awaited<ReturnType<typeof bundleChild>>;
beforeAll(async () => {
  child = await bundleChild(state.home);
});
afterAll(() => state.cleanup());

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (error === undefined) return undefined;
  if (!SandboxError.isInstance(error)) throw error;
  return error.code;
}

const marker = () => `${50000 + Math.floor(Math.random() * 9999)}.75`;

describe("state root and ids", () => {
  it("defaults to $SBOX_HOME/local and creates nothing until a sandbox is created", async () => {
    const home = `${state.home}/sbox-home`;
    const previous = process.env.SBOX_HOME;
    process.env.SBOX_HOME = home;
    try {
      const provider = local({ isolation: "none" });
      expect(existsSync(home)).toBe(false);
      const sandbox = await provider.doCreate({}, call());
      expect(sandbox.native.dir).toBe(`${home}/local/${sandbox.id}`);
      await provider.doDestroy(sandbox, call());
      expect(readdirSync(`${home}/local`)).toEqual([]);
    } finally {
      if (previous === undefined) delete process.env.SBOX_HOME;
      else process.env.SBOX_HOME = previous;
    }
  });

  it("refuses ids that name a path outside the state root, before touching the filesystem", async () => {
    const provider = providerFor("none", `${state.home}/ids`);
    const sandbox = await provider.doCreate({}, call());
    try {
      for (const id of [
        "",
        "..",
        "../x",
        "/etc",
        "a/b",
        ".",
        "..%2f",
        "x\0y",
        `${sandbox.id}/..`,
        " spaced",
        "UPPER",
      ]) {
        expect(await codeOf(provider.doConnect(id, call())), JSON.stringify(id)).toBe("Validation");
        const handle = { id, native: sandbox.native };
        expect(await codeOf(provider.doExec(handle, { command: { shell: "true" }, ...call() })), id).toBe(
          "Validation",
        );
        expect(await codeOf(provider.doDestroy(handle, call())), id).toBe("Validation");
      }
      expect(await codeOf(provider.doConnect("doesnotexist0000", call()))).toBe("NotFound");
      // The real sandbox was not touched by any of that.
      expect((await provider.doGetInfo(sandbox, call())).state).toBe("running");
    } finally {
      await provider.doDestroy(sandbox, call());
    }
  });

  it("rejects spec fields it cannot honour instead of ignoring them", async () => {
    const provider = providerFor("bwrap", `${state.home}/spec`);
    expect(await codeOf(provider.doCreate({ resources: { gpu: "any" } }, call()))).toBe("Validation");
    expect(await codeOf(provider.doCreate({ resources: { memoryMB: -1 } }, call()))).toBe("Validation");
    expect(await codeOf(provider.doCreate({ resources: { vcpus: 10_000 } }, call()))).toBe("Validation");
    expect(await codeOf(provider.doCreate({ template: "ubuntu" }, call()))).toBe("Validation");
    expect(await codeOf(provider.doCreate({ network: { egress: { allow: ["example.com"] } } }, call()))).toBe(
      "NotSupported",
    );
    const none = providerFor("none", `${state.home}/spec`);
    expect(await codeOf(none.doCreate({ network: { egress: "block-all" } }, call()))).toBe("NotSupported");
    expect(existsSync(`${state.home}/spec`) ? readdirSync(`${state.home}/spec`) : []).toEqual([]);
  });

  it('"auto" uses bubblewrap when it works, and falls back to none with one warning when it does not', async () => {
    const auto = local({ root: `${state.home}/auto` });
    const isolated = await auto.doCreate({}, call());
    expect(((await auto.doGetInfo(isolated, call())).raw as { isolation: string }).isolation).toBe("bwrap");
    await auto.doDestroy(isolated, call());
    const warnings: string[] = [];
    const listener = (warning: Error & { code?: string }) => {
      if (warning.code === "SBOX_LOCAL_NO_ISOLATION") warnings.push(warning.message);
    };
    process.on("warning", listener);
    try {
      const fallback = local({ root: `${state.home}/auto`, bwrapPath: "/nonexistent/bwrap" });
      const unisolated = await fallback.doCreate({}, call());
      const again = local({ root: `${state.home}/auto`, bwrapPath: "/nonexistent/bwrap" });
      const raw = (await again.doGetInfo(unisolated, call())).raw as {
        isolation: string;
        isolationReason: string;
      };
      expect(raw.isolation).toBe("none");
      expect(raw.isolationReason).toContain("not found");
      // Blocking egress needs a network namespace: refused at runtime, with the reason.
      const error = await fallback.doSetEgress!(unisolated, "block-all", call()).catch((e: unknown) => e);
      expect(SandboxError.isInstance(error) && error.code).toBe("NotSupported");
      expect((error as Error).message).toContain("without isolation");
      await fallback.doDestroy(unisolated, call());
      await new Promise((resolve) => setImmediate(resolve));
      // Two providers fell back, one warning line: it is emitted once per process.
      expect(warnings).toHaveLength(1);
    } finally {
      process.off("warning", listener);
    }
  });

  it("fails clearly when bubblewrap is required but missing", async () => {
    const provider = local({
      root: `${state.home}/nobwrap`,
      isolation: "bwrap",
      bwrapPath: "/nonexistent/bwrap",
    });
    const error = await provider.doCreate({}, call()).catch((e: unknown) => e);
    expect(SandboxError.isInstance(error) && error.code).toBe("Provider");
    expect((error as Error).message).toContain("bubblewrap");
  });
});

describe.each(MODES)("lifecycle (%s)", (mode) => {
  let provider: AnyLocalProvider;
  const root = () => `${state.home}/${mode}`;

  beforeAll(() => {
    provider = providerFor(mode, root());
  });
  afterAll(async () => {
    await destroyAll(provider);
  });

  it("getInfo reports live state, metadata, isolation; another program sees and lists the sandbox", async () => {
    const sandbox = await provider.doCreate(
      { name: "first", metadata: { team: "a b", "k=v": "x\ny" } },
      call(),
    );
    const info = await provider.doGetInfo(sandbox, call());
    expect(info).toMatchObject({
      id: sandbox.id,
      state: "running",
      metadata: { team: "a b", "k=v": "x\ny" },
    });
    expect((info.raw as { isolation: string }).isolation).toBe(mode);
    const listed = await child(root(), mode, "list");
    expect(listed.ids).toContain(sandbox.id);
    const created = await child(root(), mode, "create");
    const other = await provider.doConnect(created.id as string, call());
    expect((await provider.doGetInfo(other, call())).metadata).toEqual({ from: "child" });
    await provider.doDestroy(other, call());
    await provider.doDestroy(sandbox, call());
    expect(await codeOf(provider.doGetInfo(sandbox, call()))).toBe("NotFound");
    await provider.doDestroy(sandbox, call());
  });

  it("lists with metadata and state filters", async () => {
    const a = await provider.doCreate({ metadata: { group: "filter-test", n: "1" } }, call());
    const b = await provider.doCreate({ metadata: { group: "filter-test", n: "2" } }, call());
    await provider.doStop!(b, call());
    const ids = async (filter: Parameters<NonNullable<AnyLocalProvider["doList"]>>[0]) => {
      const found: string[] = [];
      for await (const info of provider.doList!(filter, call())) found.push(info.id);
      return found.sort();
    };
    expect(await ids({ metadata: { group: "filter-test" } })).toEqual([a.id, b.id].sort());
    expect(await ids({ metadata: { group: "filter-test" }, state: "stopped" })).toEqual([b.id]);
    expect(await ids({ metadata: { group: "filter-test", n: "1" }, state: ["running", "paused"] })).toEqual([
      a.id,
    ]);
    expect(await ids({ metadata: { group: "nothing" } })).toEqual([]);
    await provider.doDestroy(a, call());
    await provider.doDestroy(b, call());
  });

  it("finishes a destroy whose program died after hiding the directory: none of its processes is left", async () => {
    const sandbox = await provider.doCreate({}, call());
    const seconds = marker();
    await run(provider, sandbox, `sleep ${seconds} >/dev/null 2>&1 &`);
    expect(await eventually(async () => (await processesWithMarker(`sleep\0${seconds}`)).length > 0)).toBe(
      true,
    );
    // What destroy does first, by a program that then died (this pid with another start time is not this one).
    const hidden = `${root()}/.trash-${process.pid}-1-0abc`;
    renameSync(`${root()}/${sandbox.id}`, hidden);
    const listed: string[] = [];
    for await (const info of provider.doList!({}, call())) listed.push(info.id);
    expect(listed).not.toContain(sandbox.id);
    expect(await processesWithMarker(`sleep\0${seconds}`)).toEqual([]);
    expect(existsSync(hidden)).toBe(false);
  });

  it("stop keeps files and refuses commands until resume", async () => {
    const sandbox = await provider.doCreate({}, call());
    await run(provider, sandbox, "echo kept > f");
    await provider.doStop!(sandbox, call());
    expect(await codeOf(provider.doExec(sandbox, { command: { shell: "true" }, ...call() }))).toBe(
      "InvalidState",
    );
    expect(Buffer.from(await provider.doReadFile!(sandbox, "f", call())).toString()).toBe("kept\n");
    await provider.doResume!(sandbox, call());
    expect((await run(provider, sandbox, "cat f")).stdout).toBe("kept\n");
    await provider.doDestroy(sandbox, call());
  });

  it("pause freezes every process and resume lets them continue", async () => {
    const sandbox = await provider.doCreate({}, call());
    const proc = await provider.doSpawn!(sandbox, {
      // $TMPDIR: without isolation a literal /tmp would be the host's.
      command: { shell: 'i=0; while :; do i=$((i+1)); echo $i > "$TMPDIR/counter"; sleep 0.05; done' },
      signal: new AbortController().signal,
      onStdout: () => {},
      onStderr: () => {},
    });
    const counter = async () =>
      Number(Buffer.from(await provider.doReadFile!(sandbox, "/tmp/counter", call())).toString());
    expect(await eventually(async () => (await counter().catch(() => 0)) > 2)).toBe(true);
    await provider.doPause!(sandbox, call());
    expect((await provider.doGetInfo(sandbox, call())).state).toBe("paused");
    const frozen = await counter();
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await counter()).toBe(frozen);
    expect(await codeOf(provider.doExec(sandbox, { command: { shell: "true" }, ...call() }))).toBe(
      "InvalidState",
    );
    await provider.doResume!(sandbox, call());
    expect(await eventually(async () => (await counter()) > frozen)).toBe(true);
    await proc.kill("SIGKILL");
    await proc.wait();
    await provider.doDestroy(sandbox, call());
  });

  it("a sandbox whose time runs out while its provider lives is stopped on time, with no call touching it", async () => {
    const mark = marker();
    const sandbox = await provider.doCreate({}, call());
    await provider.doSpawn!(sandbox, {
      command: { shell: `sleep ${mark}` },
      signal: new AbortController().signal,
      onStdout: () => {},
      onStderr: () => {},
    });
    expect(await eventually(async () => (await processesWithMarker(mark)).length > 0)).toBe(true);
    await provider.doSetTimeout!(sandbox, 300, call());
    // Nothing touches the sandbox: its processes end when its time is up, and the record says stopped.
    expect(await eventually(async () => (await processesWithMarker(mark)).length === 0, 5_000)).toBe(true);
    const listed: string[] = [];
    for await (const entry of provider.doList!({ state: "stopped" }, call())) listed.push(entry.id);
    expect(listed).toContain(sandbox.id);
    // A later setTimeout moves the expiry: the timer of the earlier one does not stop the sandbox again.
    await provider.doSetTimeout!(sandbox, 60_000, call());
    await provider.doResume!(sandbox, call());
    await provider.doSetTimeout!(sandbox, 200, call());
    await provider.doSetTimeout!(sandbox, 60_000, call());
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await provider.doGetInfo(sandbox, call())).state).toBe("running");
    await provider.doDestroy(sandbox, call());
  });

  it("an expired sandbox is stopped on its next call (another program set its time); setTimeout extends it", async () => {
    const mark = marker();
    const sandbox = await provider.doCreate({ ttlMs: 60_000 }, call());
    // Set by a provider instance that is gone: no timer of this program stops it, its next call does.
    const other = providerFor(mode, root());
    await provider.doSpawn!(sandbox, {
      command: { shell: `sleep ${mark}` },
      signal: new AbortController().signal,
      onStdout: () => {},
      onStderr: () => {},
    });
    const info = await provider.doGetInfo(sandbox, call());
    expect(info.expiresAt!.getTime()).toBeGreaterThan(Date.now() + 50_000);
    await other.doSetTimeout!(sandbox, 1, call());
    await other.doDispose!();
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Listing reports it as it is (client.reap() needs to see it); the next call on it stops it.
    const listed: string[] = [];
    for await (const entry of provider.doList!({ state: "running" }, call())) listed.push(entry.id);
    expect(listed).toContain(sandbox.id);
    expect(await codeOf(provider.doExec(sandbox, { command: { shell: "true" }, ...call() }))).toBe(
      "InvalidState",
    );
    expect((await provider.doGetInfo(sandbox, call())).state).toBe("stopped");
    expect(await processesWithMarker(mark)).toEqual([]);
    expect(await codeOf(provider.doResume!(sandbox, call()))).toBe("InvalidState");
    await provider.doSetTimeout!(sandbox, 60_000, call());
    await provider.doResume!(sandbox, call());
    expect((await run(provider, sandbox, "echo back")).stdout).toBe("back\n");
    await provider.doDestroy(sandbox, call());
  });

  it("metrics sum the memory and CPU of the sandbox's processes and its disk use", async () => {
    const sandbox = await provider.doCreate({}, call());
    const idle = await provider.doMetrics!(sandbox, call());
    expect(idle.at).toBeInstanceOf(Date);
    await run(provider, sandbox, "head -c 3000000 /dev/zero > blob");
    let spinning = false;
    const proc = await provider.doSpawn!(sandbox, {
      command: { shell: "echo spinning; while :; do :; done" },
      signal: new AbortController().signal,
      onStdout: (chunk) => {
        spinning ||= Buffer.from(chunk as Uint8Array)
          .toString()
          .includes("spinning");
      },
      onStderr: () => {},
    });
    expect(await eventually(() => spinning)).toBe(true);
    const busy = await provider.doMetrics!(sandbox, call());
    // A spinning loop on a shared, loaded machine may get little CPU; an idle sandbox gets none.
    expect(busy.cpuPercent!).toBeGreaterThan(2);
    expect(idle.cpuPercent ?? 0).toBeLessThan(busy.cpuPercent!);
    expect(busy.memoryBytes!).toBeGreaterThan(100_000);
    expect(busy.diskBytes!).toBeGreaterThanOrEqual(3_000_000);
    await proc.kill();
    await proc.wait();
    await provider.doDestroy(sandbox, call());
  });

  it("snapshots copy the workspace; restore brings it back; list and delete agree", async () => {
    const sandbox = await provider.doCreate({}, call());
    await run(provider, sandbox, "mkdir d && echo one > d/f && ln -s d/f link");
    const snapshot = await provider.doCreateSnapshot!(sandbox, { ...call(), name: "first" });
    expect(snapshot).toMatchObject({ name: "first" });
    await run(provider, sandbox, "echo two > d/f && echo new > added && rm link");
    await provider.doRestoreSnapshot!(sandbox, snapshot, call());
    expect((await run(provider, sandbox, "cat d/f; readlink link; ls")).stdout).toBe("one\nd/f\nd\nlink\n");
    expect((await provider.doListSnapshots!(sandbox, call())).map((s) => s.id)).toEqual([snapshot.id]);
    await provider.doDeleteSnapshot!(sandbox, snapshot, call());
    expect(await provider.doListSnapshots!(sandbox, call())).toEqual([]);
    expect(await codeOf(provider.doRestoreSnapshot!(sandbox, snapshot, call()))).toBe("NotFound");
    expect(
      await codeOf(provider.doRestoreSnapshot!(sandbox, { id: "../../etc", createdAt: new Date() }, call())),
    ).toBe("Validation");
    await provider.doDestroy(sandbox, call());
  });

  it("forks are independent copies of the workspace", async () => {
    const sandbox = await provider.doCreate({ metadata: { origin: "fork-test" } }, call());
    await run(provider, sandbox, "echo base > f");
    const forks = await provider.doFork!(sandbox, { ...call(), count: 2 });
    expect(forks).toHaveLength(2);
    await run(provider, forks[0]!, "echo changed > f");
    expect((await run(provider, forks[1]!, "cat f")).stdout).toBe("base\n");
    expect((await run(provider, sandbox, "cat f")).stdout).toBe("base\n");
    expect((await provider.doGetInfo(forks[1]!, call())).metadata).toEqual({ origin: "fork-test" });
    for (const handle of [sandbox, ...forks]) await provider.doDestroy(handle, call());
  });

  it("exposes a port: an HTTP server started in the sandbox answers at the URL, directly and proxied", async () => {
    // Ports need a network: where no user-mode stack is usable, this test accepts the host's (explicitly).
    const networked = providerFor(mode, root(), { network: { hostNetwork: true } });
    const sandbox = await networked.doCreate({}, call());
    await run(provider, sandbox, "echo 'hello from the sandbox' > index.txt");
    let port = 0;
    let proc: Awaited<ReturnType<NonNullable<AnyLocalProvider["doSpawn"]>>> | undefined;
    // A free port is picked by trying: another test or program may hold any given one.
    for (let attempt = 0; attempt < 5 && !proc; attempt++) {
      port = 20000 + Math.floor(Math.random() * 20000);
      const candidate = await networked.doSpawn!(sandbox, {
        // On every interface: without isolation the port is the host's own; under bubblewrap either works.
        command: { argv: ["python3", "-m", "http.server", String(port), "--bind", "0.0.0.0"] },
        signal: new AbortController().signal,
        onStdout: () => {},
        onStderr: () => {},
      });
      const info = await networked.doExposePort!(sandbox, port, { ...call(), private: false });
      expect(info.url).toBe(`http://127.0.0.1:${port}`);
      const answered = await eventually(async () => {
        // A connection made before the server listens is refused: bound each attempt, and retry.
        const response = await fetch(`${info.url}/index.txt`, { signal: AbortSignal.timeout(3_000) }).catch(
          () => undefined,
        );
        return response?.status === 200 && (await response.text()) === "hello from the sandbox\n";
      }, 15_000);
      if (answered) proc = candidate;
      else {
        await candidate.kill();
        await networked.doUnexposePort!(sandbox, port, call());
      }
    }
    expect(proc).toBeDefined();
    expect(await networked.doListPorts!(sandbox, call())).toEqual([
      { port, url: `http://127.0.0.1:${port}` },
    ]);
    const proxied = await networked.doFetchPort!(
      sandbox,
      port,
      new Request(`http://sandbox:${port}/index.txt`),
    );
    expect(await proxied.text()).toBe("hello from the sandbox\n");
    await networked.doUnexposePort!(sandbox, port, call());
    expect(await networked.doListPorts!(sandbox, call())).toEqual([]);
    await proc!.kill();
    await proc!.wait();
    await networked.doDestroy(sandbox, call());
  });

  it("opens a pty that echoes input, resizes and exits", async () => {
    const sandbox = await provider.doCreate({}, call());
    let output = "";
    const pty = await provider.doCreatePty!(sandbox, {
      ...call(),
      cols: 80,
      rows: 24,
      command: 'stty size; read line; echo "got:$line"',
      onData: (data) => {
        output += Buffer.from(data).toString();
      },
    });
    expect(await eventually(() => output.includes("24 80"))).toBe(true);
    await pty.resize(100, 30);
    await pty.write("hello\r");
    expect(await pty.wait()).toEqual({ exitCode: 0 });
    expect(output).toContain("got:hello");
    await provider.doDestroy(sandbox, call());
  });
});

describe("egress control (bubblewrap)", () => {
  let provider: AnyLocalProvider;
  let opened: AnyLocalProvider;
  let sandbox: DriverSandbox<LocalSandboxHandle>;
  let server: import("node:http").Server;
  let port = 0;
  let userMode = false;

  beforeAll(async () => {
    provider = providerFor("bwrap", `${state.home}/egress`);
    // The host's loopback, opened explicitly: the only way a sandbox reaches a server on this machine.
    // Where no user-mode stack is usable, allow-all needs the host's network, accepted explicitly here.
    opened = local({
      root: `${state.home}/egress`,
      isolation: "bwrap",
      network: { hostLoopback: true, hostNetwork: true },
    });
    sandbox = await opened.doCreate({}, call());
    const info = (await opened.doGetInfo(sandbox, call())).raw as { network: { mode: string } };
    userMode = info.network.mode === "user-mode";
    const { createServer } = await import("node:http");
    server = createServer((_, response) => response.end("host answered"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as import("node:net").AddressInfo).port;
  });
  afterAll(async () => {
    await destroyAll(provider);
    await new Promise((resolve) => server.close(resolve));
  });

  const reach = (target: DriverSandbox<LocalSandboxHandle>, host: string) =>
    run(
      provider,
      target,
      `python3 -c "import urllib.request; print(urllib.request.urlopen('http://${host}:${port}', timeout=3).read().decode())" 2>&1 | tail -1`,
    );
  // With the user-mode network the host's loopback is the sandbox's gateway; with the host's own network, it is.
  const host = () => (userMode ? "10.0.2.2" : "127.0.0.1");

  it("block-all really blocks a server on the host, allow-all lets it through again", async () => {
    expect((await reach(sandbox, host())).stdout).toBe("host answered\n");
    await opened.doSetEgress!(sandbox, "block-all", call());
    expect((await reach(sandbox, host())).stdout).not.toContain("host answered");
    expect(await codeOf(opened.doExposePort!(sandbox, 8080, { ...call(), private: false }))).toBe(
      "InvalidState",
    );
    await opened.doSetEgress!(sandbox, "allow-all", call());
    expect((await reach(sandbox, host())).stdout).toBe("host answered\n");
  });

  it("a sandbox created with block-all has no network from its first command", async () => {
    const blocked = await provider.doCreate({ network: { egress: "block-all" } }, call());
    const result = await run(provider, blocked, "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '");
    expect(result.stdout).toBe("lo\n");
    await provider.doDestroy(blocked, call());
  });

  it("the network stack ends by itself once the sandbox's processes are gone, however they ended", async (context) => {
    if (!userMode) context.skip(); // the host's own network: no stack of its own
    const target = await provider.doCreate({}, call());
    await run(provider, target, "true");
    const holderFile = `${state.home}/egress/${target.id}/holder.json`;
    const holder = JSON.parse(readFileSync(holderFile, "utf8")) as {
      init: { pid: number };
      stack: { pid: number };
    };
    expect(existsSync(`/proc/${holder.stack.pid}`)).toBe(true);
    // Not through the provider: as if the machine's OOM killer or an administrator ended the namespaces.
    process.kill(holder.init.pid, "SIGKILL");
    const gone = () => {
      try {
        return /\) [ZX] /.test(readFileSync(`/proc/${holder.stack.pid}/stat`, "utf8"));
      } catch {
        return true;
      }
    };
    expect(await eventually(gone, 10_000)).toBe(true);
    await provider.doDestroy(target, call());
  });

  it("refuses allow-lists rather than pretending", async () => {
    expect(await codeOf(provider.doSetEgress!(sandbox, { allow: ["127.0.0.1"] }, call()))).toBe(
      "NotSupported",
    );
  });
});
