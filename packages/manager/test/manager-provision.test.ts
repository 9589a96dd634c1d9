import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, normalize } from "node:path";
import { createSandboxClient, SandboxError } from "@sbox/core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ProvisionError } from "../src/manager-errors.js";
import { RECORD_LABEL } from "../src/manager-labels.js";
import { collect, type ManagerFixture, managerFixture } from "./fixtures.js";

const TOKEN = "s3cr3t-t0ken-$(whoami)-'quoted'";
const USER = "robot";
const BASIC = Buffer.from(`${USER}:${TOKEN}`).toString("base64");

function git(cwd: string, ...args: string[]): string {
  return execFileSync(
    "git",
    ["-c", "user.email=t@example.invalid", "-c", "user.name=T", "-c", "init.defaultBranch=main", ...args],
    {
      cwd,
      encoding: "utf8",
    },
  ).trim();
}

/** A bare repository with two commits on main, a tag on the first, served over dumb HTTP behind Basic auth. */
let repoRoot: string;
let bare: string;
let firstCommit: string;
let server: Server;
let httpUrl: string;
const requests: { path: string; authorization: string | undefined }[] = [];

beforeAll(async () => {
  repoRoot = mkdtempSync(join(tmpdir(), "sbox-manager-git-"));
  const work = join(repoRoot, "work");
  execFileSync("mkdir", ["-p", work]);
  git(work, "init", "-q");
  writeFileSync(join(work, "README"), "version one\n");
  git(work, "add", "README");
  git(work, "commit", "-q", "-m", "one");
  firstCommit = git(work, "rev-parse", "HEAD");
  git(work, "tag", "v1");
  writeFileSync(join(work, "README"), "version two\n");
  git(work, "commit", "-q", "-am", "two");
  bare = join(repoRoot, "repo.git");
  git(repoRoot, "clone", "-q", "--bare", work, bare);
  git(bare, "update-server-info");
  server = createServer((request, response) => {
    requests.push({ path: request.url ?? "", authorization: request.headers.authorization });
    if (request.headers.authorization !== `Basic ${BASIC}`) {
      response.writeHead(401, { "WWW-Authenticate": 'Basic realm="test"' });
      response.end();
      return;
    }
    const path = normalize(decodeURIComponent(new URL(request.url ?? "/", "http://x").pathname)).replace(
      /^\/repo\.git/,
      "",
    );
    try {
      const file = join(bare, path);
      if (!file.startsWith(bare) || !statSync(file).isFile()) throw new Error("not a file");
      response.writeHead(200);
      response.end(readFileSync(file));
    } catch {
      response.writeHead(404);
      response.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  httpUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/repo.git`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(repoRoot, { recursive: true, force: true });
});

async function rejection(promise: Promise<unknown>): Promise<SandboxError> {
  try {
    await promise;
  } catch (error) {
    if (SandboxError.isInstance(error)) return error;
    throw new Error(`expected a SandboxError, got ${String(error)}`);
  }
  throw new Error("expected a rejection");
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

describe("SandboxManager provisioning (provider-local)", () => {
  const fixtures: ManagerFixture[] = [];
  const fixture = (options?: Parameters<typeof managerFixture>[0]) => {
    const f = managerFixture(options);
    fixtures.push(f);
    return f;
  };
  afterEach(async () => {
    for (const f of fixtures.splice(0)) await f.cleanup();
  });

  async function providerHas(f: ManagerFixture, recordId: string): Promise<number> {
    const client = createSandboxClient({ provider: f.provider });
    let count = 0;
    for await (const _ of client.list({ metadata: { [RECORD_LABEL]: recordId } })) count++;
    await client.dispose();
    return count;
  }

  it("clones a branch shallowly, a tag, and a commit id; setup runs in the checkout", async () => {
    const { manager } = fixture();
    const shallow = await manager.create({
      spec: { git: { url: `file://${bare}`, ref: "main", depth: 1 }, setup: ["cat README > seen.txt"] },
    });
    expect(shallow.runtime.checkoutDir).toBe(`${shallow.runtime.workdir}/repo`);
    expect((await manager.exec(shallow.id, "git -C repo rev-list --count HEAD")).stdout.trim()).toBe("1");
    expect(await manager.readFile(shallow.id, "repo/seen.txt", { encoding: "utf8" })).toBe("version two\n");

    const tagged = await manager.create({ spec: { git: { url: `file://${bare}`, ref: "v1", dir: "src" } } });
    expect(await manager.readFile(tagged.id, "src/README", { encoding: "utf8" })).toBe("version one\n");

    const pinned = await manager.create({ spec: { git: { url: bare, ref: firstCommit } } });
    expect((await manager.exec(pinned.id, "git -C repo rev-parse HEAD")).stdout.trim()).toBe(firstCommit);
    expect(pinned.spec.git).toEqual({ url: bare, ref: firstCommit, dir: "repo", authenticated: false });
  });

  it("clones over HTTP with credentials that reach no record, history or log", async () => {
    const { manager, store } = fixture();
    requests.length = 0;
    const record = await manager.create({
      spec: { git: { url: httpUrl, credentials: { username: USER, token: TOKEN } }, setup: ["cat README"] },
    });
    expect(requests.some((r) => r.authorization === `Basic ${BASIC}`)).toBe(true);
    expect(await manager.readFile(record.id, "repo/README", { encoding: "utf8" })).toBe("version two\n");
    expect(record.spec.git).toEqual({ url: httpUrl, dir: "repo", authenticated: true });

    // Userinfo in the URL is moved out of it, never stored.
    const withUserinfo = httpUrl.replace("http://", `http://${USER}:${encodeURIComponent(TOKEN)}@`);
    const second = await manager.create({ spec: { git: { url: withUserinfo } } });
    expect(second.spec.git?.url).toBe(httpUrl);

    for (const id of [record.id, second.id]) {
      const everything = [
        JSON.stringify(await store.get(id)),
        JSON.stringify(await store.history(id)),
        await collect(manager.logs(id, { source: "setup" })),
        (await manager.exec(id, "cat .sbox-manager/setup.log; cat repo/.git/config")).stdout,
      ].join("\n");
      expect(everything).toContain("==> git clone");
      expect(everything).not.toContain(TOKEN);
      expect(everything).not.toContain(encodeURIComponent(TOKEN));
      expect(everything).not.toContain(BASIC);
    }
  });

  it("marks the record failed with GitFailed when the clone is refused, without leaking the credential", async () => {
    const f = fixture();
    const error = await rejection(
      f.manager.create({
        spec: { git: { url: httpUrl, credentials: { username: USER, password: `${TOKEN}-wrong` } } },
      }),
    );
    expect(error).toBeInstanceOf(ProvisionError);
    const failure = (error as ProvisionError).failure;
    expect(failure.code).toBe("GitFailed");
    expect(failure.exitCode).not.toBe(0);
    expect(failure.outputTail).toMatch(/401|Authentication failed|could not read/i);
    const record = await f.manager.get((error as ProvisionError).recordId);
    expect(record.status).toBe("failed");
    expect(record.error).toMatchObject({ code: "GitFailed", exitCode: failure.exitCode });
    const text = `${error.message}\n${JSON.stringify(record)}\n${JSON.stringify(await f.manager.history(record.id))}`;
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(Buffer.from(`${USER}:${TOKEN}-wrong`).toString("base64"));
    expect(await providerHas(f, record.id)).toBe(0);
  });

  it("marks the record failed at the failing setup step with its exit code and output tail, and destroys the sandbox", async () => {
    const f = fixture();
    const error = await rejection(
      f.manager.create({
        spec: {
          setup: [
            "echo first-step-output",
            { name: "breaks", run: "echo to-stdout; echo to-stderr >&2; exit 3" },
            "echo never-runs > never.txt",
          ],
        },
      }),
    );
    expect(error).toBeInstanceOf(ProvisionError);
    expect(error.code).toBe("Provider");
    expect(error.retryable).toBe(false);
    const { failure, recordId } = error as ProvisionError;
    expect(failure).toMatchObject({ code: "SetupFailed", step: { index: 1, name: "breaks" }, exitCode: 3 });
    expect(failure.outputTail).toContain("==> breaks");
    expect(failure.outputTail).toContain("to-stdout");
    expect(failure.outputTail).toContain("to-stderr");
    expect(failure.outputTail).not.toContain("first-step-output");
    expect(error.message).toContain("step 2 (breaks)");
    const record = await f.manager.get(recordId);
    expect(record.status).toBe("failed");
    expect(record.error).toEqual(failure);
    expect(record.sandboxId).toMatch(/^local:/);
    expect(await providerHas(f, recordId)).toBe(0);
    expect((await f.manager.history(recordId)).map((h) => h.toStatus)).toEqual([
      "creating",
      "starting",
      "starting",
      "failed",
    ]);
    // A failed record can be destroyed; it is kept as destroyed.
    expect((await f.manager.destroy(recordId)).status).toBe("destroyed");
  });

  it("fails a setup step that runs past its timeout", async () => {
    const { manager } = fixture();
    const started = Date.now();
    const error = await rejection(
      manager.create({ spec: { setup: [{ name: "slow", run: "echo going; sleep 30", timeoutMs: 500 }] } }),
    );
    expect(Date.now() - started).toBeLessThan(20_000);
    const { failure } = error as ProvisionError;
    expect(failure.code).toBe("SetupFailed");
    expect(failure.message).toContain("timed out after 500 ms");
    expect(failure.outputTail).toContain("going");
  });

  it("runs the main process detached, keeps its log, follows it, and restarts it on resume", async () => {
    const { manager } = fixture();
    const record = await manager.create({
      spec: {
        setup: ["echo preparing"],
        start: 'echo "started $$"; i=0; while :; do i=$((i+1)); echo "tick $i"; sleep 0.05; done',
      },
    });
    expect(record.runtime.startPid).toBeGreaterThan(0);
    expect(await collect(manager.logs(record.id, { source: "setup" }))).toContain("preparing");
    expect(await collect(manager.logs(record.id))).toContain("started");

    const controller = new AbortController();
    let followed = "";
    for await (const chunk of manager.logs(record.id, {
      follow: true,
      signal: controller.signal,
      pollMs: 50,
    })) {
      followed += chunk;
      if (/tick (1[0-9]|[2-9][0-9])/.test(followed)) controller.abort();
    }
    expect(followed).toMatch(/^started \d+\n/);
    expect(followed).toContain("tick 10");

    await manager.stop(record.id);
    const resumed = await manager.resume(record.id);
    expect(resumed.runtime.startPid).toBeGreaterThan(0);
    expect(resumed.runtime.startPid).not.toBe(record.runtime.startPid);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const log = await collect(manager.logs(record.id));
    expect(log.match(/started \d+/g)).toHaveLength(2);

    // A follow ends by itself when the sandbox stops.
    const following = collect(manager.logs(record.id, { follow: true, pollMs: 50 }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    await manager.stop(record.id);
    expect(await following).toContain("tick");
  });

  it("lets the setup log be followed while setup is still running", async () => {
    const { manager } = fixture();
    const creating = manager.create({
      labels: { job: "live" },
      spec: { setup: ["echo early-output", "sleep 1.5", "echo late-output"] },
    });
    let id: string | undefined;
    while (!id) {
      const [record] = await manager.list({ labels: { job: "live" } });
      if (record?.runtime.setupLog) id = record.id;
      else await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const controller = new AbortController();
    let seen = "";
    let statusWhenEarly: string | undefined;
    for await (const chunk of manager.logs(id, {
      source: "setup",
      follow: true,
      signal: controller.signal,
      pollMs: 50,
    })) {
      seen += chunk;
      if (statusWhenEarly === undefined && seen.includes("early-output"))
        statusWhenEarly = (await manager.get(id)).status;
      if (seen.includes("late-output")) controller.abort();
    }
    expect(statusWhenEarly).toBe("starting");
    expect((await creating).status).toBe("running");
  });

  it("fails the create when the main process exits right away", async () => {
    const { manager } = fixture();
    const error = await rejection(manager.create({ spec: { start: "echo bye-bye; exit 4" } }));
    expect((error as ProvisionError).failure).toMatchObject({ code: "StartFailed", exitCode: 4 });
    expect((error as ProvisionError).failure.outputTail).toContain("bye-bye");
  });

  it("exposes spec ports and answers getUrl with a URL that reaches the server", async () => {
    const { manager } = fixture();
    const port = await freePort();
    const record = await manager.create({
      spec: {
        ports: [port],
        start: [
          "node",
          "-e",
          `require("http").createServer((q, s) => s.end("hello " + q.url)).listen(${port}, "127.0.0.1")`,
        ],
      },
    });
    expect(record.runtime.urls).toEqual({ [String(port)]: `http://127.0.0.1:${port}` });
    const url = await manager.getUrl(record.id, port);
    let body = "";
    for (let attempt = 0; attempt < 50 && !body; attempt++) {
      body = await fetch(`${url}/path`).then(
        (r) => r.text(),
        () => "",
      );
      if (!body) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(body).toBe("hello /path");
    const other = await freePort();
    expect(await manager.getUrl(record.id, other)).toBe(`http://127.0.0.1:${other}`);
    expect((await manager.get(record.id)).runtime.urls?.[String(other)]).toBe(`http://127.0.0.1:${other}`);
    expect((await rejection(manager.getUrl(record.id, 0))).code).toBe("Validation");
    expect(() => manager.logs(record.id, { source: "nope" as never })).toThrow(
      expect.objectContaining({ code: "Validation" }),
    );
  });

  it("has no main-process log for a spec without start", async () => {
    const { manager } = fixture();
    const record = await manager.create();
    expect((await rejection(collect(manager.logs(record.id)))).code).toBe("InvalidState");
  });
});
