/**
 * `ports.expose` through port-forward: a listener on the host's loopback whose every connection opens a
 * port-forward WebSocket to the pod (`v4.channel.k8s.io`: data on channel 0, errors on channel 1, each
 * channel starting with the port number), so the URL reaches the port inside the pod wherever the cluster
 * is. Bytes flow both ways with backpressure; an error from the node (nothing listens there) ends that
 * connection. Listeners live in this process: they close with `unexpose`, `destroy` and `dispose`.
 */
import { createServer, type Server, type Socket } from "node:net";
import type { PortInfo } from "@sbox/core/spec";
import type WebSocket from "ws";
import type { KubernetesCluster } from "./kubernetes-cluster.js";
import { kubernetesError } from "./kubernetes-errors.js";
import type { PodTarget } from "./kubernetes-exec.js";

const PROTOCOL = "v4.channel.k8s.io";
const HIGH_WATER = 1024 * 1024;

interface Forward {
  readonly server: Server;
  readonly info: PortInfo;
  readonly sockets: Set<Socket>;
}

function pipe(socket: Socket, ws: WebSocket): void {
  let prefixes = 0;
  ws.on("message", (data: Buffer, isBinary) => {
    if (!isBinary || data.length === 0) return;
    const channel = data[0];
    let payload = data.subarray(1);
    // The first message of each channel is the port number.
    if (prefixes < 2 && payload.length >= 2 && (channel === 0 || channel === 1)) {
      prefixes += 1;
      payload = payload.subarray(2);
    }
    if (payload.length === 0) return;
    if (channel === 0) {
      if (!socket.write(payload)) {
        ws.pause();
        socket.once("drain", () => ws.resume());
      }
    } else if (channel === 1) socket.destroy();
  });
  socket.on("data", (chunk: Buffer) => {
    ws.send(Buffer.concat([Buffer.from([0]), chunk]), { binary: true });
    if (ws.bufferedAmount > HIGH_WATER) {
      socket.pause();
      const wait = () => (ws.bufferedAmount > HIGH_WATER ? setTimeout(wait, 5) : socket.resume());
      setTimeout(wait, 5);
    }
  });
  socket.on("end", () => ws.close(1000));
  socket.on("close", () => ws.terminate());
  socket.on("error", () => ws.terminate());
  ws.on("close", () => socket.end());
  ws.on("error", () => socket.destroy());
}

/** The port-forward listeners of one provider instance. */
export class PortForwards {
  private readonly bySandbox = new Map<string, Map<number, Forward>>();

  constructor(private readonly cluster: KubernetesCluster) {}

  /** Exposes `port` of the sandbox's pod on `http://127.0.0.1:<local port>`. */
  async expose(sandbox: string, target: () => Promise<PodTarget>, port: number): Promise<PortInfo> {
    if (!Number.isInteger(port) || port < 1 || port > 65_535)
      throw kubernetesError("Validation", `invalid port ${String(port)}`);
    const known = this.bySandbox.get(sandbox)?.get(port);
    if (known) return { ...known.info };
    await target();
    const sockets = new Set<Socket>();
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.pause();
      target()
        .then((pod) =>
          this.cluster.websocket(
            `/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/pods/${encodeURIComponent(pod.pod)}/portforward?ports=${port}`,
            [PROTOCOL],
            AbortSignal.timeout(30_000),
            "port-forward",
          ),
        )
        .then(
          (ws) => {
            if (socket.destroyed) {
              ws.terminate();
              return;
            }
            pipe(socket, ws);
            socket.resume();
          },
          () => socket.destroy(),
        );
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    server.unref();
    const address = server.address();
    const local = typeof address === "object" && address ? address.port : 0;
    const info: PortInfo = { port, url: `http://127.0.0.1:${local}` };
    let ports = this.bySandbox.get(sandbox);
    if (!ports) {
      ports = new Map();
      this.bySandbox.set(sandbox, ports);
    }
    ports.set(port, { server, info, sockets });
    return { ...info };
  }

  /** The ports exposed by this process. */
  list(sandbox: string): PortInfo[] {
    return [...(this.bySandbox.get(sandbox)?.values() ?? [])].map((f) => ({ ...f.info }));
  }

  /** Stops exposing `port` (idempotent). */
  async unexpose(sandbox: string, port: number): Promise<void> {
    const forward = this.bySandbox.get(sandbox)?.get(port);
    if (!forward) return;
    this.bySandbox.get(sandbox)?.delete(port);
    for (const socket of forward.sockets) socket.destroy();
    await new Promise<void>((resolve) => forward.server.close(() => resolve()));
  }

  /** Closes every listener of a sandbox. */
  async closeSandbox(sandbox: string): Promise<void> {
    for (const port of [...(this.bySandbox.get(sandbox)?.keys() ?? [])]) await this.unexpose(sandbox, port);
    this.bySandbox.delete(sandbox);
  }

  /** Closes every listener. */
  async closeAll(): Promise<void> {
    for (const sandbox of [...this.bySandbox.keys()]) await this.closeSandbox(sandbox);
  }
}
