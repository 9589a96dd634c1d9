import type { SandboxClientOptions } from "@sbox/core";
import type { SandboxProvider } from "@sbox/core/spec";
import type { ConformanceCase, ConformanceFixtures } from "./conformance-case.js";
import type { RemoteUnderTest } from "./fault-injection.js";

/** Options of a conformance run, shared by the plain runner and the vitest binding. */
export interface ConformanceOptions {
  /**
   * Makes a fresh provider instance. Called once for the run's client, and again for every "second
   * client" (connecting from another process). Never pass capability flags: the provider's own
   * declaration decides which cases run.
   */
  provider: () => SandboxProvider;
  /**
   * Makes the provider with further factory options on top of the run's own, e.g.
   * `(extra) => local({ root, ...extra })`. The kit uses it to check that an option the provider does not
   * know is refused (`options.unknown-refused`); without it that case is skipped, saying so.
   */
  providerWithOptions?: ((options: Record<string, unknown>) => SandboxProvider) | undefined;
  /** Hide every driver method the core can emulate, so the emulations run on this backend. */
  primitivesOnly?: boolean | undefined;
  /**
   * Cases to leave out, each with the reason: `{ "ports.expose.http": "needs a public DNS name" }`.
   * Reported as `excluded`, apart from capability skips. An id that names no case is an error.
   */
  exclude?: Readonly<Record<string, string>> | undefined;
  /** Run only these cases: exact ids, or prefixes such as `"files"` or `"exec.exit-code"`. */
  only?: readonly string[] | undefined;
  /** Per-case time limit in milliseconds (default 60 000; big-data cases get at least 180 000). */
  timeoutMs?: number | undefined;
  /** Further client options (retry, hooks, `emulate: ["snapshot"]` to test opt-in emulations...). */
  clientOptions?: Partial<Omit<SandboxClientOptions, "provider" | "primitivesOnly">> | undefined;
  /** Test data a few cases need (volume, region, gpu, secret, template). */
  fixtures?: ConformanceFixtures | undefined;
  /**
   * Where the host is reachable from inside a sandbox (egress cases), tried before the kit's own guesses:
   * `127.0.0.1` (no network namespace), `host.docker.internal`, and the sandbox's default gateway.
   */
  hostAddresses?: readonly string[] | undefined;
  /**
   * Names this target in reports and the matrix when one provider runs in several set-ups, e.g.
   * `"local (bwrap)"` and `"local (none)"`; defaults to the provider's name.
   */
  label?: string | undefined;
  /** Further cases of your own, run after the kit's. */
  extraCases?: readonly ConformanceCase[] | undefined;
  /**
   * The remote a cloud provider talks to (a test server or emulator) with its fault-injection hook, the
   * deadline the factory configures and the fake credential it plants: enables the `secrets.*` and
   * `deadline.*` cases, which are skipped without it.
   */
  remote?: RemoteUnderTest | undefined;
}
