import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * The tests drive the built binary, so build it when dist is missing or older than the sources (a no-op
 * after `pnpm build`). A failed build does not stop the unit tests.
 */
export default function setup(): void {
  const bin = join(root, "dist", "sbox.js");
  if (existsSync(bin) && statSync(bin).mtimeMs >= newestMtime(join(root, "src"))) return;
  try {
    execFileSync("pnpm", ["exec", "tsup"], { cwd: root, stdio: "inherit" });
  } catch {
    // Unit tests still run; the end-to-end tests then fail on the missing binary with the build command.
    console.warn("sbox CLI build failed: the end-to-end tests need `pnpm --filter @sbox/cli build`");
  }
}
