import type { ExecResult, RunOptions, Sandbox } from "@sbox/core";
import { ConformanceFailure, show } from "./assertions.js";

/*
 * Shell snippets the cases run inside sandboxes. They must work with a busybox-only userland: `sh` (not
 * bash), POSIX utilities, no GNU-only flags. Paths are always passed as positional arguments ("$1"), never
 * spliced into the script, so hostile names need no quoting.
 */

/** Prints the bytes of file "$1" as lowercase hex, no separators. */
export const HEX_OF_FILE_SCRIPT = 'od -An -v -tx1 "$1" | tr -d " \\n"';

/** Prints each argument as lowercase hex on its own line (empty line for an empty argument). */
export const HEX_OF_ARGS_SCRIPT =
  'for a in "$@"; do printf "%s" "$a" | od -An -v -tx1 | tr -d " \\n"; echo; done';

/**
 * Starts two nested background loops that append to the files "$1" and "$2" every second, then waits:
 * a process tree whose survival after a kill is visible from outside as files that keep growing.
 */
export const HEARTBEAT_TREE_SCRIPT =
  '(while :; do echo x >> "$1"; sleep 1; done) & sh -c \'while :; do echo y >> "$1"; sleep 1; done\' sh "$2" & wait';

/**
 * Requests `http://"$1":"$2""$3"` (host, port, path) with every HTTP client the sandbox has, in turn, until
 * one succeeds: curl, wget, python3, node, then a raw request through nc (some static busybox builds
 * crash in wget). Exit 0 when one got an answer, 1 when none did, 99 when there is no client at all.
 * Whether a request arrived is judged by the server, not by this exit code.
 */
export const HTTP_GET_SCRIPT: string = [
  'h="$1"; p="$2"; path="$3"; u="http://$h:$p$path"; found=0',
  'if command -v curl >/dev/null 2>&1; then found=1; curl -fsS -m 4 -o /dev/null "$u" 2>/dev/null && exit 0; fi',
  'if command -v wget >/dev/null 2>&1; then found=1; wget -q -T 4 -O /dev/null "$u" 2>/dev/null && exit 0; fi',
  "if command -v python3 >/dev/null 2>&1; then found=1; python3 -c 'import sys,urllib.request;urllib.request.urlopen(sys.argv[1],timeout=4).read()' \"$u\" 2>/dev/null && exit 0; fi",
  "if command -v node >/dev/null 2>&1; then found=1; node -e 'const c=new AbortController();setTimeout(()=>c.abort(),4000).unref();fetch(process.argv[1],{signal:c.signal}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))' \"$u\" 2>/dev/null && exit 0; fi",
  'if command -v nc >/dev/null 2>&1; then found=1; r=$(printf "GET %s HTTP/1.0\\r\\nHost: %s\\r\\n\\r\\n" "$path" "$h" | nc "$h" "$p" 2>/dev/null | head -c 12); case $r in HTTP/*) exit 0;; esac; fi',
  '[ "$found" = 1 ] && exit 1',
  'echo "sbox-conformance: no http client (curl, wget, python3, node, nc) in the sandbox" >&2; exit 99',
].join("\n");

/**
 * Serves directory "$2" over HTTP on port "$1" with the first server the sandbox has: python3, busybox
 * httpd, node. Runs in the foreground. Exit 99 when there is none.
 */
export const HTTP_SERVE_SCRIPT: string = [
  'p="$1"; d="$2"; cd "$d" || exit 98',
  'if command -v python3 >/dev/null 2>&1; then exec python3 -m http.server "$p" --bind 0.0.0.0',
  'elif command -v busybox >/dev/null 2>&1 && busybox --list 2>/dev/null | grep -qx httpd; then exec busybox httpd -f -p "$p" -h "$d"',
  'elif command -v httpd >/dev/null 2>&1; then exec httpd -f -p "$p" -h "$d"',
  'elif command -v node >/dev/null 2>&1; then exec node -e \'const fs=require("fs"),p=require("path");require("http").createServer((q,r)=>{fs.readFile(p.join(process.cwd(),decodeURIComponent(q.url.split("?")[0])),(e,b)=>{if(e){r.writeHead(404);r.end()}else{r.writeHead(200);r.end(b)}})}).listen(+process.argv[1],"0.0.0.0")\' "$p"',
  'else echo "sbox-conformance: no http server (python3, busybox httpd, node) in the sandbox" >&2; exit 99; fi',
].join("\n");

/**
 * Prints the default IPv4 gateway from /proc/net/route (dotted quad), or nothing: where a bridge-networked
 * sandbox usually reaches its host.
 */
export const DEFAULT_GATEWAY_SCRIPT: string =
  '[ -r /proc/net/route ] || exit 0; while read -r iface dest gw rest; do if [ "$dest" = 00000000 ]; then ' +
  'printf "%d.%d.%d.%d\\n" 0x$(echo $gw | cut -c7-8) 0x$(echo $gw | cut -c5-6) 0x$(echo $gw | cut -c3-4) 0x$(echo $gw | cut -c1-2); break; fi; done < /proc/net/route';

/** Runs an argv or a script and fails unless it exits 0; the failure names `what` and shows stderr. */
export async function runOk(
  sandbox: Sandbox,
  command: string | readonly string[],
  what: string,
  options?: RunOptions,
): Promise<ExecResult> {
  let result: ExecResult;
  try {
    result = await sandbox.commands.run(command, options);
  } catch (error) {
    throw new ConformanceFailure(`${what}: command ${show(command)} rejected with ${show(error)}`, {
      cause: error,
    });
  }
  if (result.exitCode !== 0) {
    throw new ConformanceFailure(
      `${what}: command ${show(command)} exited ${result.exitCode} (stderr ${show(result.stderr)}, stdout ${show(result.stdout)})`,
    );
  }
  return result;
}

/** Runs `script` with `sh -c`, the remaining words being "$1", "$2", ... */
export function shArgs(script: string, ...args: string[]): string[] {
  return ["sh", "-c", script, "sh", ...args];
}

/** The bytes of a file as hex, read with `od` inside the sandbox (a channel independent of `files.*`). */
export async function hexOfFileViaShell(sandbox: Sandbox, path: string): Promise<string> {
  const result = await runOk(sandbox, shArgs(HEX_OF_FILE_SCRIPT, path), `reading ${show(path)} with od`);
  return result.stdout.trim();
}

/** True when the path exists (a dangling symlink counts), asked with `test` inside the sandbox. */
export async function existsViaShell(sandbox: Sandbox, path: string): Promise<boolean> {
  const result = await sandbox.commands.run(shArgs('test -e "$1" || test -L "$1"', path));
  return result.exitCode === 0;
}

/** Size in bytes of a file, measured with `wc -c` inside the sandbox. */
export async function sizeViaShell(sandbox: Sandbox, path: string): Promise<number> {
  const result = await runOk(sandbox, shArgs('wc -c < "$1"', path), `measuring ${show(path)} with wc`);
  return Number.parseInt(result.stdout.trim(), 10);
}

/** A shell `printf` format that writes exactly `bytes` (octal escapes). */
export function printfFormatOf(bytes: Uint8Array): string {
  let format = "";
  for (const byte of bytes) format += `\\${byte.toString(8).padStart(3, "0")}`;
  return format;
}
