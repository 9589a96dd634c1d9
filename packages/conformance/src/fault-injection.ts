/**
 * The fault-injection hook: how the kit makes the remote a provider talks to (a test server, an emulator)
 * misbehave, for the `secrets.*` and `deadline.*` cases. A server or emulator implements
 * {@link FaultInjection}; a test file hands it to the kit as {@link RemoteUnderTest}.
 */

/** How the remote answers every request while the fault is in force. */
export type RemoteFault =
  /** Normal service. Lifting a stall closes the connections of the requests it held. */
  | { readonly kind: "none" }
  /** Accept the connection and read the request, then never answer (until the fault is lifted). */
  | { readonly kind: "stall" }
  /**
   * Answer with an error (status 400) whose body quotes every request header, credentials included,
   * as `{"code": 400, "message": "<text>", "error": "<text>"}` (the shapes E2B's and Fly's APIs use).
   */
  | { readonly kind: "echo-credential" }
  /**
   * Answer with a redirect (`status`, default 307) to `location` followed by the request's own path and
   * query. The kit points `location` at a server of its own on another origin and records what reaches it.
   */
  | { readonly kind: "redirect"; readonly location: string; readonly status?: 301 | 302 | 303 | 307 | 308 };

/** What a test server or emulator offers the kit. */
export interface FaultInjection {
  /**
   * Makes every request that arrives from now on (on every endpoint of the remote: control plane and
   * sandbox daemon alike) follow `fault`. Resolves once it is in force.
   */
  set(fault: RemoteFault): void | Promise<void>;
}

/** The remote of a cloud provider under test, as the test file describes it to the kit. */
export interface RemoteUnderTest {
  /** The remote's fault-injection hook. */
  readonly faults: FaultInjection;
  /** The request deadline the provider factory configures (its `requestTimeoutMs`), in ms. */
  readonly deadlineMs: number;
  /**
   * A fake credential planted in the provider's configuration (its API key or token): the `secrets.*`
   * cases check that it appears in no error and in no request to another origin.
   */
  readonly plantedCredential?: string | undefined;
  /**
   * Factory options (given to the test file's `providerWithOptions`) that replace the provider's
   * credential with one the remote refuses, e.g. `{ apiKey: "sbox-wrong-key" }`: enables
   * `errors.unauthorized.wrong-credential`. Every string among them counts as a credential that must
   * appear in no error.
   */
  readonly wrongCredentialOptions?: Readonly<Record<string, unknown>> | undefined;
}

/** One request that reached the kit's other-origin server. */
export interface ForeignRequest {
  readonly method: string;
  /** Path and query. */
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The body as text (latin1, so every byte survives). */
  readonly body: string;
}
