import type { ExecStdin, SandboxProvider } from "../spec/provider-spec.js";
import { AUTOMATIC_EMULATIONS, type LossyEmulation } from "./capability-emulation.js";
import type { CapabilityFlags } from "./capability-flags.js";
import type { CapabilityLevel, CapabilityMap, CapabilityName } from "./capability-names.js";

/** How a client runs a provider. */
export interface ResolveOptions {
  /** Lossy emulations the user opted into. */
  emulate?: readonly LossyEmulation[] | undefined;
  /** Hide every emulatable driver method and native exec conveniences (conformance proof mode). */
  primitivesOnly?: boolean | undefined;
}

/** The capabilities a user actually gets from a provider under the given options. */
export interface ResolvedCapabilities {
  map: CapabilityMap;
  flags: CapabilityFlags;
}

/**
 * Computes the effective capability map: the provider's declaration, with native emulatable capabilities
 * turned `emulated` in primitives-only mode (and the exec flags turned off so E1/E2 run too), and
 * unsupported lossy capabilities turned `emulated` when the user opted in. `statefulKernel` never follows
 * an emulated `codeInterpreter`: the runner is stateless.
 */
export function resolveCapabilities(
  provider: SandboxProvider,
  options: ResolveOptions = {},
): ResolvedCapabilities {
  const map: Record<CapabilityName, CapabilityLevel> = { ...provider.capabilities };
  let flags: CapabilityFlags = { ...provider.flags };
  if (options.primitivesOnly) {
    for (const name of AUTOMATIC_EMULATIONS) {
      if (map[name] === "native") map[name] = "emulated";
    }
    flags = { ...flags, perCommandEnvCwd: false, exitCodeNative: false };
  }
  for (const name of options.emulate ?? []) {
    if (map[name] === "unsupported") map[name] = "emulated";
  }
  if (map.codeInterpreter === "emulated") map.statefulKernel = "unsupported";
  // E3 (streaming, and stdin fed from a file) and E4 hand their supervisor a secret on the exec's stdin;
  // without one it travels on a command line, which every process of the sandbox can read.
  const supervised =
    map.streaming === "emulated" || map.background === "emulated" || map.stdin === "emulated";
  const exitCodeForgeable =
    provider.flags.exitCodeForgeable === true || (supervised && execStdinOf(provider) === "none");
  return { map, flags: { ...flags, exitCodeForgeable } };
}

/** What the provider's buffered exec takes on stdin: its declaration, else what its `stdin` level implies. */
export function execStdinOf(provider: Pick<SandboxProvider, "execStdin" | "capabilities">): ExecStdin {
  return provider.execStdin ?? (provider.capabilities.stdin === "native" ? "bytes" : "none");
}
