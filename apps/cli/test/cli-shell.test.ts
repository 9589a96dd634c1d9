import { execFileSync, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeSboxHome, SBOX_BIN, waitUntil } from "./sbox-harness.js";

const hasTmux = spawnSync("tmux", ["-V"]).status === 0;
if (!hasTmux) {
  // Visible, and fatal in CI (where .ci/run installs tmux): a skipped terminal test must not pass unseen.
  console.warn("sbox shell terminal test skipped: tmux is not installed (apt-get install -y tmux)");
  if (process.env.CI === "true") throw new Error("CI must have tmux for the sbox shell test");
}
const home = makeSboxHome();
const socket = `sbox-test-${randomUUID().slice(0, 8)}`;
let id = "";

function tmux(...args: string[]): string {
  return execFileSync("tmux", ["-L", socket, ...args], { encoding: "utf8" });
}

function screen(): string {
  return tmux("capture-pane", "-p", "-t", "sbox");
}

function sessionAlive(): boolean {
  return spawnSync("tmux", ["-L", socket, "has-session", "-t", "sbox"]).status === 0;
}

beforeAll(async () => {
  id = (await home.run(["create"])).stdout.trim();
});

afterAll(async () => {
  if (hasTmux) spawnSync("tmux", ["-L", socket, "kill-server"]);
  await home.cleanup();
});

describe.skipIf(!hasTmux)("sbox shell under a real terminal (tmux)", () => {
  it("types a command, reads the answer on the screen, exits with the shell's code", async () => {
    const status = `${home.dir}/shell-exit-code`;
    // The pane runs the real binary; its exit code is written where the test can read it.
    const command = `env NO_COLOR=1 SBOX_HOME='${home.dir}' '${process.execPath}' '${SBOX_BIN}' shell ${id}; echo $? > '${status}'`;
    tmux("new-session", "-d", "-s", "sbox", "-x", "100", "-y", "30", command);
    // Wait for a prompt-ish screen, then type.
    await waitUntil(() => screen().trim().length > 0, 20_000, "the shell to draw");
    tmux("send-keys", "-t", "sbox", "-l", "echo hi-$((6*7))");
    tmux("send-keys", "-t", "sbox", "Enter");
    await waitUntil(() => screen().includes("hi-42"), 20_000, "hi-42 on the screen");
    // The typed text holds "$((6*7))", so hi-42 can only come from the shell evaluating it.
    expect(screen()).toContain("echo hi-$((6*7))");
    // Resize reaches the pty: the shell sees the new width.
    tmux("resize-window", "-t", "sbox", "-x", "77", "-y", "20");
    tmux("send-keys", "-t", "sbox", "-l", "echo cols=$(stty size)");
    tmux("send-keys", "-t", "sbox", "Enter");
    await waitUntil(() => /cols=20 77/.test(screen()), 20_000, "the new size inside the pty");
    tmux("send-keys", "-t", "sbox", "-l", "exit 3");
    tmux("send-keys", "-t", "sbox", "Enter");
    await waitUntil(
      () => {
        try {
          return readFileSync(status, "utf8").trim() === "3";
        } catch {
          return false;
        }
      },
      20_000,
      "the shell to exit with 3",
    );
    await waitUntil(() => !sessionAlive(), 5_000, "the tmux session to end");
  });
});
