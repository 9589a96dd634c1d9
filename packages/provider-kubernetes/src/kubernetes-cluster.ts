/**
 * The connection to the cluster: `@kubernetes/client-node` and `ws` are imported on first use (importing
 * the provider costs nothing), the kubeconfig comes from the options or the usual places (`KUBECONFIG`,
 * `~/.kube/config`, the in-cluster service account), and every API call runs under an upper bound — it
 * rejects when the caller's signal fires, or with a retryable `Timeout` when the API server does not
 * answer within `requestTimeoutMs` — with its error mapped by `toKubernetesError`. Streaming calls open a
 * WebSocket with the kubeconfig's credentials (token, client certificate, exec plugins).
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
  /** Credentials of the kubeconfig's user, scrubbed from every message. */
  readonly secrets: readonly string[];
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

  constructor(readonly options: ResolvedKubernetesOptions) {}

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
      throw kubernetesError(
        "Validation",
        `kubernetes: the kubeconfig could not be read: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`,
        {
          cause: error,
        },
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
    const secrets = [user?.token, user?.password, user?.keyData, user?.certData].filter(
      (s): s is string => typeof s === "string" && s.length >= 8,
    );
    const context = config.getContextObject(config.getCurrentContext());
    return {
      k8s,
      config,
      core: config.makeApiClient(k8s.CoreV1Api),
      networking: config.makeApiClient(k8s.NetworkingV1Api),
      custom: config.makeApiClient(k8s.CustomObjectsApi),
      namespace: this.options.namespace ?? context?.namespace ?? "default",
      server: cluster.server,
      secrets,
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
          {
            retryable: true,
            secrets: apis.secrets,
          },
        );
      }
      if (signal.aborted) throw abortedError(operation, signal);
      throw toKubernetesError(error, operation, apis.secrets);
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
          reject(toKubernetesError({ code: status, body }, operation, apis.secrets));
        });
        res.on("error", () =>
          reject(toKubernetesError({ code: status(res.statusCode) }, operation, apis.secrets)),
        );
      });
      ws.once("error", (error) => {
        signal.removeEventListener("abort", onAbort);
        reject(toKubernetesError(error, operation, apis.secrets));
      });
    });
  }
}

function status(code: number | undefined): number {
  return code ?? 500;
}
