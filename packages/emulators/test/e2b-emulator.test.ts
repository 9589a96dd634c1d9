/**
 * The E2B emulator through the unmodified `e2b` SDK: the flow a user's own tests go through with nothing
 * but the emulator's environment variables set, and the behaviours the issue names (signed URLs, dropped
 * streams on kill, signals seen from inside, pause/resume, snapshots, fork limits). Runs on provider-local
 * unless SBOX_EMULATOR_BACKEND=docker; the layout test needs the docker backend and its base image.
 */
import { execFileSync } from "node:child_process";
import { request as httpRequest } from "node:http";
import { CommandExitError, Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { formatMediaType } from "../src/e2b/e2b-envd-files.js";
import { type E2BEmulator, startE2BEmulator } from "../src/e2b/index.js";

const backend = process.env.SBOX_EMULATOR_BACKEND === "docker" ? ("docker" as const) : ("local" as const);

function hasBaseImage(): boolean {
  try {
    execFileSync("docker", ["image", "inspect", "sbox-e2b-base:latest"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** GET with an explicit Host header (fetch() does not send one). */
function getWithHost(url: string, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { headers: { Host: host } }, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        body += chunk;
      });
      response.on("end", () => resolve(body));
    });
    request.on("error", reject);
    request.end();
  });
}

let emulator: E2BEmulator;
const saved: Record<string, string | undefined> = {};
beforeAll(async () => {
  emulator = await startE2BEmulator({ backend });
  // The SDK reads these itself: no option is passed to it below.
  for (const [name, value] of Object.entries(emulator.env)) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
});
afterAll(async () => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await emulator?.close();
});

async function withSandbox<T>(run: (sandbox: Sandbox) => Promise<T>, opts = {}): Promise<T> {
  const sandbox = await Sandbox.create(opts);
  try {
    return await run(sandbox);
  } finally {
    await sandbox.kill().catch(() => undefined);
  }
}

test("env names exactly what the SDK needs", () => {
  expect(Object.keys(emulator.env).sort()).toEqual([
    "E2B_API_KEY",
    "E2B_API_URL",
    "E2B_DOMAIN",
    "E2B_SANDBOX_URL",
  ]);
  expect(emulator.env.E2B_API_KEY).toMatch(/^e2b_[0-9a-f]{40}$/);
});

test("create, run a command, write and read a file, kill: with only the printed variables", async () => {
  const sandbox = await Sandbox.create();
  expect(emulator.sandboxIds()).toContain(sandbox.sandboxId);
  const result = await sandbox.commands.run("echo hello from $0; exit 0");
  expect(result.stdout).toMatch(/^hello from /);
  await sandbox.files.write("notes/ü file.txt", "it's $(here)\n");
  expect(await sandbox.files.read("notes/ü file.txt")).toBe("it's $(here)\n");
  expect((await sandbox.commands.run("cat 'notes/ü file.txt'")).stdout).toBe("it's $(here)\n");
  expect(await sandbox.kill()).toBe(true);
  expect(emulator.sandboxIds()).not.toContain(sandbox.sandboxId);
  await expect(sandbox.commands.run("true")).rejects.toThrow();
  expect(await Sandbox.kill(sandbox.sandboxId)).toBe(false);
});

test("a wrong API key is 401 for the SDK", async () => {
  await expect(Sandbox.create({ apiKey: "e2b_0000000000000000000000000000000000000000" })).rejects.toThrow(
    /401|Invalid API key|Unauthorized/i,
  );
});

test.runIf(backend === "docker" && hasBaseImage())(
  "the docker backend lays sandboxes out as E2B's base template: user `user`, /home/user, sudo",
  async () => {
    await withSandbox(async (sandbox) => {
      const r = await sandbox.commands.run("whoami; pwd; echo $HOME; sudo -n whoami");
      expect(r.stdout).toBe("user\n/home/user\n/home/user\nroot\n");
      await sandbox.files.write("owned.txt", "x");
      expect((await sandbox.files.getInfo("/home/user/owned.txt")).owner).toBe("user");
      expect((await sandbox.commands.run("whoami", { user: "root" })).stdout).toBe("root\n");
    });
  },
);

test("kill from inside the sandbox: envd's pid is the one inside, and the end says signal: killed", async () => {
  await withSandbox(async (sandbox) => {
    const handle = await sandbox.commands.run("sleep 600", { background: true });
    const ps = await sandbox.commands.run(`ps -o args= -p ${handle.pid}`);
    expect(ps.stdout.trim()).toMatch(/sleep 600$/);
    await sandbox.commands.run(`kill -9 ${handle.pid}`);
    const error = await handle.wait().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandExitError);
    expect((error as CommandExitError).error).toBe("signal: killed");
  });
});

test("a sandbox killed mid-command drops the stream instead of ending it cleanly", async () => {
  const sandbox = await Sandbox.create();
  const handle = await sandbox.commands.run("sleep 600", { background: true });
  await Sandbox.kill(sandbox.sandboxId);
  const error = await handle.wait().catch((e: unknown) => e);
  expect(error).toBeInstanceOf(Error);
  expect(error).not.toBeInstanceOf(CommandExitError);
});

test("signed URLs of a secure sandbox: valid ones work, tampered or expired ones are refused", async () => {
  await withSandbox(
    async (sandbox) => {
      await sandbox.files.write("signed.txt", "secret content");
      const url = await sandbox.downloadUrl("signed.txt");
      expect(url).toContain("signature=");
      expect(await (await fetch(url)).text()).toBe("secret content");
      const tampered = url.replace(/signature=v1_[^&]+/, "signature=v1_forged");
      expect((await fetch(tampered)).status).toBe(401);
      const expiring = await sandbox.downloadUrl("signed.txt", { useSignatureExpiration: 1 });
      expect(expiring).toContain("signature_expiration=");
      await new Promise((resolve) => setTimeout(resolve, 2_100));
      expect((await fetch(expiring)).status).toBe(401);
      const upload = await sandbox.uploadUrl("up.txt");
      const form = new FormData();
      form.append("file", new Blob(["uploaded"]), "up.txt");
      expect((await fetch(upload, { method: "POST", body: form })).status).toBe(200);
      expect(await sandbox.files.read("up.txt")).toBe("uploaded");
      const unsigned = new URL(url);
      unsigned.searchParams.delete("signature");
      expect((await fetch(unsigned)).status).toBe(401);
    },
    { secure: true },
  );
});

test("pause keeps files and running processes; connect resumes", async () => {
  await withSandbox(async (sandbox) => {
    await sandbox.files.write("kept.txt", "kept");
    const handle = await sandbox.commands.run("sleep 600", { background: true });
    expect(await sandbox.pause()).toBe(true);
    expect((await Sandbox.getInfo(sandbox.sandboxId)).state).toBe("paused");
    const resumed = await Sandbox.connect(sandbox.sandboxId);
    expect((await resumed.getInfo()).state).toBe("running");
    expect(await resumed.files.read("kept.txt")).toBe("kept");
    const running = await resumed.commands.list();
    expect(running.map((p) => p.pid)).toContain(handle.pid);
  });
});

test("a snapshot seeds new sandboxes with the files, and is listed until deleted", async () => {
  await withSandbox(async (sandbox) => {
    await sandbox.files.write("from-snapshot.txt", "v1");
    const snapshot = await sandbox.createSnapshot();
    try {
      expect(snapshot.snapshotId).toMatch(/:default$/);
      const listed: string[] = [];
      for (const page = Sandbox.listSnapshots(); page.hasNext; ) {
        for (const item of await page.nextItems()) listed.push(item.snapshotId);
      }
      expect(listed).toContain(snapshot.snapshotId);
      await withSandbox(
        async (child) => {
          expect(await child.files.read("from-snapshot.txt")).toBe("v1");
        },
        { template: snapshot.snapshotId } as never,
      );
    } finally {
      expect(await Sandbox.deleteSnapshot(snapshot.snapshotId)).toBe(true);
    }
  });
});

test("fork: copies with the parent's files; count below 1 is a 400", async () => {
  await withSandbox(async (sandbox) => {
    await sandbox.files.write("forked.txt", "parent");
    const forks = await sandbox.fork({ count: 1 });
    expect(forks).toHaveLength(1);
    const child = forks[0] as Sandbox;
    try {
      expect(await child.files.read("forked.txt")).toBe("parent");
    } finally {
      await child.kill();
    }
    const response = await fetch(`${emulator.url}/sandboxes/${sandbox.sandboxId}/fork`, {
      method: "POST",
      headers: { "X-API-Key": emulator.apiKey, "Content-Type": "application/json" },
      body: JSON.stringify({ count: 0 }),
    });
    expect(response.status).toBe(400);
  });
});

describe("ports", () => {
  // Real envd also forwards servers bound to the sandbox's loopback: on both backends they answer too
  // (provider-local's exposed ports reach the sandbox's loopback; docker's go through the in-sandbox relay).
  const binds = ["0.0.0.0", "127.0.0.1"];
  test.each(binds)(
    "a server inside bound to %s answers at the path form and at the per-port host",
    async (bind) => {
      await withSandbox(async (sandbox) => {
        await sandbox.files.write("www/index.html", "served");
        await sandbox.commands.run(`cd www && python3 -m http.server 8123 --bind ${bind}`, {
          background: true,
        });
        const url = `${emulator.portUrl(sandbox.sandboxId, 8123)}/index.html`;
        let body = "";
        for (let i = 0; i < 50 && body !== "served"; i++) {
          body = await fetch(url).then(
            (r) => (r.ok ? r.text() : ""),
            () => "",
          );
          if (body !== "served") await new Promise((resolve) => setTimeout(resolve, 200));
        }
        expect(body).toBe("served");
        // fetch() may not set Host; browsers and curl reach it as http://8123-<id>.e2b.localhost:<port>.
        expect(await getWithHost(`${emulator.sandboxUrl}/index.html`, sandbox.getHost(8123))).toBe("served");
        // Nothing listens on 8124: E2B's proxy answers 502 at once, it does not hang.
        const asked = Date.now();
        const closed = await fetch(`${emulator.portUrl(sandbox.sandboxId, 8124)}/`, {
          signal: AbortSignal.timeout(10_000),
        });
        expect(closed.status).toBe(502);
        expect(Date.now() - asked).toBeLessThan(5_000);
      });
    },
  );
});

test("close kills every sandbox", async () => {
  const own = await startE2BEmulator({ backend });
  const sandbox = await Sandbox.create({
    apiKey: own.apiKey,
    apiUrl: own.url,
    sandboxUrl: own.sandboxUrl,
    domain: own.domain,
  });
  const record = own.sandboxRecord(sandbox.sandboxId)!;
  await own.close();
  expect(own.sandboxIds()).toEqual([]);
  await expect(record.backend.commands.run("true")).rejects.toThrow();
});

describe("envd's Content-Disposition (Go's mime.FormatMediaType)", () => {
  test.each([
    ["document.pdf", "inline; filename=document.pdf"],
    ["a b.txt", 'inline; filename="a b.txt"'],
    ['q"uo\\te', 'inline; filename="q\\"uo\\\\te"'],
    ["ü 🎉.txt", "inline; filename*=utf-8''%C3%BC%20%F0%9F%8E%89.txt"],
    ["new\nline", "inline; filename*=utf-8''new%0Aline"],
  ])("%j", (name, header) => {
    expect(formatMediaType("inline", "filename", name)).toBe(header);
  });
});
