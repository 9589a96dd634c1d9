/**
 * The upgrade requests of the pod streaming subresources (`exec`, `attach`, `portforward`): checks the
 * token and the pod as the API server does before switching protocols (a refused request is an ordinary
 * HTTP error with a Status body, which kubectl prints as "unable to upgrade connection: ..."), then
 * speaks what the client asked for: a WebSocket channel protocol (`v5.channel.k8s.io` first), kubectl's
 * SPDY-over-WebSocket port-forward tunnel (`SPDY/3.1+portforward.k8s.io`), or plain SPDY/3.1 (the fallback
 * of kubectl and older clients, with `X-Stream-Protocol-Version` negotiation).
 */
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { WebSocketServer } from "ws";
import type { EmulatorBackend } from "../backend.js";
import {
  checkExecRequest,
  type ExecIO,
  type ExecRequest,
  execRequestOf,
  runAttach,
  runExec,
} from "./kubernetes-exec.js";
import type { Kubelet } from "./kubernetes-kubelet.js";
import type { KubeObject } from "./kubernetes-objects.js";
import { requestedPorts, servePortForwardChannels, servePortForwardSpdy } from "./kubernetes-port-forward.js";
import { POD } from "./kubernetes-resources.js";
import { SpdySession, type SpdyStream } from "./kubernetes-spdy.js";
import { KubeApiError, type KubeStatus } from "./kubernetes-status.js";
import type { KubernetesStore } from "./kubernetes-store.js";
import {
  ChannelSocket,
  chooseProtocol,
  EXEC_PROTOCOLS,
  PORT_FORWARD_PROTOCOLS,
  protocolVersion,
} from "./kubernetes-websocket-channels.js";

/** What the streaming endpoints need. */
export interface StreamingContext {
  readonly store: KubernetesStore;
  readonly kubelet: Kubelet;
  readonly backend: EmulatorBackend;
  /** Whether a request carries an accepted credential. */
  authorized(req: IncomingMessage, websocketToken: string | undefined): boolean;
  /** Records the request in the emulator's log. */
  logRequest(req: IncomingMessage, route: string, status: number): void;
}

const STREAM_PATH = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/(exec|attach|portforward)$/;
const BEARER_PROTOCOL = "base64url.bearer.authorization.k8s.io.";
const SPDY_EXEC_VERSIONS = ["v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"];

function reject(socket: Socket, error: KubeApiError): void {
  const body = JSON.stringify(error.toStatus());
  socket.end(
    `HTTP/1.1 ${error.code} ${error.reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

function offeredProtocols(req: IncomingMessage): string[] {
  return String(req.headers["sec-websocket-protocol"] ?? "")
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "");
}

/** A handler for the HTTP server's upgrade requests; answers `false` for paths it does not serve. */
export function streamingUpgrades(
  context: StreamingContext,
): (req: IncomingMessage, socket: Socket, head: Buffer) => boolean {
  const wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: 64 * 1024 * 1024,
    handleProtocols: (offered, req) => {
      const portForward = (req.url ?? "").split("?")[0]!.endsWith("/portforward");
      return chooseProtocol(offered, portForward ? PORT_FORWARD_PROTOCOLS : EXEC_PROTOCOLS);
    },
  });
  return (req, socket, head) => {
    const url = new URL(req.url ?? "/", "https://emulator");
    const match = STREAM_PATH.exec(url.pathname);
    if (!match) return false;
    const [, namespace, name, subresource] = match as unknown as [
      string,
      string,
      string,
      "exec" | "attach" | "portforward",
    ];
    const route = `${req.method} /api/v1/namespaces/{namespace}/pods/{name}/${subresource}`;
    const websocket = String(req.headers.upgrade ?? "").toLowerCase() === "websocket";
    const spdy = /^spdy\/3\.1$/i.test(String(req.headers.upgrade ?? ""));
    const fail = (error: KubeApiError) => {
      context.logRequest(req, route, error.code);
      reject(socket, error);
    };
    const bearer = offeredProtocols(req).find((p) => p.startsWith(BEARER_PROTOCOL));
    const wsToken = bearer
      ? Buffer.from(bearer.slice(BEARER_PROTOCOL.length), "base64url").toString("utf8")
      : undefined;
    if (!context.authorized(req, wsToken)) {
      fail(new KubeApiError(401, "Unauthorized", "Unauthorized"));
      return true;
    }
    if (!websocket && !spdy) {
      fail(new KubeApiError(400, "BadRequest", "Upgrade request required"));
      return true;
    }
    let pod: KubeObject;
    let request: ExecRequest | undefined;
    let ports: number[] = [];
    const runtime = context.kubelet.runtime(decodeURIComponent(namespace), decodeURIComponent(name));
    try {
      pod = context.store.require(POD, decodeURIComponent(namespace), decodeURIComponent(name));
      if (subresource === "portforward") {
        ports = requestedPorts(url);
        if (!runtime?.running)
          throw new KubeApiError(
            400,
            "BadRequest",
            `unable to upgrade connection: pod ${pod.metadata.name} is not running`,
          );
        if (websocket && ports.length === 0 && !offeredProtocols(req).includes(PORT_FORWARD_PROTOCOLS[0]!)) {
          throw new KubeApiError(400, "BadRequest", 'query parameter "ports" is required');
        }
      } else {
        request = execRequestOf(url);
        checkExecRequest(pod, runtime, request, subresource === "attach");
      }
    } catch (error) {
      fail(error instanceof KubeApiError ? error : new KubeApiError(500, "InternalError", String(error)));
      return true;
    }
    if (spdy) {
      const offered = String(req.headers["x-stream-protocol-version"] ?? "")
        .split(",")
        .map((p) => p.trim());
      const chosen =
        subresource === "portforward"
          ? "portforward.k8s.io"
          : SPDY_EXEC_VERSIONS.find((v) => offered.includes(v));
      if (
        !chosen ||
        (subresource === "portforward" && !offered.includes("portforward.k8s.io") && offered.join("") !== "")
      ) {
        fail(
          new KubeApiError(
            403,
            "Forbidden",
            `unable to upgrade: unable to negotiate protocol: client supports [${offered.join(" ")}]`,
          ),
        );
        return true;
      }
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ${chosen}\r\n\r\n`,
      );
      context.logRequest(req, `${route} (SPDY/3.1, ${chosen})`, 101);
      socket.setNoDelay(true);
      const session: SpdySession = new SpdySession(
        {
          write: (bytes) =>
            new Promise((resolve) => {
              if (socket.write(bytes)) resolve();
              else socket.once("drain", () => resolve());
            }),
          close: () => socket.destroy(),
        },
        (stream) => onStream(stream),
      );
      let onStream: (stream: SpdyStream) => void;
      if (subresource === "portforward") onStream = servePortForwardSpdy(context.backend, runtime!, session);
      else
        onStream = spdyExec(
          context,
          pod,
          request!,
          subresource === "attach",
          protocolVersion(chosen),
          session,
        );
      socket.on("data", (bytes: Buffer) => session.receive(bytes));
      socket.on("close", () => session.close());
      socket.on("error", () => session.close());
      if (head.length > 0) session.receive(head);
      return true;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      context.logRequest(req, `${route} (WebSocket, ${ws.protocol})`, 101);
      if (subresource === "portforward" && ws.protocol === PORT_FORWARD_PROTOCOLS[0]) {
        const session = new SpdySession(
          {
            write: (bytes) => new Promise((resolve) => ws.send(bytes, { binary: true }, () => resolve())),
            close: () => ws.close(1000),
          },
          (stream) => handler(stream),
        );
        const handler = servePortForwardSpdy(context.backend, runtime!, session);
        ws.on("message", (data) =>
          session.receive(Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer)),
        );
        ws.on("close", () => session.close());
        ws.on("error", () => session.close());
        return;
      }
      const channels = new ChannelSocket(ws);
      if (subresource === "portforward") {
        servePortForwardChannels(context.backend, runtime!, channels, ports);
        return;
      }
      const io = websocketExecIO(channels, request!);
      void (subresource === "attach"
        ? runAttach(runtime!, request!, io)
        : runExec(context.backend, pod, runtime!, request!, io));
    });
    return true;
  };
}

function statusText(status: KubeStatus, version: number): Buffer | undefined {
  if (version >= 4)
    return Buffer.from(
      JSON.stringify({
        metadata: {},
        status: status.status,
        ...(status.message ? { message: status.message } : {}),
        ...(status.reason ? { reason: status.reason } : {}),
        ...(status.details ? { details: status.details } : {}),
        ...(status.code ? { code: status.code } : {}),
      }),
    );
  return status.status === "Success" ? undefined : Buffer.from(status.message ?? "error");
}

function websocketExecIO(channels: ChannelSocket, request: ExecRequest): ExecIO {
  const version = protocolVersion(channels.protocol);
  let stdinEnd: (() => void) | undefined;
  channels.onCloseSignal((channel) => {
    if (channel === 0) stdinEnd?.();
  });
  return {
    version,
    onStdin: (listener) => channels.onChannel(0, listener),
    onStdinEnd: (listener) => {
      stdinEnd = listener;
    },
    onResize: (listener) =>
      channels.onChannel(4, (data) => {
        try {
          listener(JSON.parse(data.toString("utf8")) as { Width?: number; Height?: number });
        } catch {
          // A malformed resize message changes nothing.
        }
      }),
    stdout: request.stdout ? (data) => channels.send(1, data) : undefined,
    stderr:
      request.stderr && !request.tty
        ? (data) => channels.send(2, data)
        : request.tty
          ? (data) => channels.send(1, data)
          : undefined,
    async finish(status) {
      const text = statusText(status, version);
      if (text) await channels.send(3, text);
      channels.close();
    },
    onGone: (listener) => channels.onGone(listener),
  };
}

function spdyExec(
  context: StreamingContext,
  pod: KubeObject,
  request: ExecRequest,
  attach: boolean,
  version: number,
  session: SpdySession,
): (stream: SpdyStream) => void {
  const streams = new Map<string, SpdyStream>();
  const expected = new Set(["error"]);
  if (request.stdin) expected.add("stdin");
  if (request.stdout) expected.add("stdout");
  if (request.stderr && !request.tty) expected.add("stderr");
  if (request.tty && version >= 3) expected.add("resize");
  let started = false;
  const timer = setTimeout(() => {
    if (!started) session.close();
  }, 30_000);
  timer.unref();
  return (stream) => {
    streams.set(stream.headers.streamtype ?? "", stream);
    if (started || ![...expected].every((type) => streams.has(type))) return;
    started = true;
    clearTimeout(timer);
    const goneListeners: (() => void)[] = [];
    session.onClose(() => {
      for (const listener of goneListeners) listener();
    });
    const stdin = streams.get("stdin");
    const stdout = streams.get("stdout");
    const stderr = streams.get("stderr");
    const error = streams.get("error")!;
    const io: ExecIO = {
      version,
      ...(stdin
        ? { onStdin: (listener) => stdin.onData(listener), onStdinEnd: (listener) => stdin.onEnd(listener) }
        : {}),
      ...(streams.get("resize")
        ? {
            onResize: (listener) => {
              let pending = "";
              streams.get("resize")!.onData((data) => {
                pending += data.toString("utf8");
                let at = pending.indexOf("}");
                while (at >= 0) {
                  try {
                    listener(JSON.parse(pending.slice(0, at + 1)) as { Width?: number; Height?: number });
                  } catch {
                    // Ignore a malformed size.
                  }
                  pending = pending.slice(at + 1);
                  at = pending.indexOf("}");
                }
              });
            },
          }
        : {}),
      ...(stdout ? { stdout: (data: Uint8Array) => stdout.write(data) } : {}),
      ...(stderr
        ? { stderr: (data: Uint8Array) => stderr.write(data) }
        : request.tty && stdout
          ? { stderr: (data: Uint8Array) => stdout.write(data) }
          : {}),
      async finish(status) {
        const text = statusText(status, version);
        if (text) await error.write(text);
        await Promise.all([error.end(), stdout?.end(), stderr?.end()]);
        await session.goAway();
      },
      onGone: (listener) => goneListeners.push(listener),
    };
    const runtime = context.kubelet.runtime(pod.metadata.namespace ?? "default", pod.metadata.name ?? "");
    if (!runtime) {
      void io.finish({
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "pod is gone",
      });
      return;
    }
    void (attach ? runAttach(runtime, request, io) : runExec(context.backend, pod, runtime, request, io));
  };
}
