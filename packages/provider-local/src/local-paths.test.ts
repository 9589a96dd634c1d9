import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SandboxError } from "@sbox/core/spec";
import { afterAll, describe, expect, it } from "vitest";
import { resolveEntry } from "./local-fd-paths.js";
import { hostCwdWithoutIsolation, type SandboxView, sandboxCwd } from "./local-paths.js";

const base = mkdtempSync(join(tmpdir(), "sbox-local-paths-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));
mkdirSync(join(base, "workspace/sub"), { recursive: true });
mkdirSync(join(base, "tmp"));
mkdirSync(join(base, "home"));
writeFileSync(join(base, "workspace/sub/file"), "x");
symlinkSync("sub", join(base, "workspace/rel-link"));
symlinkSync("/workspace/sub/file", join(base, "workspace/abs-link"));
symlinkSync("/tmp", join(base, "workspace/to-tmp"));
symlinkSync("/home/user", join(base, "workspace/to-home"));
symlinkSync("/etc/passwd", join(base, "workspace/escape"));
symlinkSync("../..", join(base, "workspace/sub/up"));

const isolated: SandboxView = {
  isolation: "bwrap",
  workspace: join(base, "workspace"),
  tmp: join(base, "tmp"),
  home: join(base, "home"),
};
const unisolated: SandboxView = { ...isolated, isolation: "none" };

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  return SandboxError.isInstance(error) ? error.code : error === undefined ? undefined : "not a SandboxError";
}

/** Where `path` resolves: the path commands see and the final name, descriptors closed again. */
async function resolved(view: SandboxView, path: string, followFinal = true) {
  const entry = await resolveEntry(view, path, { followFinal });
  await entry.close();
  return { path: entry.path, name: entry.name, area: entry.area };
}

describe("resolveEntry", () => {
  it("maps relative, /workspace, /tmp and /home/user paths into the sandbox's areas", async () => {
    expect(await resolved(isolated, "sub/file")).toEqual({
      path: "/workspace/sub/file",
      name: "file",
      area: "workspace",
    });
    expect(await resolved(isolated, "/tmp")).toEqual({ path: "/tmp", name: undefined, area: "tmp" });
    expect(await resolved(isolated, "/home/user/x")).toEqual({
      path: "/home/user/x",
      name: "x",
      area: "home",
    });
    expect((await resolved(isolated, "./sub/../sub/./file")).path).toBe("/workspace/sub/file");
  });

  it("follows symlinks as sandbox paths, and only inside", async () => {
    expect((await resolved(isolated, "rel-link/file")).path).toBe("/workspace/sub/file");
    expect((await resolved(isolated, "abs-link")).path).toBe("/workspace/sub/file");
    expect((await resolved(isolated, "to-tmp/x")).path).toBe("/tmp/x");
    expect((await resolved(isolated, "to-home/.profile")).path).toBe("/home/user/.profile");
    expect(await codeOf(resolveEntry(isolated, "escape", { followFinal: true }))).toBe("Validation");
    expect(await codeOf(resolveEntry(isolated, "sub/up/etc", { followFinal: true }))).toBe("Validation");
    // Not following the last component: the link itself is addressed.
    expect(await resolved(isolated, "escape", false)).toEqual({
      path: "/workspace/escape",
      name: "escape",
      area: "workspace",
    });
  });

  it("refuses .. that leaves the sandbox and absolute paths elsewhere", async () => {
    for (const path of [
      "..",
      "../workspace",
      "/",
      "/etc/passwd",
      "/workspace/..",
      "/tmp/../etc",
      "/home",
      "/home/other",
      "",
      "a\0b",
    ]) {
      expect(await codeOf(resolveEntry(isolated, path, { followFinal: true })), JSON.stringify(path)).toBe(
        "Validation",
      );
    }
  });

  it("without isolation accepts the host directories and reports host paths", async () => {
    const host = join(base, "workspace/sub/file");
    expect((await resolved(unisolated, host)).path).toBe(host);
    expect((await resolved(unisolated, "/workspace/sub/file")).path).toBe(host);
    expect(await codeOf(resolveEntry(unisolated, "/usr/bin/env", { followFinal: true }))).toBe("Validation");
    // /tmp stays the sandbox's own /tmp, also for a host path under /tmp: confined, never the host's.
    expect((await resolved(unisolated, "/tmp/elsewhere")).path).toBe(join(base, "tmp/elsewhere"));
  });
});

describe("working directories", () => {
  it("take relative paths from /workspace", () => {
    expect(sandboxCwd(undefined)).toBe("/workspace");
    expect(sandboxCwd("a b/c")).toBe("/workspace/a b/c");
    expect(sandboxCwd("/etc/")).toBe("/etc/");
  });

  it("map sandbox paths to host paths without isolation, the sandbox's own host paths first", () => {
    expect(hostCwdWithoutIsolation(unisolated, "/workspace/x")).toBe(join(base, "workspace/x"));
    expect(hostCwdWithoutIsolation(unisolated, "/tmp")).toBe(join(base, "tmp"));
    expect(hostCwdWithoutIsolation(unisolated, "/home/user")).toBe(join(base, "home"));
    expect(hostCwdWithoutIsolation(unisolated, join(base, "workspace/y"))).toBe(join(base, "workspace/y"));
    expect(hostCwdWithoutIsolation(unisolated, "/usr")).toBe("/usr");
  });
});
