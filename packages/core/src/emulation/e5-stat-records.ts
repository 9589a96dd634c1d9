import type { FileInfo, FileType } from "../spec/files-types.js";
import { shellQuote } from "./shell-quote.js";

/**
 * `stat -c` format understood by GNU and busybox: size, mtime seconds, raw mode (hex), inode, ctime
 * seconds, and the human mtime with nanoseconds (used for the fraction and for change detection).
 */
export const STAT_FORMAT = "%s %Y %f %i %Z %y";

/**
 * Stats every argument without following symlinks, in batches: one `stat` for the whole batch, and one per
 * entry only when the batch failed (an entry vanished meanwhile), so the numbers always line up with the
 * names. Output records: `B <n>\n`, n stat lines, then the n names, each NUL-terminated (names may hold
 * newlines, so they never travel as lines).
 */
const BATCH_SCRIPT = `F=${shellQuote(STAT_FORMAT)}
if o=$(stat -c "$F" "$@" 2>/dev/null); then printf 'B %d\\n%s\\n' "$#" "$o"; printf '%s\\0' "$@"
else for f do if o=$(stat -c "$F" "$f" 2>/dev/null); then printf 'B 1\\n%s\\n' "$o"; printf '%s\\0' "$f"; fi; done
fi`;

/** The `find` start argument for listing the directory `dir` (a shell-safe literal, see {@link shellPath}). */
export function findStart(dirArgument: string): string {
  return dirArgument === "/" ? "/." : `${dirArgument}/.`;
}

/**
 * A shell command printing stat records (see {@link parseStatRecords}) for the entries below the directory
 * `dirArgument`: its direct children, or the whole tree when `recursive`. Paths are printed as
 * `<findStart>/<relative path>`. A failing `find` (unreadable subdirectory) prints `sbox-find-failed` on
 * stderr but the records it could produce are still printed.
 */
export function statTreeCommand(dirArgument: string, recursive: boolean): string {
  const start = shellQuote(findStart(dirArgument));
  const depth = recursive ? "" : " -prune";
  return `{ find ${start} ! -name .${depth} -exec sh -c ${shellQuote(BATCH_SCRIPT)} sh {} + || echo sbox-find-failed >&2; }`;
}

/** A shell command printing one stat record for `$1`-like variable `variable` (e.g. `"$p"`). */
export function statOneCommand(variable: string): string {
  return `o=$(stat -c ${shellQuote(STAT_FORMAT)} ${variable}) || exit 1
printf 'B 1\\n%s\\n' "$o"; printf '%s\\0' ${variable}`;
}

/** Prints the shell's working directory as a `P` record, so relative paths can be made absolute. */
export const PWD_RECORD = `printf 'P%s\\0' "$PWD"`;

/** One stat record: the path as the shell printed it, and the stat line. */
export interface StatRecord {
  path: string;
  line: string;
}

/** The decoded record stream. */
export interface StatRecords {
  /** The shell's working directory, when a `P` record was printed. */
  cwd: string | undefined;
  records: StatRecord[];
}

const decoder = new TextDecoder();

/** Parses the records printed by {@link statTreeCommand} / {@link statOneCommand} / {@link PWD_RECORD}. */
export function parseStatRecords(bytes: Uint8Array): StatRecords {
  let cwd: string | undefined;
  const records: StatRecord[] = [];
  let at = 0;
  const until = (byte: number): string => {
    const end = bytes.indexOf(byte, at);
    if (end < 0) throw new Error("truncated stat records");
    const text = decoder.decode(bytes.subarray(at, end));
    at = end + 1;
    return text;
  };
  while (at < bytes.length) {
    const tag = bytes[at];
    if (tag === 0x50 /* P */) {
      at++;
      cwd = until(0);
    } else if (tag === 0x42 /* B */) {
      const count = Number(until(0x0a).slice(2));
      if (!Number.isInteger(count) || count < 0) throw new Error("malformed stat batch header");
      const lines: string[] = [];
      for (let i = 0; i < count; i++) lines.push(until(0x0a));
      for (let i = 0; i < count; i++) records.push({ path: until(0), line: lines[i]! });
    } else {
      throw new Error(`unexpected byte ${tag} in stat records`);
    }
  }
  return { cwd, records };
}

const S_IFMT = 0o170000;

/** The entry type from the raw mode bits. */
export function typeOfMode(mode: number): FileType {
  switch (mode & S_IFMT) {
    case 0o100000:
      return "file";
    case 0o040000:
      return "dir";
    case 0o120000:
      return "symlink";
    default:
      return "other";
  }
}

/** The numbers of one stat line. */
export interface StatFields {
  size: number;
  type: FileType;
  /** Permission bits. */
  mode: number;
  mtime: Date | undefined;
}

/** Parses a stat line printed with {@link STAT_FORMAT}. */
export function parseStatLine(line: string): StatFields {
  const fields = line.split(" ");
  const size = Number(fields[0]);
  const seconds = Number(fields[1]);
  const raw = Number.parseInt(fields[2] ?? "", 16);
  if (!Number.isFinite(size) || !Number.isFinite(raw))
    throw new Error(`malformed stat line ${JSON.stringify(line)}`);
  let mtime: Date | undefined;
  if (Number.isFinite(seconds)) {
    const fraction = /\.(\d+)/.exec(fields[6] ?? "");
    const millis = fraction ? Math.floor(Number(`0.${fraction[1]}`) * 1000) : 0;
    mtime = new Date(seconds * 1000 + millis);
  }
  return { size, type: typeOfMode(raw), mode: raw & 0o7777, mtime };
}

/** A `FileInfo` from a stat line. */
export function fileInfoOf(name: string, path: string, line: string): FileInfo {
  const fields = parseStatLine(line);
  const info: FileInfo = { name, path, type: fields.type, size: fields.size, mode: fields.mode };
  if (fields.mtime) info.mtime = fields.mtime;
  return info;
}
