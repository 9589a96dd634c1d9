/**
 * Kubernetes' WebSocket channel protocols (k8s.io/apimachinery wsstream): every message carries one
 * channel — a leading byte in `*.channel.k8s.io`, a leading ASCII digit and base64 data in
 * `*.base64.channel.k8s.io`. Exec uses channels 0 stdin, 1 stdout, 2 stderr, 3 status/error, 4 resize;
 * `v5.channel.k8s.io` adds the close signal `[255, channel]` (the client closes stdin without closing
 * the connection). Port-forward uses 2n (data) and 2n+1 (error) for the n-th requested port, each
 * channel's first message carrying the port number (uint16, little endian).
 */
import type { WebSocket } from "ws";

/** Exec and attach subprotocols, most preferred first. */
export const EXEC_PROTOCOLS: readonly string[] = [
  "v5.channel.k8s.io",
  "v4.channel.k8s.io",
  "v3.channel.k8s.io",
  "v2.channel.k8s.io",
  "channel.k8s.io",
  "v4.base64.channel.k8s.io",
  "v3.base64.channel.k8s.io",
  "v2.base64.channel.k8s.io",
  "base64.channel.k8s.io",
];

/** Port-forward subprotocols over WebSocket: kubectl's SPDY tunnel first, then the channel protocol. */
export const PORT_FORWARD_PROTOCOLS: readonly string[] = [
  "SPDY/3.1+portforward.k8s.io",
  "v4.channel.k8s.io",
  "v4.base64.channel.k8s.io",
  "channel.k8s.io",
  "base64.channel.k8s.io",
];

/** The close-signal marker of `v5.channel.k8s.io`. */
const CLOSE_SIGNAL = 255;
/** Above this many queued bytes a sender waits for the socket to drain. */
const HIGH_WATER = 4 * 1024 * 1024;

/** Chooses the server's protocol among those the client offered (the client's order wins among ours). */
export function chooseProtocol(offered: ReadonlySet<string>, supported: readonly string[]): string | false {
  for (const protocol of offered) if (supported.includes(protocol)) return protocol;
  return false;
}

/** The protocol's version number (`v4.channel.k8s.io` → 4, `channel.k8s.io` → 1). */
export function protocolVersion(protocol: string): number {
  const m = /^v(\d+)\./.exec(protocol);
  return m ? Number(m[1]) : 1;
}

/** One WebSocket speaking a channel protocol. */
export class ChannelSocket {
  private readonly base64: boolean;
  private readonly listeners = new Map<number, (data: Buffer) => void>();
  private readonly early = new Map<number, Buffer[]>();
  private closeSignalListener: ((channel: number) => void) | undefined;
  private readonly goneListeners = new Set<() => void>();
  private gone = false;

  constructor(readonly ws: WebSocket) {
    this.base64 = ws.protocol.includes("base64");
    ws.on("message", (data, isBinary) => {
      const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
      let channel: number;
      let payload: Buffer;
      if (this.base64 && !isBinary) {
        const text = bytes.toString("latin1");
        channel = Number(text[0]);
        payload = Buffer.from(text.slice(1), "base64");
      } else {
        if (bytes.length === 0) return;
        channel = bytes[0]!;
        payload = bytes.subarray(1);
      }
      if (channel === CLOSE_SIGNAL && this.ws.protocol === "v5.channel.k8s.io") {
        this.closeSignalListener?.(payload[0] ?? 0);
        return;
      }
      const listener = this.listeners.get(channel);
      if (listener) listener(payload);
      else this.early.set(channel, [...(this.early.get(channel) ?? []), payload]);
    });
    const end = () => {
      if (this.gone) return;
      this.gone = true;
      for (const listener of this.goneListeners) listener();
    };
    ws.on("close", end);
    ws.on("error", end);
  }

  /** The negotiated protocol. */
  get protocol(): string {
    return this.ws.protocol;
  }

  /** Whether the client went away. */
  get closed(): boolean {
    return this.gone;
  }

  /** Receives a channel's data (messages that came before are delivered first). */
  onChannel(channel: number, listener: (data: Buffer) => void): void {
    this.listeners.set(channel, listener);
    for (const data of this.early.get(channel) ?? []) listener(data);
    this.early.delete(channel);
  }

  /** The v5 close signal for a channel. */
  onCloseSignal(listener: (channel: number) => void): void {
    this.closeSignalListener = listener;
  }

  /** Called once when the connection ends. */
  onGone(listener: () => void): void {
    if (this.gone) listener();
    else this.goneListeners.add(listener);
  }

  /** Sends data on a channel; waits while the socket is congested. */
  async send(channel: number, data: Uint8Array): Promise<void> {
    if (this.gone) return;
    const message = this.base64
      ? `${channel}${Buffer.from(data).toString("base64")}`
      : Buffer.concat([Buffer.from([channel]), Buffer.from(data)]);
    await new Promise<void>((resolve) => {
      this.ws.send(message, { binary: !this.base64 }, () => resolve());
      if (this.ws.bufferedAmount < HIGH_WATER) resolve();
    });
  }

  /** Closes the connection normally. */
  close(code = 1000, reason = ""): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.close(code, reason);
  }
}
