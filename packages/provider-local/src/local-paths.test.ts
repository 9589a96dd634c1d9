import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SandboxError } from "@sbox/core/spec";
import { afterAll, describe, expect, it } from "vitest";
import { hostCwdWithoutIsolation, resolveSandboxPath, type SandboxView, sandboxCwd } from "./local-paths.js";

const base = mkdtempSync(join(tmpdir(), "sbox-local-paths-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));
mkdirSync(join(base, "workspace/sub"), { recursive: true });
mkdirSync(join(base, "tmp"));
writeFileSync(join(base, "workspace/sub/file"), "x");
symlinkSync("sub", join(base, "workspace/rel-link"));
symlinkSync("/workspace/sub/file", join(base, "workspace/abs-link"));
symlinkSync("/tmp", join(base, "workspace/to-tmp"));
symlinkSync("/etc/passwd", join(base, "workspace/escape"));
symlinkSync("../..", join(base, "workspace/sub/up"));

const isolated: SandboxView = {
  isolation: "bwrap",
  workspace: join(base, "workspace"),
  tmp: join(base, "tmp"),
};
const unisolated: SandboxView = { ...isolated, isolation: "none" };

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  return SandboxError.isInstance(error) ? error.code : error === undefined ? undefined : "not a SandboxError";
}

describe("resolveSandboxPath", () => {
  it("maps relative, /workspace and /tmp paths to the sandbox's host directories", async () => {
    const follow = { followFinal: true };
    expect(await resolveSandboxPath(isolated, "sub/file", follow)).toMatchObject({
      sandboxPath: "/workspace/sub/file",
      hostPath: join(base, "workspace/sub/file"),
      isAreaRoot: false,
    });
    expect((await resolveSandboxPath(isolated, "/tmp", follow)).isAreaRoot).toBe(true);
    expect((await resolveSandboxPath(isolated, "./sub/../sub/./file", follow)).sandboxPath).toBe(
      "/workspace/sub/file",
    );
  });

  it("follows symlinks as sandbox paths, and only inside", async () => {
    const follow = { followFinal: true };
    expect((await resolveSandboxPath(isolated, "rel-link/file", follow)).sandboxPath).toBe(
      "/workspace/sub/file",
    );
    expect((await resolveSandboxPath(isolated, "abs-link", follow)).hostPath).toBe(
      join(base, "workspace/sub/file"),
    );
    expect((await resolveSandboxPath(isolated, "to-tmp/x", follow)).hostPath).toBe(join(base, "tmp/x"));
    expect(await codeOf(resolveSandboxPath(isolated, "escape", follow))).toBe("Validation");
    expect(await codeOf(resolveSandboxPath(isolated, "sub/up/etc", follow))).toBe("Validation");
    // Not following the last component: the link itself is addressed.
    expect((await resolveSandboxPath(isolated, "escape", { followFinal: false })).hostPath).toBe(
      join(base, "workspace/escape"),
    );
  });

  it("refuses .. that leaves the sandbox and absolute paths elsewhere", async () => {
    for (const path of [
      "..",
      "../workspace",
      "/",
      "/etc/passwd",
      "/workspace/..",
      "/tmp/../etc",
      "",
      "a\0b",
    ]) {
      expect(
        await codeOf(resolveSandboxPath(isolated, path, { followFinal: true })),
        JSON.stringify(path),
      ).toBe("Validation");
    }
  });

  it("without isolation accepts the host directories and reports host paths", async () => {
    const host = join(base, "workspace/sub/file");
    expect((await resolveSandboxPath(unisolated, host, { followFinal: true })).sandboxPath).toBe(host);
    expect(
      (await resolveSandboxPath(unisolated, "/workspace/sub/file", { followFinal: true })).sandboxPath,
    ).toBe(host);
    expect(await codeOf(resolveSandboxPath(unisolated, "/usr/bin/env", { followFinal: true }))).toBe(
      "Validation",
    );
    // /tmp stays the sandbox's own /tmp, also for a host path under /tmp: confined, never the host's.
    expect((await resolveSandboxPath(unisolated, "/tmp/elsewhere", { followFinal: true })).hostPath).toBe(
      join(base, "tmp/elsewhere"),
    );
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
    expect(hostCwdWithoutIsolation(unisolated, join(base, "workspace/y"))).toBe(join(base, "workspace/y"));
    expect(hostCwdWithoutIsolation(unisolated, "/usr")).toBe("/usr");
  });
});
