/**
 * Lossy `codeInterpreter` (opt-in with `emulate: ["codeInterpreter"]`): each run writes the code to a file
 * under the state directory and runs it with `python3` or `node` through a small runner. Stateless: no
 * variable survives a run, so `context` is refused. The one rich result is honest but plain: the value of
 * the last expression (Python: a final expression statement, `repr`; JavaScript: the script's completion
 * value, awaited when it is a promise, `util.inspect`) as `text/plain`. No images, no display data.
 */
import { NotSupportedError, SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import type { CodeRunResult, DriverSandbox, ProviderDriver } from "../spec/provider-spec.js";
import { decodeBase64, encodeBase64 } from "./e5-base64.js";
import { FILE_EXIT, stderrTail } from "./e5-file-errors.js";
import { emulatedFiles } from "./e5-files.js";
import { randomToken } from "./e5-paths.js";
import { type EmulationContext, type ShellResult, stateDirOf } from "./emulation-context.js";
import { shellQuote } from "./shell-quote.js";

/** Code up to this size travels inside the run script; larger code is written with E5 first. */
const INLINE_CODE_BYTES = 24 * 1024;

/**
 * Python runner: executes the file as `__main__`, evaluates a final expression statement separately to
 * report its value, and prints tracebacks without the runner's own frames. Writes `{result?, error?}`
 * as JSON to the meta file.
 */
const PYTHON_RUNNER = `import ast, json, sys, traceback
path, meta_path = sys.argv[1], sys.argv[2]
sys.argv = [path]
meta = {}
status = 0
try:
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    scope = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
    exec(compile(tree, path, "exec"), scope)
    if last is not None:
        value = eval(compile(last, path, "eval"), scope)
        if value is not None:
            meta["result"] = repr(value)
except SystemExit as e:
    if e.code not in (None, 0):
        status = e.code if isinstance(e.code, int) else 1
        meta["error"] = {"name": "SystemExit", "message": str(e.code), "traceback": ""}
except BaseException as e:
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != path:
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(e), e, tb))
    sys.stderr.write(text)
    meta["error"] = {"name": type(e).__name__, "message": str(e), "traceback": text}
    status = 1
sys.stdout.flush()
sys.stderr.flush()
with open(meta_path, "w") as f:
    json.dump(meta, f)
sys.exit(status)
`;

/**
 * Node runner: runs the file as a script in the main context (with `require`), reports the completion
 * value, and turns a throw, an uncaught exception or an unhandled rejection into an error with exit 1.
 */
const NODE_RUNNER = `const fs = require("fs"), vm = require("vm"), util = require("util"), path = require("path");
const file = process.argv[1], metaFile = process.argv[2];
process.argv.splice(1, 2, file);
const meta = {};
process.on("exit", () => { try { fs.writeFileSync(metaFile, JSON.stringify(meta)); } catch {} });
const fail = (e) => {
  const err = e instanceof Error ? e : new Error(String(e));
  meta.error = { name: err.name || "Error", message: err.message || "", traceback: String(err.stack || err) };
  process.stderr.write(String(err.stack || err) + "\\n");
  process.exit(1);
};
process.on("uncaughtException", fail);
process.on("unhandledRejection", fail);
Object.assign(globalThis, { require, module, exports, __filename: file, __dirname: path.dirname(file) });
try {
  const value = new vm.Script(fs.readFileSync(file, "utf8"), { filename: file }).runInThisContext();
  Promise.resolve(value).then((r) => { if (r !== undefined) meta.result = util.inspect(r); }, fail);
} catch (e) { fail(e); }
`;

interface Runtime {
  binary: string;
  extension: string;
  runner: string;
}

const RUNTIMES: Record<string, Runtime> = {
  python: { binary: "python3", extension: "py", runner: PYTHON_RUNNER },
  javascript: { binary: "node", extension: "js", runner: NODE_RUNNER },
};
const ALIASES: Record<string, string> = {
  python: "python",
  python3: "python",
  py: "python",
  javascript: "javascript",
  js: "javascript",
  node: "javascript",
  nodejs: "javascript",
};

const decoder = new TextDecoder();
const ERROR_LINE = /^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit))(?::\s?(.*))?$/;

/** The error of a run that exited non-zero without the runner reporting one (killed, `process.exit(3)`). */
function errorFromStderr(stderr: string, exitCode: number): NonNullable<CodeRunResult["error"]> {
  const lines = stderr.trimEnd().split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    const match = ERROR_LINE.exec(lines[i]!.trim());
    if (match) return { name: match[1]!, message: match[2] ?? "", traceback: stderr };
  }
  return { name: "ExitError", message: `the code exited with status ${exitCode}`, traceback: stderr };
}

/** Builds the stateless runner. */
export function emulatedCodeInterpreter(ctx: EmulationContext): NonNullable<ProviderDriver["doRunCode"]> {
  const files = emulatedFiles(ctx);

  const exec = async (sandbox: DriverSandbox, script: string, signal: AbortSignal): Promise<ShellResult> => {
    try {
      return await ctx.exec(sandbox, script, { signal });
    } catch (error) {
      throw toSandboxError(error, { provider: ctx.provider, operation: "code.run" });
    }
  };

  return async (sandbox, code, options) => {
    if (options.context !== undefined) {
      throw new NotSupportedError(
        "statefulKernel",
        ctx.provider,
        "the emulated code interpreter is stateless; run without a context",
      );
    }
    if (typeof code !== "string") {
      throw new SandboxError("Validation", "code.run: code must be a string", {
        provider: ctx.provider,
        retryable: false,
      });
    }
    const language = ALIASES[(options.language ?? "python").toLowerCase()];
    const runtime = language === undefined ? undefined : RUNTIMES[language];
    if (!runtime) {
      throw new NotSupportedError(
        `codeInterpreter language ${JSON.stringify(options.language)}`,
        ctx.provider,
        "the emulated code interpreter runs python and javascript",
      );
    }

    const dir = `${stateDirOf(ctx, sandbox)}/code`;
    const base = `${dir}/run-${randomToken()}`;
    const codeFile = `${base}.${runtime.extension}`;
    const [out, err, meta] = [`${base}.out`, `${base}.err`, `${base}.meta`].map(shellQuote);
    const bytes = new TextEncoder().encode(code);
    const inline = bytes.length <= INLINE_CODE_BYTES;
    if (!inline) await files.doWriteFile(sandbox, codeFile, bytes, { signal: options.signal });

    const result = await exec(
      sandbox,
      `command -v ${runtime.binary} >/dev/null 2>&1 || { rm -f ${shellQuote(codeFile)}; exit ${FILE_EXIT.missingTool}; }
mkdir -p ${shellQuote(dir)} || exit 1
${inline ? `printf '%s' '${encodeBase64(bytes)}' | base64 -d > ${shellQuote(codeFile)} || exit 1\n` : ""}${runtime.binary} ${runtime.binary === "node" ? "-e" : "-c"} ${shellQuote(runtime.runner)} ${shellQuote(codeFile)} ${meta} > ${out} 2> ${err}
c=$?
printf 'exit=%s\\n' "$c"
base64 < ${out}; echo .
base64 < ${err}; echo .
if [ -s ${meta} ]; then base64 < ${meta}; fi; echo .
rm -f ${shellQuote(codeFile)} ${out} ${err} ${meta}
exit 0`,
      options.signal,
    );
    if (result.exitCode === FILE_EXIT.missingTool) {
      throw new NotSupportedError(
        "codeInterpreter",
        ctx.provider,
        `${runtime.binary} is not installed in the sandbox (needed to run ${language} code)`,
      );
    }
    if (result.exitCode !== 0) {
      throw new SandboxError(
        "Provider",
        `code.run: the runner failed: ${stderrTail(result) || "no output"}`,
        {
          provider: ctx.provider,
        },
      );
    }

    const lines = decoder.decode(result.stdout).split("\n");
    const exitCode = Number(/^exit=(\d+)$/.exec(lines[0] ?? "")?.[1]);
    const sections: string[][] = [[]];
    for (const line of lines.slice(1)) {
      if (line === ".") sections.push([]);
      else sections[sections.length - 1]!.push(line);
    }
    if (!Number.isInteger(exitCode) || sections.length < 4) {
      throw new SandboxError("Provider", "code.run: unexpected output from the runner", {
        provider: ctx.provider,
      });
    }
    const section = (i: number) => decoder.decode(decodeBase64(sections[i]!.join("")));
    const stdout = section(0);
    const stderr = section(1);
    let reported: { result?: unknown; error?: { name?: unknown; message?: unknown; traceback?: unknown } } =
      {};
    const metaText = section(2);
    if (metaText.trim() !== "") {
      try {
        reported = JSON.parse(metaText) as typeof reported;
      } catch {
        // A run that died while the runner wrote its report is treated like one without a report.
      }
    }

    const run: CodeRunResult = {
      results: typeof reported.result === "string" ? [{ "text/plain": reported.result }] : [],
      logs: { stdout, stderr },
    };
    if (reported.error && typeof reported.error.name === "string") {
      run.error = {
        name: reported.error.name,
        message: typeof reported.error.message === "string" ? reported.error.message : "",
        traceback:
          typeof reported.error.traceback === "string" && reported.error.traceback !== ""
            ? reported.error.traceback
            : stderr,
      };
    } else if (exitCode !== 0) {
      run.error = errorFromStderr(stderr, exitCode);
    }
    return run;
  };
}
