import { abortErrorOf, SandboxError } from "@sbox/core/spec";
import type Dockerode from "dockerode";
import { toDockerError } from "./docker-errors.js";
import { DockerLiveness } from "./docker-liveness.js";
import type { DockerProviderOptions, ResolvedDockerOptions } from "./docker-options.js";
import { DockerPauseGate } from "./docker-pause-gate.js";

/**
 * Runs one engine call under an upper bound: it rejects when the caller's signal fires, or after
 * `timeoutMs` with a retryable `Timeout` when the engine does not answer (a stopped or hung daemon must
 * never hang the caller). The signal handed to `run` aborts the underlying HTTP request in both cases.
 */
export function bounded<T>(
  operation: string,
  callerSignal: AbortSignal,
  timeoutMs: number,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  if (callerSignal.aborted) return Promise.reject(abortErrorOf(callerSignal, `docker ${operation}`));
  const controller = new AbortController();
  let timedOut = false;
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onCallerAbort = () => controller.abort();
    callerSignal.addEventListener("abort", onCallerAbort, { once: true });
    const settle = () => {
      clearTimeout(timer);
      callerSignal.removeEventListener("abort", onCallerAbort);
    };
    controller.signal.addEventListener(
      "abort",
      () => {
        settle();
        reject(
          timedOut
            ? new SandboxError(
                "Timeout",
                `docker ${operation}: the Docker Engine did not answer within ${timeoutMs} ms`,
                {
                  retryable: true,
                },
              )
            : abortErrorOf(callerSignal, `docker ${operation}`),
        );
      },
      { once: true },
    );
    let started: Promise<T>;
    try {
      started = run(controller.signal);
    } catch (error) {
      started = Promise.reject(error);
    }
    started.then(
      (value) => {
        settle();
        resolve(value);
      },
      (error: unknown) => {
        settle();
        reject(
          controller.signal.aborted
            ? abortErrorOf(callerSignal, `docker ${operation}`)
            : toDockerError(error, operation),
        );
      },
    );
  });
}

/** Dockerode constructor options from the provider's `socketPath` / `host`. */
export function dockerodeOptions(options: DockerProviderOptions): Dockerode.DockerOptions | undefined {
  if (options.socketPath) return { socketPath: options.socketPath };
  const host = options.host;
  if (!host) return undefined;
  if (host.startsWith("unix://")) return { socketPath: host.slice("unix://".length) };
  let url: URL;
  try {
    url = new URL(host.includes("://") ? host : `tcp://${host}`);
  } catch (cause) {
    throw new SandboxError("Validation", `docker: invalid host ${JSON.stringify(host)}`, { cause });
  }
  const protocol = url.protocol.replace(/:$/, "");
  if (protocol === "ssh") {
    const result: Dockerode.DockerOptions = { protocol: "ssh", host: url.hostname, port: url.port || 22 };
    if (url.username) result.username = decodeURIComponent(url.username);
    return result;
  }
  if (protocol === "tcp" || protocol === "http" || protocol === "https") {
    return {
      protocol: protocol === "https" ? "https" : "http",
      host: url.hostname,
      port: url.port || (protocol === "https" ? 2376 : 2375),
    };
  }
  throw new SandboxError("Validation", `docker: unsupported host scheme ${JSON.stringify(protocol)}`);
}

/**
 * The engine connection of one provider: dockerode is imported on first use (importing the provider costs
 * nothing), and every non-streaming call goes through {@link bounded}.
 */
export class DockerEngine {
  readonly options: ResolvedDockerOptions;
  /** Keeps pauses and exec starts of one container apart (see {@link DockerPauseGate}). */
  readonly pauseGate: DockerPauseGate = new DockerPauseGate();
  /** Notices containers paused (or an engine hung) under running commands (see {@link DockerLiveness}). */
  readonly liveness: DockerLiveness = new DockerLiveness(this);
  private readonly input: DockerProviderOptions;
  private client: Promise<Dockerode> | undefined;

  constructor(input: DockerProviderOptions, options: ResolvedDockerOptions) {
    this.input = input;
    this.options = options;
  }

  /** The dockerode client, created on first use. */
  docker(): Promise<Dockerode> {
    if (!this.client) {
      const given = this.input.docker;
      this.client = given
        ? Promise.resolve(given)
        : import("dockerode").then((module) => {
            const Docker = ((module as { default?: unknown }).default ?? module) as typeof Dockerode;
            return new Docker(dockerodeOptions(this.input));
          });
      this.client.catch(() => {
        this.client = undefined;
      });
    }
    return this.client;
  }

  /** Runs `run` against the engine under the request bound (or `timeoutMs`). */
  async call<T>(
    operation: string,
    signal: AbortSignal,
    run: (docker: Dockerode, signal: AbortSignal) => Promise<T>,
    timeoutMs: number = this.options.requestTimeoutMs,
  ): Promise<T> {
    const docker = await bounded("load dockerode", signal, timeoutMs, () => this.docker());
    return bounded(operation, signal, timeoutMs, (bound) => run(docker, bound));
  }
}
