/**
 * `pods/portforward`. Over SPDY (a raw upgraded connection, or tunnelled in WebSocket messages as kubectl
 * 1.31+ does), the client opens a pair of streams per connection — `streamType: error` and `streamType:
 * data`, sharing a `requestID`, naming the `port` — and the node connects to that port in the pod: bytes
 * flow on the data stream, and a failure to connect is written to the error stream in the kubelet's words
 * before both close. Over the WebSocket channel protocol (client-node's port-forward), the ports are in
 * the query, one connection each, opened at once.
 */
import type { EmulatorBackend } from "../backend.js";
import type { PodRuntime } from "./kubernetes-kubelet.js";
import { connectToPod } from "./kubernetes-pod-connection.js";
import { SPDY_RST, type SpdySession, type SpdyStream } from "./kubernetes-spdy.js";
import { badRequest } from "./kubernetes-status.js";
import type { ChannelSocket } from "./kubernetes-websocket-channels.js";

/** Ports of a port-forward request (`?ports=80,8080`, repeated or comma separated). */
export function requestedPorts(url: URL): number[] {
  const out: number[] = [];
  for (const value of url.searchParams.getAll("ports")) {
    for (const part of value.split(",")) {
      if (part.trim() === "") continue;
      const port = Number(part.trim());
      if (!Number.isInteger(port) || port < 1 || port > 65_535) throw badRequest(`invalid port: ${part}`);
      out.push(port);
    }
  }
  return out;
}

function refusal(runtime: PodRuntime, port: number, why: string): string {
  return `error forwarding port ${port} to pod ${runtime.uid}, uid : failed to connect to localhost:${port} inside namespace "${runtime.namespace}/${runtime.name}", IPv4: ${why}`;
}

/** Serves one SPDY port-forward session: each data stream becomes a connection into the pod. */
export function servePortForwardSpdy(
  backend: EmulatorBackend,
  runtime: PodRuntime,
  session: SpdySession,
): (stream: SpdyStream) => void {
  const errorStreams = new Map<string, SpdyStream>();
  const pendingData = new Map<string, SpdyStream>();
  const start = (requestId: string, data: SpdyStream, error: SpdyStream | undefined) => {
    const port = Number(data.headers.port);
    const sandbox = runtime.sandbox;
    if (!sandbox || !Number.isInteger(port) || port < 1 || port > 65_535) {
      void error
        ?.write(
          Buffer.from(refusal(runtime, port, sandbox ? "invalid port" : "the container is not running")),
        )
        .then(() => error.end());
      void data.abort(SPDY_RST.REFUSED_STREAM);
      return;
    }
    let writes: Promise<void> = Promise.resolve();
    const connection = connectToPod(backend, sandbox, port, (chunk) => {
      writes = writes.then(() => data.write(chunk));
    });
    data.onData((chunk) => void connection.write(chunk));
    data.onEnd(() => void connection.end());
    data.onClose(() => connection.close());
    session.onClose(() => connection.close());
    void connection.done.then(async (failure) => {
      await writes;
      if (failure) await error?.write(Buffer.from(refusal(runtime, port, failure)));
      await error?.end();
      await data.end();
      errorStreams.delete(requestId);
    });
  };
  return (stream) => {
    const type = stream.headers.streamtype;
    const requestId = stream.headers.requestid ?? stream.headers.port ?? String(stream.id);
    if (type === "error") {
      errorStreams.set(requestId, stream);
      const waiting = pendingData.get(requestId);
      if (waiting) {
        pendingData.delete(requestId);
        start(requestId, waiting, stream);
      }
      return;
    }
    if (type === "data") {
      const error = errorStreams.get(requestId);
      // Older clients open the data stream first; newer ones the error stream. Both orders work.
      if (error || !stream.headers.requestid) start(requestId, stream, error);
      else pendingData.set(requestId, stream);
      return;
    }
    void stream.abort(SPDY_RST.PROTOCOL_ERROR);
  };
}

/** Serves a channel-protocol port-forward: one connection per requested port, opened now. */
export function servePortForwardChannels(
  backend: EmulatorBackend,
  runtime: PodRuntime,
  socket: ChannelSocket,
  ports: readonly number[],
): void {
  const sandbox = runtime.sandbox;
  let open = ports.length;
  const closeOne = () => {
    open -= 1;
    if (open <= 0) socket.close();
  };
  ports.forEach((port, index) => {
    const data = index * 2;
    const error = data + 1;
    const prefix = Buffer.alloc(2);
    prefix.writeUInt16LE(port);
    void socket.send(data, prefix);
    void socket.send(error, prefix);
    if (!sandbox) {
      void socket
        .send(error, Buffer.from(refusal(runtime, port, "the container is not running")))
        .then(closeOne);
      return;
    }
    let writes: Promise<void> = Promise.resolve();
    const connection = connectToPod(backend, sandbox, port, (chunk) => {
      writes = writes.then(() => socket.send(data, chunk));
    });
    socket.onChannel(data, (chunk) => void connection.write(chunk));
    socket.onGone(() => connection.close());
    void connection.done.then(async (failure) => {
      await writes;
      if (failure) await socket.send(error, Buffer.from(refusal(runtime, port, failure)));
      closeOne();
    });
  });
}
