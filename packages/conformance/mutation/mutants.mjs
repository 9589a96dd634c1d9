// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the catalogue holds source text (template literals of the mutated files), not templates
/**
 * The mutation catalogue of @sbox/conformance: deliberate bugs, each a search/replace on one named file,
 * that the kit must catch. `cases` are the case ids or prefixes a mutant is judged by (the script's
 * `--full` runs every case instead); `targets` the configurations of mutation-harness.ts:
 *
 * - `example`: the example adapter (examples/minimal-sh-provider) as declared;
 * - `example-primitives`: the same in primitives-only mode;
 * - `output-only`: the example behind an exec that reports no exit code and no streaming, so user
 *   commands reach the exec through E2 on their raw output.
 *
 * `table: true` marks the bugs of issue #22's table, which the kit once let through. `reanchor` names
 * the rewrite after which a mutant's search text is likely gone (the script reports it as stale).
 *
 * Safety: the example runs commands on this machine as the current user. No mutant here weakens shell
 * quoting or argv handling, since the kit's hostile strings (`; rm -rf / #`, `$(...)`) would then run.
 */

const EXEC = "examples/minimal-sh-provider/src/minimal-sh-exec.ts";
const PROVIDER = "examples/minimal-sh-provider/src/minimal-sh-provider.ts";
const STORE = "examples/minimal-sh-provider/src/minimal-sh-store.ts";
const E1 = "packages/core/src/emulation/e1-env-cwd.ts";
const E2 = "packages/core/src/emulation/e2-exit-marker.ts";
const E4 = "packages/core/src/emulation/e4-background.ts";
const DETACHED = "packages/core/src/emulation/output-detached.ts";
const E5_STAT = "packages/core/src/emulation/e5-stat-records.ts";
const E5_ERRORS = "packages/core/src/emulation/e5-file-errors.ts";
const E6 = "packages/core/src/emulation/e6-watch.ts";
const E7 = "packages/core/src/emulation/e7-timeout.ts";
const E8 = "packages/core/src/emulation/e8-metrics.ts";
const RUN = "packages/core/src/sandbox/command-run.ts";
const HANDLE = "packages/core/src/sandbox/command-handle.ts";
const FILES = "packages/core/src/sandbox/files-api.ts";
const FACADE = "packages/core/src/sandbox/sandbox-facade.ts";
const RUNTIME = "packages/core/src/sandbox/provider-runtime.ts";
const CLIENT = "packages/core/src/client/create-sandbox-client.ts";
const IDEMPOTENT = "packages/core/src/client/idempotent-create.ts";
const QUOTE = "packages/core/src/emulation/shell-quote.ts";

const BOTH = ["example", "example-primitives"];
const E3_E4_REWRITE = "the E3/E4/E5 rewrite (#13, #21.6, branch emulation-perf)";

/** @type {{ id: string; area: string; file: string; search: string; replace: string; bug: string; cases: string[]; targets: string[]; table?: boolean; reanchor?: string }[]} */
export const MUTANTS = [
  // ---- the example adapter: its exec primitive ------------------------------------------------------
  {
    id: "example.exec.exit-always-zero",
    area: "example",
    table: true,
    file: EXEC,
    search: "        exitCode: code ?? undefined,",
    replace: "        exitCode: code === null ? undefined : 0,",
    bug: "exec always reports exit 0",
    cases: ["exec.primitive.exit-codes"],
    targets: BOTH,
  },
  {
    id: "example.exec.exit-mod-128",
    area: "example",
    table: true,
    file: EXEC,
    search: "        exitCode: code ?? undefined,",
    replace: "        exitCode: code === null ? undefined : code % 128,",
    bug: "exit codes of 128 and above reported modulo 128",
    cases: ["exec.primitive.exit-codes"],
    targets: BOTH,
  },
  {
    id: "example.exec.stderr-into-stdout",
    area: "example",
    table: true,
    file: EXEC,
    search: '    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));',
    replace: '    child.stderr.on("data", (chunk: Buffer) => stdout.push(chunk));',
    bug: "stderr merged into stdout",
    cases: ["exec.primitive.streams"],
    targets: BOTH,
  },
  {
    id: "example.exec.outside-own-directory",
    area: "example",
    table: true,
    file: EXEC,
    search: "      cwd: record.dir,",
    replace: "      cwd: `${record.dir}/..`,",
    bug: "commands run outside the sandbox's own directory (in the directory all sandboxes share), while NotFound after destroy still holds",
    cases: ["exec.cwd.default-and-relative"],
    targets: BOTH,
  },
  {
    id: "example.exec.signal-dropped",
    area: "example",
    file: EXEC,
    search: "        signal: signal ?? undefined,",
    replace: "        signal: undefined,",
    bug: "a command killed by a signal is reported with neither exit code nor signal",
    cases: ["exec.primitive.exit-codes"],
    targets: ["example"],
  },
  {
    id: "example.exec.stderr-truncated",
    area: "example",
    file: EXEC,
    search: '    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));',
    replace:
      '    child.stderr.on("data", (chunk: Buffer) => {\n      if (Buffer.concat(stderr).length < 262144) stderr.push(chunk);\n    });',
    bug: "stderr beyond 256 KiB is dropped",
    cases: ["exec.primitive.streams", "exec.stderr.large"],
    targets: ["example", "output-only"],
  },
  {
    id: "example.exec.stdout-through-text",
    area: "example",
    file: EXEC,
    search: '    child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk));',
    replace:
      '    child.stdout.on("data", (chunk: Buffer) => stdout.push(Buffer.from(chunk.toString("utf8"))));',
    bug: "stdout passed through a UTF-8 string chunk by chunk (binary output corrupted)",
    cases: ["exec.primitive.streams", "exec.stdout.binary", "exec.output"],
    targets: ["example", "output-only"],
  },
  {
    id: "example.exec.stdin-bytes-dropped",
    area: "example",
    file: EXEC,
    search: "    stdin.end(data);",
    replace: "    stdin.end();",
    bug: "stdin given as bytes is never written",
    cases: ["exec.primitive.streams", "exec.stdin"],
    targets: ["example"],
  },
  {
    id: "example.exec.stdin-stream-dropped",
    area: "example",
    file: EXEC,
    search: '      if (!stdin.write(chunk)) await new Promise((resolve) => stdin.once("drain", resolve));',
    replace: "      void chunk;",
    bug: "stdin given as a stream is read and thrown away",
    cases: ["exec.stdin.stream"],
    targets: ["output-only"],
  },
  {
    id: "example.exec.user-ignored",
    area: "example",
    file: EXEC,
    search: "    if (request.user !== undefined && !isCurrentUser(request.user)) {",
    replace: "    if (false) {",
    bug: "the user option is accepted and ignored (the command runs as the host user)",
    cases: ["exec.user"],
    targets: ["output-only"],
  },
  {
    id: "example.exec.abort-kills-shell-only",
    area: "example",
    file: EXEC,
    search: '          process.kill(-child.pid, "SIGKILL");',
    replace: '          process.kill(child.pid, "SIGKILL");',
    bug: "an abort kills the shell but not the processes it started",
    cases: ["exec.timeout.kills-tree", "exec.abort.kills-tree"],
    targets: ["output-only"],
  },
  {
    id: "example.exec.no-sandbox-marker",
    area: "example",
    file: EXEC,
    search: "        [SANDBOX_ENV_KEY]: record.id,\n",
    replace: "",
    bug: "processes do not carry the sandbox's marker, so destroy cannot find them",
    cases: ["lifecycle.destroy.ends-processes"],
    targets: ["example"],
  },
  {
    id: "example.destroy.sigterm-only",
    area: "example",
    file: EXEC,
    search: '        if (environ.split("\\0").includes(marker)) process.kill(Number(pid), "SIGKILL");',
    replace: '        if (environ.split("\\0").includes(marker)) process.kill(Number(pid), "SIGTERM");',
    bug: "destroy asks the sandbox's processes to end (SIGTERM) instead of ending them; code that ignores SIGTERM lives on",
    cases: ["lifecycle.destroy.ends-processes"],
    targets: ["example"],
  },
  // ---- the example adapter: lifecycle and records ---------------------------------------------------
  {
    id: "example.destroy.processes-left",
    area: "example",
    table: true,
    file: PROVIDER,
    search: "      await killSandboxProcesses(sandbox.id);\n",
    replace: "",
    bug: "destroy leaves the sandbox's processes running",
    cases: ["lifecycle.destroy.ends-processes"],
    targets: BOTH,
  },
  {
    id: "example.connect.loses-env",
    area: "example",
    table: true,
    file: PROVIDER,
    search: "      const record = await store.read(id);\n      return { id: record.id, native: record };",
    replace:
      "      const record = await store.read(id);\n      return { id: record.id, native: { ...record, env: {} } };",
    bug: "connect from a second client loses the create-time env",
    cases: ["lifecycle.connect.preserves-spec"],
    targets: BOTH,
  },
  {
    id: "example.set-timeout.no-op",
    area: "example",
    table: true,
    file: PROVIDER,
    search: "      await store.update(sandbox.id, (record) => ({ ...record, expiresAt }));",
    replace: "      void expiresAt;",
    bug: "setTimeout declared native does nothing",
    cases: ["lifecycle.set-timeout"],
    targets: ["example"],
  },
  {
    id: "example.create.env-dropped",
    area: "example",
    file: PROVIDER,
    search: "        env: { ...(spec.env ?? {}) },",
    replace: "        env: {},",
    bug: "env given at create is dropped",
    cases: ["lifecycle.create.env", "lifecycle.connect.preserves-spec"],
    targets: ["example"],
  },
  {
    id: "example.info.metadata-dropped",
    area: "example",
    file: PROVIDER,
    search: "    metadata: record.metadata,",
    replace: "    metadata: {},",
    bug: "getInfo and list report no metadata",
    cases: ["lifecycle.create.metadata", "lifecycle.connect.preserves-spec", "lifecycle.list.filters"],
    targets: ["example"],
  },
  {
    id: "example.list.empty",
    area: "example",
    file: PROVIDER,
    search: "      for await (const record of store.list()) yield infoOf(record);",
    replace: "      for await (const record of store.list()) void record;",
    bug: "list reports no sandbox",
    cases: ["lifecycle.list.filters", "lifecycle.create.idempotency-key"],
    targets: ["example"],
  },
  {
    id: "example.options.unknown-accepted",
    area: "example",
    file: PROVIDER,
    search: '  validateProviderOptions("minimal-sh", options, { root: optionRules.nonEmptyString() });',
    replace: "  void optionRules;\n  void validateProviderOptions;",
    bug: "an unknown provider option is accepted and ignored",
    cases: ["options.unknown-refused"],
    targets: ["example"],
  },
  {
    id: "example.store.record-kept",
    area: "example",
    file: STORE,
    search: "    await rm(this.recordPath(id), { force: true });",
    replace: "    void this.recordPath(id);",
    bug: "destroy removes the sandbox's directory but keeps its record: it still reports running",
    cases: ["lifecycle.destroy.idempotent"],
    targets: ["example"],
  },
  {
    id: "example.store.bad-id-not-notfound",
    area: "example",
    file: STORE,
    search: '    if (!ID.test(id)) throw new SandboxError("NotFound", `no sandbox ${JSON.stringify(id)}`);',
    replace: '    if (!ID.test(id)) throw new SandboxError("Provider", `no sandbox ${JSON.stringify(id)}`);',
    bug: "connect to an id that cannot exist is a Provider error instead of NotFound",
    cases: ["errors.connect"],
    targets: ["example"],
  },
  // ---- E1: per-command cwd and env -----------------------------------------------------------------
  {
    id: "E1.cd-failure-ignored",
    area: "E1",
    file: E1,
    search: "`cd -- ${dir} || { printf",
    replace: "`cd -- ${dir} || true; { true; } || { printf",
    bug: "a cwd that cannot be entered does not stop the command: it runs in the default directory",
    cases: ["exec.cwd.missing"],
    targets: BOTH,
  },
  // ---- E2: exit codes from a marker ----------------------------------------------------------------
  {
    id: "E2.trusts-any-marker-token",
    area: "E2",
    table: true,
    file: E2,
    search: "  for (let i = 0; i < matched; i++) if (held[start + i] !== prefix[i]) return false;",
    replace:
      "  for (let i = 0; i < matched; i++)\n    if (held[start + i] !== prefix[i] && !(i >= 13 && i < prefix.length - 3)) return false;",
    bug: "the E2 parser trusts the last marker-looking line, whatever its token",
    cases: ["exec.exit-code.spoofed-marker"],
    targets: ["output-only"],
  },
  {
    id: "E2.fixed-token",
    area: "E2",
    file: E2,
    search: "  const token = `__sbox_exit_${randomHex(16)}__`;",
    replace: '  const token = `__sbox_exit_${"0".repeat(32)}__`;',
    bug: "the marker token is the same on every call (a command can learn it and forge the next exit code)",
    cases: ["exec.exit-code.spoofed-marker"],
    targets: ["output-only"],
  },
  {
    id: "E2.marker-left-in-output",
    area: "E2",
    file: E2,
    search: "      if (code !== undefined) return { rest: new Uint8Array(0), exitCode: code };",
    replace: "      if (code !== undefined) return { rest: held, exitCode: code };",
    bug: "the marker line is left at the end of stdout",
    cases: ["exec.stdout.captured", "exec.stderr.separate"],
    targets: ["output-only"],
  },
  {
    id: "E2.two-digit-codes",
    area: "E2",
    file: E2,
    search: "const MAX_CODE_DIGITS = 3;",
    replace: "const MAX_CODE_DIGITS = 2;",
    bug: "exit codes of three digits (100..255) are not recognised in the marker",
    cases: ["exec.exit-code.all-values"],
    targets: ["output-only"],
  },
  // ---- E3/E4: detached commands and background processes --------------------------------------------
  {
    id: "E3.stderr-into-stdout-file",
    area: "E3",
    reanchor: E3_E4_REWRITE,
    file: DETACHED,
    search: '  \'exec 3>"$d/out" 4>"$d/err"\',',
    replace: "  'exec 3>\"$d/out\" 4>&3',",
    bug: "a detached command's stderr is written into its stdout file",
    cases: ["exec.stderr.separate", "background.spawn.output-and-exit"],
    targets: ["example"],
  },
  {
    id: "E4.connect-unknown-pid-resolves",
    area: "E4",
    table: true,
    reanchor: E3_E4_REWRITE,
    file: E4,
    search: "`[ -d ${dir} ] || echo ${NOT_FOUND}`",
    replace: "`[ -d ${dir} ] || true`",
    bug: "connect to an unknown pid resolves",
    cases: ["background.unknown-pid"],
    targets: ["example"],
  },
  {
    id: "E4.spawn-ignores-cwd-env",
    area: "E4",
    table: true,
    reanchor: E3_E4_REWRITE,
    file: E4,
    search: '      const script = detachedScript(ctx, request, "background exec");',
    replace:
      '      const script = detachedScript(ctx, { ...request, cwd: undefined, env: undefined }, "background exec");',
    bug: "spawn ignores cwd and env",
    cases: ["background.spawn.options"],
    targets: ["example"],
  },
  {
    id: "E4.spawn-stdin-never-delivered",
    area: "E4",
    table: true,
    reanchor: E3_E4_REWRITE,
    file: E4,
    search: "      if (request.stdin !== undefined) process.feedStdin(request.stdin);",
    replace: "      if (request.stdin !== undefined) void process.closeStdin();",
    bug: "stdin given at spawn is never delivered (stdin is closed instead)",
    cases: ["background.spawn.options"],
    targets: ["example"],
  },
  {
    id: "E4.kill-signal-pid-only",
    area: "E4",
    reanchor: E3_E4_REWRITE,
    file: DETACHED,
    search: "kill -${short} -${pid} 2>/dev/null; true`;",
    replace: "kill -${short} ${pid} 2>/dev/null; true`;",
    bug: "a named signal reaches the process but not its process group",
    cases: ["exec.kill.signal-name", "background.kill.tree"],
    targets: ["example"],
  },
  // ---- E5: files over exec -------------------------------------------------------------------------
  {
    id: "E5.symlink-as-file",
    area: "E5",
    reanchor: E3_E4_REWRITE,
    file: E5_STAT,
    search: '    case 0o120000:\n      return "symlink";',
    replace: '    case 0o120000:\n      return "file";',
    bug: "symlinks are reported as files",
    cases: ["files.list.types", "files.stat.types"],
    targets: ["example"],
  },
  {
    id: "E5.missing-not-notfound",
    area: "E5",
    reanchor: E3_E4_REWRITE,
    file: E5_ERRORS,
    search: '  [FILE_EXIT.notFound]: ["NotFound", "no such file or directory"],',
    replace: '  [FILE_EXIT.notFound]: ["Provider", "no such file or directory"],',
    bug: "a missing path is a Provider error instead of NotFound",
    cases: ["files.not-found", "files.exists.semantics"],
    targets: ["example"],
  },
  // ---- E6: watch -----------------------------------------------------------------------------------
  {
    id: "E6.no-delete-events",
    area: "E6",
    file: E6,
    search: '      for (const key of deleted.sort().reverse()) emit({ type: "delete", path: key });',
    replace: "      for (const key of deleted.sort().reverse()) void key;",
    bug: "watch never reports deletions",
    cases: ["files.watch"],
    targets: ["example"],
  },
  {
    id: "E6.no-modify-events",
    area: "E6",
    file: E6,
    search: '      for (const key of modified.sort()) emit({ type: "modify", path: key });',
    replace: "      for (const key of modified.sort()) void key;",
    bug: "watch never reports modifications",
    cases: ["files.watch"],
    targets: ["example"],
  },
  // ---- E7: per-command timeout ---------------------------------------------------------------------
  {
    id: "E7.five-times-late",
    area: "E7",
    table: true,
    file: E7,
    search: "      }, timeoutMs);",
    replace: "      }, timeoutMs * 5);",
    bug: "the timeout fires five times late (25 s for 5 s)",
    cases: ["exec.timeout.on-time"],
    targets: ["example"],
  },
  {
    id: "E7.timeout-as-aborted",
    area: "E7",
    file: E7,
    search:
      '          new SandboxError("Timeout", `${what} timed out after ${timeoutMs} ms`, { retryable: true }),',
    replace:
      '          new SandboxError("Aborted", `${what} timed out after ${timeoutMs} ms`, { retryable: true }),',
    bug: "an overrun timeout rejects with Aborted instead of Timeout",
    cases: ["exec.timeout"],
    targets: ["example"],
  },
  // ---- E8: metrics ---------------------------------------------------------------------------------
  {
    id: "E8.memory-always-zero",
    area: "E8",
    table: true,
    file: E8,
    search: '  // cgroup v1 says "no limit" with a huge number, v2 with "max".',
    replace:
      '  if (metrics.memoryBytes !== undefined) metrics.memoryBytes = 0;\n  // cgroup v1 says "no limit" with a huge number, v2 with "max".',
    bug: "metrics always report memory 0",
    cases: ["metrics.tracks-load"],
    targets: ["example"],
  },
  {
    id: "E8.cpu-always-zero",
    area: "E8",
    table: true,
    file: E8,
    search: '  const disk = count(values.get("disk_used_kb"));',
    replace:
      '  if (metrics.cpuPercent !== undefined) metrics.cpuPercent = 0;\n  const disk = count(values.get("disk_used_kb"));',
    bug: "metrics always report CPU 0",
    cases: ["metrics.tracks-load"],
    targets: ["example"],
  },
  {
    id: "E8.disk-always-zero",
    area: "E8",
    file: E8,
    search: "  if (disk !== undefined) metrics.diskBytes = disk * 1024;",
    replace: "  if (disk !== undefined) metrics.diskBytes = 0;",
    bug: "metrics always report disk use 0",
    cases: ["metrics.tracks-load"],
    targets: ["example"],
  },
  // ---- the facade and the runtime -------------------------------------------------------------------
  {
    id: "facade.kill-signal-name-dropped",
    area: "facade",
    file: RUN,
    search: "          return { exitCode: exitCodeForSignal(signal), signal };",
    replace: "          return { exitCode: exitCodeForSignal(signal) };",
    bug: "a command ended by handle.kill(signal) does not report the signal",
    cases: ["exec.kill.signal-name"],
    targets: ["example"],
  },
  {
    id: "facade.on-stdout-not-called",
    area: "facade",
    file: HANDLE,
    search: "        options.onStdout?.(text);",
    replace: "        void options.onStdout;",
    bug: "onStdout is never called",
    cases: ["exec.output.utf8-split-across-chunks", "exec.stream.first-chunk-early", "exec.stdout.binary"],
    targets: ["example"],
  },
  {
    id: "facade.exists-false-on-any-error",
    area: "facade",
    file: FILES,
    search: '          if (SandboxError.isInstance(error) && error.code === "NotFound") return false;',
    replace: "          if (SandboxError.isInstance(error)) return false;",
    bug: "files.exists reports false for any failure, not only for absence",
    cases: ["files.exists.semantics"],
    targets: ["example"],
  },
  {
    id: "facade.get-info-cached",
    area: "facade",
    file: FACADE,
    search: "toSandboxInfo(runtime.name, await driver.doGetInfo(handle, callOptions(opts.signal)))",
    replace:
      "toSandboxInfo(runtime.name, await ((handle as unknown as { info?: ReturnType<typeof driver.doGetInfo> }).info ??= driver.doGetInfo(handle, callOptions(opts.signal))))",
    bug: "getInfo answers from the first reading instead of the live state",
    cases: ["lifecycle.get-info.live", "lifecycle.destroy.idempotent"],
    targets: ["example"],
  },
  {
    id: "facade.env-key-unchecked",
    area: "facade",
    file: QUOTE,
    search: "  if (!ENV_KEY.test(key)) {",
    replace: '  if (key === "") {',
    bug: "env keys that are not identifiers are accepted",
    cases: ["errors.exec.invalid-env-key"],
    targets: ["example"],
  },
  {
    id: "runtime.relative-path-outside-workdir",
    area: "runtime",
    file: RUNTIME,
    search: "resolveSandboxPath(path, await workdir(sandbox))",
    replace: "resolveSandboxPath(path, `${await workdir(sandbox)}/..`)",
    bug: "a relative file path resolves outside the sandbox's working directory",
    cases: ["exec.cwd.default-and-relative"],
    targets: ["example"],
  },
  {
    id: "client.list-filter-ignored",
    area: "client",
    file: CLIENT,
    search: "        if (!matchesFilter(info, rest)) continue;",
    replace: "        void matchesFilter;",
    bug: "client.list ignores the filter where the provider filters coarsely",
    cases: ["lifecycle.list.filters"],
    targets: ["example"],
  },
  {
    id: "client.reap-ignores-time",
    area: "client",
    file: CLIENT,
    search: "          if (!info.expiresAt || info.expiresAt.getTime() > now) continue;",
    replace: "          if (!info.expiresAt) continue;",
    bug: "client.reap ends every sandbox that has a time to live, also those whose time is not up",
    cases: ["lifecycle.set-timeout.enforced"],
    targets: ["example"],
  },
  {
    id: "client.idempotency-key-ignored",
    area: "client",
    file: IDEMPOTENT,
    search: "      return driver.doConnect(info.id, { signal });",
    replace: "      void info.id;",
    bug: "a create repeated with the same idempotencyKey makes a second sandbox",
    cases: ["lifecycle.create.idempotency-key"],
    targets: ["example"],
  },
];

/**
 * Mutants that no case can catch, with the reason: each changes code that the contract cannot observe
 * (or that something else shadows). Listed so that nobody adds them to the score, and not run.
 */
export const EQUIVALENT = [
  {
    id: "example.set-timeout.validation-dropped",
    area: "example",
    file: PROVIDER,
    search: "      if (!Number.isFinite(ttlMs) || ttlMs <= 0) {",
    replace: "      if (false) {",
    bug: "the example's setTimeout accepts a non-positive value",
    equivalent:
      "the facade refuses a non-positive ttlMs with Validation before any driver call, so the driver's own check cannot be reached through the API",
  },
  {
    id: "example.store.enoent-unnamed",
    area: "example",
    file: STORE,
    search: '        throw new SandboxError("NotFound", `no sandbox ${id}`, { cause: error });',
    replace: "        throw error;",
    bug: "a missing record is thrown as Node's ENOENT instead of a NotFound naming the id",
    equivalent:
      "defineProvider maps an errno ENOENT to NotFound with the provider's name: users see the same code; only the message differs (it then names a host path, scrubbed by the core)",
  },
  {
    id: "example.exec.home-elsewhere",
    area: "example",
    file: EXEC,
    search: "        HOME: record.dir,",
    replace: '        HOME: "/tmp",',
    bug: "HOME points outside the sandbox directory",
    equivalent:
      "HOME is not part of the contract (the working directory is): no provider is required to set it to anything in particular",
  },
  {
    id: "E8.longer-sample",
    area: "E8",
    file: E8,
    search: "const SAMPLE_SECONDS = 0.15;",
    replace: "const SAMPLE_SECONDS = 0.3;",
    bug: "CPU is sampled over 300 ms instead of 150 ms",
    equivalent: "only the sampling window changes: every reading stays a correct measurement of CPU use",
  },
  {
    id: "E2.wrapper-runs-in-subshell",
    area: "E2",
    file: E2,
    search: "    wrap: (script) => `sh -c ${shellQuote(script)}\\nprintf '\\\\n%s:%s\\\\n' ${token} \"$?\"`,",
    replace:
      "    wrap: (script) => `(sh -c ${shellQuote(script)})\\nprintf '\\\\n%s:%s\\\\n' ${token} \"$?\"`,",
    bug: "the user's script runs in a subshell of the marker's shell",
    equivalent:
      "a subshell passes the exit status through unchanged and adds one process level, which no contract observes",
  },
  {
    id: "facade.destroy-not-idempotent",
    area: "facade",
    file: FACADE,
    search: '          if (!(SandboxError.isInstance(error) && error.code === "NotFound")) throw error;',
    replace: "          throw error;",
    bug: "destroy of a sandbox already gone rejects with NotFound",
    equivalent:
      "the example's destroy never throws NotFound (it removes with force), so the facade's tolerance of NotFound is not reached on this catalogue's targets; lifecycle.destroy.idempotent holds it on adapters whose destroy of a gone sandbox throws NotFound",
  },
  {
    id: "facade.nul-in-argv-accepted",
    area: "facade",
    file: RUN,
    search:
      '    if (word.includes("\\0")) throw invalidInput("argv words must not contain a NUL character");',
    replace: "    void word;",
    bug: "a NUL byte in an argv word is accepted instead of refused with Validation",
    equivalent:
      "where the exec takes strings (the example), shellQuote refuses a NUL byte with Validation before any driver call all the same; the facade's own check is reached only by providers that take argv as argv",
  },
];
