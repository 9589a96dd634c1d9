import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { seccompProgram } from "./local-seccomp.js";

const written = new Map<string, string>();

/**
 * The syscall filter as a file in the state root (bubblewrap reads it from a descriptor its launcher opens on
 * it), written once per state root and filter version; `undefined` when this architecture has no filter.
 */
export function seccompFile(stateRoot: string): string | undefined {
  const known = written.get(stateRoot);
  if (known && existsSync(known)) return known;
  const program = seccompProgram();
  if (!program) return undefined;
  const digest = createHash("sha256").update(program).digest("hex").slice(0, 16);
  const path = join(stateRoot, `.seccomp-${process.arch}-${digest}.bpf`);
  mkdirSync(stateRoot, { recursive: true, mode: 0o700 });
  if (!existsSync(path)) {
    const temporary = `${path}.${randomBytes(6).toString("hex")}.tmp`;
    writeFileSync(temporary, program, { mode: 0o600 });
    renameSync(temporary, path);
  }
  written.set(stateRoot, path);
  return path;
}
