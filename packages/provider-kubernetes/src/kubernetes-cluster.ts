/**
 * The connection to the cluster: `@kubernetes/client-node` and `ws` are imported on first use (importing
 * the provider costs nothing), the kubeconfig comes from the options or the usual places (`KUBECONFIG`,
 * `~/.kube/config`, the in-cluster service account), and every API call runs under an upper bound — it
 * rejects when the caller's signal fires, or with a retryable `Timeout` when the API server does not
 * answer within `requestTimeoutMs` — with its error mapped by `toKubernetesError`. Streaming calls open a
 * WebSocket with the kubeconfig's credentials (token, client certificate, exec plugins), whose handshake
 * has the same deadline. Every credential the cluster sends (the kubeconfig user's token, password and
 * client key, and whatever Authorization an exec plugin produced) is remembered in {@link
 * KubernetesCluster.secrets}, which the provider hands to `defineProvider`: the core removes them from
 * every error, cause chain included.
 */
import type * as K8s from "@kubernetes/client-node";
import { SandboxError } from "@sbox/core/spec";
import type WebSocket from "ws";
import { kubernetesError, toKubernetesError } from "./kubernetes-errors.js";
import type { ResolvedKubernetesOptions } from "./kubernetes-options.js";

/** The loaded client: APIs, namespace, and what must never appear in an error. */
export interface KubernetesApis {
  readonly k8s: typeof K8s;
  readonly config: K8s.KubeConfig;
  readonly core: K8s.CoreV1Api;
  readonly networking: K8s.NetworkingV1Api;
  readonly custom: K8s.CustomObjectsApi;
  readonly namespace: string;
  /** The API server URL. */
  readonly server: string;
}

/** Per-request options that carry an abort signal into client-node. */
export type CallOptions = K8s.ConfigurationOptions;

/** The error a call rejects with when its caller's signal fired. */
export function abortedError(operation: string, signal: AbortSignal): SandboxError {
  const reason: unknown = signal.reason;
  if (SandboxError.isInstance(reason)) return reason;
  if (reason instanceof Error && reason.name === "TimeoutError") {
    return kubernetesError("Timeout", `kubernetes ${operation}: timed out`, { cause: reason });
  }
  return kubernetesError("Aborted", `kubernetes ${operation}: aborted`, { cause: reason });
}

/** One cluster, loaded lazily. */
export class KubernetesCluster {
  private loading: Promise<KubernetesApis> | undefined;
  private wsModule: Promise<typeof WebSocket> | undefined;
  private readonly credentials = new Set<string>();

  constructor(readonly options: ResolvedKubernetesOptions) {}

  /** Every credential this cluster has sent or may send, for the core's redaction. */
  secrets(): readonly string[] {
    return [...this.credentials];
  }

  /** Remembers a credential (the bare token of `Bearer <token>` too). */
  private remember(value: unknown): void {
    if (typeof value !== "string" || value.length < 8) return;
    this.credentials.add(value);
    const bare = /^(?:bearer|basic)\s+(.+)$/i.exec(value.trim())?.[1];
    if (bare && bare.length >= 8) this.credentials.add(bare);
  }

  /** The APIs (loads client-node and the kubeconfig the first time). */
  apis(): Promise<KubernetesApis> {
    this.loading ??= this.load();
    this.loading.catch(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  private async load(): Promise<KubernetesApis> {
    let k8s: typeof K8s;
    try {
      k8s = await import("@kubernetes/client-node");
    } catch (error) {
      throw kubernetesError("Provider", "kubernetes: @kubernetes/client-node could not be loaded", {
        cause: error,
      });
    }
    const config = new k8s.KubeConfig();
    try {
      if (this.options.kubeconfig !== undefined) config.loadFromString(this.options.kubeconfig);
      else if (this.options.kubeconfigPath !== undefined) config.loadFromFile(this.options.kubeconfigPath);
      else config.loadFromDefault();
      if (this.options.context !== undefined) {
        if (!config.getContextObject(this.options.context)) {
          throw kubernetesError(
            "Validation",
            `kubernetes: the kubeconfig has no context ${JSON.stringify(this.options.context)}`,
          );
        }
        config.setCurrentContext(this.options.context);
      }
    } catch (error) {
      if (SandboxError.isInstance(error)) throw error;
      // No cause: a YAML error quotes the lines around the problem, which may hold the user's token.
      throw kubernetesError(
        "Validation",
        `kubernetes: the kubeconfig could not be read: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`,
      );
    }
    const cluster = config.getCurrentCluster();
    if (!cluster) {
      throw kubernetesError(
        "Validation",
        "kubernetes: no cluster configured (set KUBECONFIG, pass kubeconfig or kubeconfigPath, or run inside a cluster)",
      );
    }
    const user = config.getCurrentUser();
    for (const secret of [user?.token, user?.password, user?.keyData]) this.remember(secret);
    // The client key as the PEM it decodes to, too (an error could quote the file's text).
    if (user?.keyData) this.remember(Buffer.from(user.keyData, "base64").toString("utf8").trim());
    const context = config.getContextObject(config.getCurrentContext());
    return {
      k8s,
      config,
      core: config.makeApiClient(k8s.CoreV1Api),
      networking: config.makeApiClient(k8s.NetworkingV1Api),
      custom: config.makeApiClient(k8s.CustomObjectsApi),
      namespace: this.options.namespace ?? context?.namespace ?? "default",
      server: cluster.server,
    };
  }

  /**
   * Runs one API call under the caller's signal and the request timeout; `run` gets client options that
   * abort the HTTP request too.
   */
  async call<T>(
    operation: string,
    signal: AbortSignal,
    run: (apis: KubernetesApis, options: CallOptions) => Promise<T>,
  ): Promise<T> {
    const apis = await this.apis();
    if (signal.aborted) throw abortedError(operation, signal);
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.options.requestTimeoutMs);
    const onAbort = () => controller.abort();
    signal.addEventListener("abort", onAbort, { once: true });
    const options: CallOptions = {
      middleware: [
        {
          pre: (context) => {
            // An exec plugin's token is only known once the client has applied it to a request.
            this.remember(context.getHeaders().Authorization ?? context.getHeaders().authorization);
            context.setSignal(controller.signal as never);
            return new apis.k8s.Observable(Promise.resolve(context));
          },
          post: (response) => new apis.k8s.Observable(Promise.resolve(response)),
        },
      ],
      middlewareMergeStrategy: "append",
    };
    try {
      return await Promise.race([
        run(apis, options),
        new Promise<never>((_, reject) => {
          controller.signal.addEventListener("abort", () => reject(new Error("aborted")), { once: true });
        }),
      ]);
    } catch (error) {
      if (timedOut) {
        throw kubernetesError(
          "Timeout",
          `kubernetes ${operation}: the API server did not answer within ${this.options.requestTimeoutMs} ms`,
          { retryable: true },
        );
      }
      if (signal.aborted) throw abortedError(operation, signal);
      throw toKubernetesError(error, operation);
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
    }
  }

  /** Opens a WebSocket to `path` (with query) offering `protocols`, authenticated as the kubeconfig's user. */
  async websocket(
    path: string,
    protocols: readonly string[],
    signal: AbortSignal,
    operation: string,
  ): Promise<WebSocket> {
    const apis = await this.apis();
    this.wsModule ??= import("ws").then((m) => (m as unknown as { default: typeof WebSocket }).default);
    const WebSocketClass = await this.wsModule;
    const base = apis.server.replace(/\/+$/, "");
    const url = `${base.replace(/^http/, "ws")}${path}`;
    const options: WebSocket.ClientOptions = {
      perMessageDeflate: false,
      handshakeTimeout: this.options.requestTimeoutMs,
    };
    await apis.config.applyToHTTPSOptions(options);
    const headers = (options.headers ?? {}) as Record<string, unknown>;
    this.remember(headers.Authorization ?? headers.authorization);
    if (signal.aborted) throw abortedError(operation, signal);
    return new Promise((resolve, reject) => {
      const ws = new WebSocketClass(url, [...protocols], options);
      const onAbort = () => {
        ws.terminate();
        reject(abortedError(operation, signal));
      };
      signal.addEventListener("abort", onAbort, { once: true });
      ws.once("open", () => {
        signal.removeEventListener("abort", onAbort);
        resolve(ws);
      });
      ws.once("unexpected-response", (_req, res) => {
        signal.removeEventListener("abort", onAbort);
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          ws.terminate();
          const status = res.statusCode ?? 500;
          const body = Buffer.concat(chunks).toString("utf8");
          reject(toKubernetesError({ code: status, body }, operation));
        });
        res.on("error", () => reject(toKubernetesError({ code: status(res.statusCode) }, operation)));
      });
      ws.once("error", (error) => {
        signal.removeEventListener("abort", onAbort);
        if (/handshake has timed out/i.test(error.message)) {
          reject(
            kubernetesError(
              "Timeout",
              `kubernetes ${operation}: the API server did not answer the stream's handshake within ${this.options.requestTimeoutMs} ms`,
              { retryable: true, cause: error },
            ),
          );
          return;
        }
        reject(toKubernetesError(error, operation));
      });
    });
  }
}

function status(code: number | undefined): number {
  return code ?? 500;
}
