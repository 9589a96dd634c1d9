import { codeForHttpStatus, type DriverOutputCallbacks, SandboxError } from "@sbox/core/spec";
import type WebSocket from "ws";
import { DaytonaLogDemux } from "./daytona-log-demux.js";
import { DAYTONA_PROVIDER_NAME } from "./daytona-names.js";
import type { DaytonaSdkSandbox } from "./daytona-sdk.js";

/** The toolbox client configuration the SDK's `Process` holds: its base URL and request headers. */
interface ToolboxConfig {
  readonly basePath?: unknown;
  readonly baseOptions?: { readonly headers?: unknown } | undefined;
}

let loadingWs: Promise<typeof import("ws")> | undefined;

/** `ws` is loaded on the first streamed command, like the SDK. */
function loadWs(): Promise<typeof import("ws")> {
  if (!loadingWs) {
    const attempt = import("ws");
    loadingWs = attempt;
    attempt.catch(() => {
      if (loadingWs === attempt) loadingWs = undefined;
    });
  }
  return loadingWs;
}

/**
 * The URL and headers of a session command's logs socket, as the SDK's `getSessionCommandLogs` builds them:
 * the sandbox's toolbox base (kept current by the SDK when the proxy URL changes) with `ws` for `http`, and
 * the SDK's own headers (the API key as a bearer token, the SDK's source and version).
 */
export function logsSocketTarget(
  sandbox: DaytonaSdkSandbox,
  sessionId: string,
  commandId: string,
): { url: string; headers: Record<string, string> } {
  // The SDK keeps its toolbox configuration private; the pinned version's shape is checked, not assumed.
  const config = (sandbox.process as unknown as { clientConfig?: ToolboxConfig }).clientConfig;
  const base = config?.basePath;
  const headers = config?.baseOptions?.headers;
  if (typeof base !== "string" || typeof headers !== "object" || headers === null) {
    throw new SandboxError(
      "Provider",
      "daytona: the SDK's toolbox configuration is not where 0.218.0 has it",
      {
        provider: DAYTONA_PROVIDER_NAME,
      },
    );
  }
  const strings: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (typeof value === "string") strings[name] = value;
  const path = `/process/session/${encodeURIComponent(sessionId)}/command/${encodeURIComponent(commandId)}/logs`;
  return { url: `${base.replace(/^http/, "ws").replace(/\/+$/, "")}${path}?follow=true`, headers: strings };
}

/** What following a logs socket needs. */
export interface FollowLogsRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Aborting closes the socket at once; the follow then rejects with the signal's reason. */
  readonly signal: AbortSignal;
  /** How long the upgrade may take, and how long a ping may go unanswered once open. */
  readonly deadlineMs: number;
  readonly output: DriverOutputCallbacks;
}

function socketError(
  message: string,
  extra: { status?: number; code?: "Timeout"; retryable?: boolean } = {},
): SandboxError {
  const code = extra.code ?? (extra.status === undefined ? "Provider" : codeForHttpStatus(extra.status));
  return new SandboxError(code, `daytona: ${message}`, {
    provider: DAYTONA_PROVIDER_NAME,
    ...(extra.status === undefined ? {} : { status: extra.status }),
    retryable: extra.retryable ?? code === "Timeout",
  });
}

/**
 * Follows a session command's logs WebSocket (`…/logs?follow=true`) to its end: every frame goes through
 * {@link DaytonaLogDemux}, so output reaches the callbacks as it comes. Resolves when the daemon closes the
 * socket normally (1000: the command ended and everything was sent). A refused upgrade is the status's
 * error; any other close (a dropped connection, the daemon's 1011) is a `Provider` error, never a silent
 * end; a socket whose pings go unanswered for `deadlineMs` is a `Timeout`. A consumer that falls behind
 * (`output.ready`) pauses the socket. An output callback that throws ends the follow with its error.
 */
export async function followDaytonaLogs(request: FollowLogsRequest): Promise<void> {
  request.signal.throwIfAborted();
  const { WebSocket: Socket } = await loadWs();
  request.signal.throwIfAborted();
  const demux = new DaytonaLogDemux({
    onStdout: (chunk) => request.output.onStdout(chunk),
    onStderr: (chunk) => request.output.onStderr(chunk),
  });
  const ws: WebSocket = new Socket(request.url, {
    headers: { ...request.headers },
    perMessageDeflate: false,
  });
  await new Promise<void>((resolve, reject) => {
    let settled = false;
    let answered = true;
    let liveness: ReturnType<typeof setInterval> | undefined;
    const connectTimer = setTimeout(
      () =>
        fail(
          socketError(`the logs socket did not open within ${request.deadlineMs} ms`, { code: "Timeout" }),
        ),
      request.deadlineMs,
    );
    const finish = (error?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(connectTimer);
      if (liveness) clearInterval(liveness);
      request.signal.removeEventListener("abort", onAbort);
      if (error === undefined) resolve();
      else reject(error);
    };
    const fail = (error: unknown) => {
      ws.terminate();
      finish(error);
    };
    const onAbort = () => fail(request.signal.reason ?? new DOMException("aborted", "AbortError"));
    request.signal.addEventListener("abort", onAbort, { once: true });
    ws.on("unexpected-response", (_req, res) => {
      const status = res.statusCode ?? 502;
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (piece: string) => {
        if (body.length < 2048) body += piece;
      });
      res.on("end", () => {
        let message = body.slice(0, 300);
        try {
          const parsed = JSON.parse(body) as { message?: unknown };
          if (typeof parsed.message === "string") message = parsed.message;
        } catch {
          // not JSON: the text as it came
        }
        fail(
          socketError(`the logs socket was refused with ${status}${message ? `: ${message}` : ""}`, {
            status,
          }),
        );
      });
      res.on("error", () => fail(socketError(`the logs socket was refused with ${status}`, { status })));
    });
    ws.on("open", () => {
      clearTimeout(connectTimer);
      // A daemon or proxy that went silent is found by its unanswered pings, not waited on forever.
      liveness = setInterval(() => {
        if (!answered) {
          fail(
            socketError(`the logs socket answered no ping within ${request.deadlineMs} ms`, {
              code: "Timeout",
            }),
          );
          return;
        }
        answered = false;
        ws.ping();
      }, request.deadlineMs);
    });
    ws.on("pong", () => {
      answered = true;
    });
    ws.on("message", (data: Buffer | ArrayBuffer | Buffer[]) => {
      answered = true;
      const frames = Array.isArray(data) ? data : [data];
      try {
        for (const frame of frames) demux.push(frame instanceof ArrayBuffer ? new Uint8Array(frame) : frame);
      } catch (error) {
        // The output callbacks refused what came (output that is not the supervisor's encoding).
        fail(error);
        return;
      }
      const wait = request.output.ready?.();
      if (wait) {
        ws.pause();
        void Promise.resolve(wait).then(
          () => ws.resume(),
          () => ws.resume(),
        );
      }
    });
    ws.on("error", (error) => {
      if (!settled) fail(socketError(`the logs socket failed: ${error.message}`, { retryable: true }));
    });
    ws.on("close", (code) => {
      if (settled) return;
      if (code === 1000) {
        try {
          demux.end();
          finish();
        } catch (error) {
          finish(error);
        }
        return;
      }
      finish(
        socketError(`the logs socket closed before the command ended (close code ${code})`, {
          retryable: true,
        }),
      );
    });
  });
}
