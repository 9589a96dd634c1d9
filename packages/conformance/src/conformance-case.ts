import type { Capabilities, Sandbox, SandboxClient, SandboxClientOptions } from "@sbox/core";
import type { CapabilityName, SandboxProvider, SandboxSpec, SpecField } from "@sbox/core/spec";
import type { DriverCallLog } from "./driver-recorder.js";
import type { RemoteUnderTest } from "./fault-injection.js";
import type { ForeignOrigin } from "./foreign-origin.js";
import type { HostServer } from "./host-server.js";

/** Whether the run uses the provider as declared, or hides every emulatable driver method. */
export type ConformanceMode = "declared" | "primitives-only";

/**
 * Test data some cases need and no capability map can provide (a volume that exists, a region name).
 * These are not capability flags: a case whose capability is supported but whose fixture is missing is
 * reported as skipped with the fixture named, never as passed.
 */
export interface ConformanceFixtures {
  /** A volume name the provider can mount (`volumes`). */
  volume?: string | undefined;
  /** A region the provider accepts (`region`). */
  region?: string | undefined;
  /** A GPU kind the provider accepts (`gpu`). */
  gpu?: string | undefined;
  /** A provider-managed secret and the environment variable it is injected as (`secretsVault`). */
  secret?: { name: string; env: string } | undefined;
  /** Template for sandboxes the kit creates, when the provider needs one. */
  template?: string | undefined;
}

/** Everything a case may use. Sandboxes it creates through the context are destroyed when it ends. */
export interface ConformanceContext {
  /** The id of the running case, e.g. `"exec.stderr.separate"`. */
  readonly caseId: string;
  /** The provider's name. */
  readonly providerName: string;
  /** Whether optional driver methods are hidden. */
  readonly mode: ConformanceMode;
  /** The run's client. */
  readonly client: SandboxClient;
  /** The effective capabilities (after emulation): what the cases hold the provider to. */
  readonly capabilities: Capabilities;
  /** The provider as its factory made it (not recorded, methods not hidden): declaration, flags, honours. */
  readonly provider: SandboxProvider;
  /** Aborted when the case runs out of time. */
  readonly signal: AbortSignal;
  /** Unique per run; every sandbox the kit creates carries it as metadata `sbox-conformance-run`. */
  readonly runId: string;
  /** Test data passed by the test file. */
  readonly fixtures: ConformanceFixtures;
  /** Addresses at which the host may be reachable from inside a sandbox, tried in order. */
  readonly hostAddresses: readonly string[];
  /** Every driver call made through the run's providers, for "before any provider call" assertions. */
  readonly calls: DriverCallLog;
  /**
   * A sandbox shared by cases that only work inside their own scratch directory. Destroyed at the end
   * of the run, not of the case.
   */
  sharedSandbox(): Promise<Sandbox>;
  /**
   * A sandbox on which no command ever runs, so that a recorded driver call can only come from the probe
   * under test. Shared by the negative cases.
   */
  quietSandbox(): Promise<Sandbox>;
  /** Creates a sandbox labelled with the run id; it is destroyed when the case ends, pass or fail. */
  createSandbox(spec?: SandboxSpec): Promise<Sandbox>;
  /** Destroys `sandbox` when the case ends (for sandboxes made by `fork`, `connect`, ...). */
  track(sandbox: Sandbox): Sandbox;
  /**
   * Calls the test file's `providerWithOptions(options)` (the provider's factory with extra options);
   * skips the case, naming the missing option, when the test file gave none.
   */
  providerWithOptions(options: Record<string, unknown>): SandboxProvider;
  /**
   * A second client over a fresh provider instance, as another process would have; disposed at case end.
   * `overrides` change its client options (e.g. `{ retry: { retries: 0 } }` to time single calls).
   */
  secondClient(overrides?: Partial<Omit<SandboxClientOptions, "provider" | "primitivesOnly">>): SandboxClient;
  /**
   * The writable directory the kit works under in `sandbox` (absolute): the command's working directory
   * when it is writable, else `$TMPDIR` or `/tmp`. Forks are compared path-relative to it.
   */
  workdir(sandbox: Sandbox): Promise<string>;
  /** A new, empty directory inside `sandbox` (absolute path), removed when the case ends. */
  scratchDir(sandbox: Sandbox): Promise<string>;
  /** Registers a cleanup step, run when the case ends (last registered runs first). */
  defer(cleanup: () => unknown): void;
  /** An HTTP server on this machine that records the paths it was asked for (egress cases). */
  hostServer(): Promise<HostServer>;
  /** The remote the provider talks to, with its fault-injection hook, when the test file gave one. */
  readonly remote: RemoteUnderTest | undefined;
  /** A server on another origin that records every request it gets (the redirect target of `secrets.*`). */
  foreignOrigin(): Promise<ForeignOrigin>;
  /** Ends the case as skipped with `reason` (a missing fixture, a precondition the provider opts out of). */
  skip(reason: string): never;
}

/**
 * One conformance case. `id` is a stable dotted string; `title` reads like a contract sentence.
 * The kit selects a case by the provider's own effective capability map: it runs when every capability in
 * `requires` is native or emulated (and, for a negative case, when `unsupportedOf` is unsupported).
 */
export interface ConformanceCase {
  /** Stable dotted id, e.g. `"files.write.binary-roundtrip"`. */
  readonly id: string;
  /** The contract, as a sentence. */
  readonly title: string;
  /** Capabilities that must be native or emulated for the case to run. */
  readonly requires: readonly CapabilityName[];
  /** A negative case: runs only when this capability is unsupported. */
  readonly unsupportedOf?: CapabilityName | undefined;
  /** Spec fields the provider must honour for the case to run (the kit labels sandboxes with metadata). */
  readonly honours?: readonly SpecField[] | undefined;
  /** Time limit in milliseconds (default: the run's `timeoutMs`). */
  readonly timeoutMs?: number | undefined;
  /**
   * Set on a case that holds only the core (its validation, its gates on the declaration): it passes
   * whatever the adapter's code does, so reports label it and the matrix counts it apart from the cases
   * that hold the adapter's own behaviour.
   */
  readonly coreOnly?: boolean | undefined;
  /** Runs the case; throws (with a message naming the expectation) when the provider breaks the contract. */
  run(ctx: ConformanceContext): Promise<void>;
}
