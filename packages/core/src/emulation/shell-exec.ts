import { SandboxError } from "../errors/sandbox-error.js";
import type { SandboxProvider } from "../spec/provider-spec.js";
import type { ShellExec } from "./emulation-context.js";
import { createExecPipeline } from "./exec-pipeline.js";

export { toBytes } from "./exec-pipeline.js";

/**
 * The normalized exec primitive every emulation builds on, for a provider as it is: the exec pipeline's
 * `shell` (E1 unless the provider honours cwd/env, E2 unless it reports exit codes) over its buffered
 * `doExec`. Errors thrown by the provider are wrapped into `SandboxError`s carrying the provider's name.
 */
export function createShellExec(provider: SandboxProvider): ShellExec {
  return createExecPipeline({
    provider: provider.name,
    flags: provider.flags,
    doExec: provider.doExec.bind(provider),
    streaming: "unsupported",
    stdin: provider.capabilities.stdin,
    execSignals: false,
    emulatedStream: () => {
      throw new SandboxError("InvalidState", "a bare shell exec has no emulated stream", {
        retryable: false,
      });
    },
  }).shell;
}
