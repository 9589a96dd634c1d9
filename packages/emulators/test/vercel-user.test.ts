/**
 * Who runs what in the Vercel Sandbox emulator, spoken to by `@vercel/sandbox` itself: on the docker
 * backend with the `sbox-vercel-base` image (scripts/build-vercel-base-image.sh) commands and file calls run
 * as `vercel-sandbox`, which has password-less sudo, and `sudo: true` commands run as root with sudo's
 * environment — as on the service. The docker tests are skipped, saying why, without a Docker Engine or the
 * image; the request validation runs on provider-local.
 */
import { execFileSync } from "node:child_process";
import { Sandbox } from "@vercel/sandbox";
import { afterAll, describe, expect, test } from "vitest";
import {
  startVercelEmulator,
  VERCEL_DOCKER_DEFAULT_IMAGE,
  type VercelEmulator,
} from "../src/vercel/index.js";

function hasBaseImage(): boolean {
  try {
    execFileSync("docker", ["image", "inspect", VERCEL_DOCKER_DEFAULT_IMAGE], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

const emulators: VercelEmulator[] = [];
afterAll(async () => {
  await Promise.all(emulators.map((e) => e.close()));
});

async function open(backend: "docker" | "local"): Promise<{ emu: VercelEmulator; sandbox: Sandbox }> {
  const emu = await startVercelEmulator({ backend });
  emulators.push(emu);
  const creds = { token: emu.token, teamId: emu.teamId, projectId: emu.projectId, fetch: emu.fetch };
  return { emu, sandbox: await Sandbox.create({ ...creds, runtime: "node24" }) };
}

async function run(sandbox: Sandbox, params: Parameters<Sandbox["runCommand"]>[0] & object) {
  const result = await sandbox.runCommand({ ...params, detached: false } as never);
  const done = result as unknown as {
    exitCode: number;
    stdout(): Promise<string>;
    stderr(): Promise<string>;
  };
  return { exitCode: done.exitCode, stdout: await done.stdout(), stderr: await done.stderr() };
}

const docker = hasBaseImage();
describe.skipIf(!docker)(
  `the docker backend on ${VERCEL_DOCKER_DEFAULT_IMAGE} (skipped: no Docker Engine or no image; scripts/build-vercel-base-image.sh builds it)`,
  () => {
    test("commands run as vercel-sandbox in /vercel/sandbox; sudo: true runs as root with sudo's environment", async () => {
      const { sandbox } = await open("docker");
      const user = await run(sandbox, { cmd: "sh", args: ["-c", 'id -un; id -u; pwd; echo "$HOME"'] });
      expect(user.stdout.split("\n").slice(0, 4)).toEqual([
        "vercel-sandbox",
        "1000",
        "/vercel/sandbox",
        "/home/vercel-sandbox",
      ]);
      const root = await run(sandbox, { cmd: "env", sudo: true, env: { FOO: "bar $(id)\nnext" } });
      expect(root.exitCode).toBe(0);
      expect(root.stdout).toContain("USER=root\n");
      expect(root.stdout).toContain("SUDO_USER=vercel-sandbox\n");
      // The variable arrives as given: no shell ever sees it.
      expect(root.stdout).toContain("FOO=bar $(id)\nnext\n");
      // The user's own sudo works without a password, as on the service.
      const viaSudo = await run(sandbox, { cmd: "sudo", args: ["-n", "id", "-u"] });
      expect(viaSudo.stdout.trim()).toBe("0");
      await sandbox.stop();
    });

    test("the file API works as vercel-sandbox: its files and directories, root's are refused", async () => {
      const { sandbox } = await open("docker");
      await sandbox.writeFiles([{ path: "nested/dir/a file $(x).txt", content: Buffer.from("hi") }]);
      const owners = await run(sandbox, {
        cmd: "stat",
        args: ["-c", "%U %n", "nested", "nested/dir", "nested/dir/a file $(x).txt"],
      });
      expect(owners.stdout.trim().split("\n")).toEqual([
        "vercel-sandbox nested",
        "vercel-sandbox nested/dir",
        "vercel-sandbox nested/dir/a file $(x).txt",
      ]);
      await expect(
        sandbox.writeFiles([{ path: "/etc/sbox-test", content: Buffer.from("x") }]),
      ).rejects.toThrow();
      const etc = await run(sandbox, { cmd: "test", args: ["-e", "/etc/sbox-test"] });
      expect(etc.exitCode).toBe(1);
      await expect(sandbox.readFileToBuffer({ path: "/etc/shadow" })).rejects.toThrow(/400/);
      expect(await sandbox.readFileToBuffer({ path: "/etc/no-such-file" })).toBeNull();
      await sandbox.mkDir("made");
      expect((await run(sandbox, { cmd: "stat", args: ["-c", "%U", "made"] })).stdout.trim()).toBe(
        "vercel-sandbox",
      );
      await expect(sandbox.mkDir("/root/not-mine")).rejects.toThrow();
      await sandbox.stop();
    });

    test("users made with the SDK's sudo helpers are real accounts with their own permissions", async () => {
      const { sandbox } = await open("docker");
      const alice = await sandbox.createUser("alice");
      await alice.writeFiles([{ path: "secret.txt", content: Buffer.from("alice's") }]);
      await alice.runCommand({ cmd: "chmod", args: ["600", "/home/alice/secret.txt"] });
      expect((await alice.runCommand("whoami")).exitCode).toBe(0);
      // The default user is in the home's group but the file is alice's alone.
      const other = await run(sandbox, { cmd: "cat", args: ["/home/alice/secret.txt"] });
      expect(other.exitCode).not.toBe(0);
      expect(String(await alice.readFileToBuffer({ path: "secret.txt" }))).toBe("alice's");
      await sandbox.stop();
    });

    test("commands take SIGINT and SIGQUIT as on the service (130, 131), though the backend starts them in a shell's background", async () => {
      const { sandbox } = await open("docker");
      for (const [signal, code] of [
        ["SIGINT", 130],
        ["SIGQUIT", 131],
      ] as const) {
        const command = await sandbox.runCommand({ cmd: "sleep", args: ["200"], detached: true });
        await command.kill(signal);
        expect((await command.wait()).exitCode).toBe(code);
      }
      await sandbox.stop();
    });

    test("a snapshot is the whole disk: accounts and files outside the workdir come back in a sandbox made from it", async () => {
      const { emu, sandbox } = await open("docker");
      await sandbox.createUser("carol");
      await run(sandbox, { cmd: "sh", args: ["-c", "echo kept > /tmp/outside.txt"], sudo: true });
      const snapshot = await sandbox.snapshot();
      const creds = { token: emu.token, teamId: emu.teamId, projectId: emu.projectId, fetch: emu.fetch };
      const copy = await Sandbox.create({
        ...creds,
        source: { type: "snapshot", snapshotId: snapshot.snapshotId },
      });
      expect((await run(copy, { cmd: "id", args: ["-un", "carol"] })).stdout.trim()).toBe("carol");
      expect((await run(copy, { cmd: "cat", args: ["/tmp/outside.txt"] })).stdout).toBe("kept\n");
      expect((await run(copy, { cmd: "id", args: ["-un"] })).stdout.trim()).toBe("vercel-sandbox");
      expect(snapshot.sizeBytes).toBeGreaterThan(0);
      await copy.delete();
      await snapshot.delete();
      await sandbox.delete();
    });
  },
);

test("sudo must be a boolean (provider-local: no user to switch to, commands run as the backend's user)", async () => {
  const { emu, sandbox } = await open("local");
  const url = new URL(`${emu.url}/v2/sandboxes/sessions/${sandbox.currentSession().sessionId}/cmd`);
  url.searchParams.set("teamId", emu.teamId);
  const response = await fetch(url, {
    method: "POST",
    headers: { Authorization: `Bearer ${emu.token}`, "Content-Type": "application/json" },
    body: JSON.stringify({ command: "id", args: [], sudo: "yes" }),
  });
  expect(response.status).toBe(400);
  expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(/sudo/);
  await sandbox.stop();
});
