/**
 * The workdir tarball behind the lossy snapshot and fork emulations: only files (no memory, no
 * processes), archived with the `tar` that GNU and busybox share, leaving out the emulation state
 * directory when it lives inside the workdir.
 */
import { SandboxError } from "../errors/sandbox-error.js";
import { FILE_EXIT } from "./e5-file-errors.js";
import { normalizePath } from "./e5-paths.js";
import { shellQuote } from "./shell-quote.js";

/** Where the workdir is, and which of its top-level entries holds the emulation state (if any). */
export interface WorkdirLayout {
  /** Absolute, normalized workdir. */
  workdir: string;
  /** `./name` of the top-level entry to leave out, when the state directory is inside the workdir. */
  exclude: string | undefined;
}

/** Checks the workdir and state directory and works out what the tarball must leave out. */
export function workdirLayout(rawWorkdir: string, rawStateDir: string, provider: string): WorkdirLayout {
  const workdir = normalizePath(rawWorkdir, "workdir");
  const stateDir = normalizePath(rawStateDir, "emulation state directory");
  const invalid = (message: string) =>
    new SandboxError("Validation", message, { provider, retryable: false });
  if (!workdir.startsWith("/"))
    throw invalid(`the workdir must be an absolute path, got ${JSON.stringify(workdir)}`);
  if (!stateDir.startsWith("/")) {
    throw invalid(`the emulation state directory must be an absolute path, got ${JSON.stringify(stateDir)}`);
  }
  if (workdir === "/") {
    throw invalid(
      "a lossy snapshot or fork needs a workdir other than / (it would archive the whole system)",
    );
  }
  if (stateDir === workdir) throw invalid("the emulation state directory must not be the workdir itself");
  if (!stateDir.startsWith(`${workdir}/`)) return { workdir, exclude: undefined };
  const inside = stateDir.slice(workdir.length + 1);
  if (inside.includes("/")) {
    throw invalid(
      `the emulation state directory ${stateDir} is nested inside the workdir ${workdir}; it must be outside it or a direct child`,
    );
  }
  return { workdir, exclude: `./${inside}` };
}

/** The shell loop over the workdir's top-level entries (run inside it), skipping the state directory. */
function eachTopLevelEntry(layout: WorkdirLayout, body: string): string {
  const skip = layout.exclude === undefined ? "" : ` [ "$f" = ${shellQuote(layout.exclude)} ] && continue;`;
  return `for f in ./* ./.[!.]* ./..?*; do { [ -e "$f" ] || [ -L "$f" ]; } || continue;${skip} ${body}; done`;
}

/**
 * Archives the workdir into `archive` (written to a `.part` file, then moved into place). An empty workdir
 * gives an empty archive, which both tars extract as nothing.
 */
export function archiveScript(layout: WorkdirLayout, archive: string): string {
  const out = shellQuote(archive);
  return `w=${shellQuote(layout.workdir)}; out=${out}
[ -d "$w" ] || exit ${FILE_EXIT.notFound}
mkdir -p "$(dirname "$out")" || exit 1
cd "$w" || exit 1
set --
${eachTopLevelEntry(layout, `set -- "$@" "$f"`)}
if [ $# -eq 0 ]; then dd if=/dev/zero of="$out.part" bs=1024 count=10 2>/dev/null || exit 1
else tar -cf "$out.part" "$@" || { rm -f "$out.part"; exit 1; }; fi
mv -f "$out.part" "$out"`;
}

/**
 * Extracts `archive` into the workdir, creating it; with `replace`, first empties the workdir (except the
 * state directory) so the result is exactly the archive's content.
 */
export function extractScript(layout: WorkdirLayout, archive: string, replace: boolean): string {
  return `w=${shellQuote(layout.workdir)}; a=${shellQuote(archive)}
[ -f "$a" ] || exit ${FILE_EXIT.notFound}
mkdir -p "$w" && cd "$w" || exit 1
${replace ? `${eachTopLevelEntry(layout, `rm -rf "$f" || exit 1`)}\n` : ""}tar -xf "$a" || exit 1`;
}
