/**
 * A TCP connection to a port inside a pod, as the kubelet's port-forward opens one in the pod's network
 * namespace: a relay process run in the pod's backend sandbox connects to `127.0.0.1:<port>` there and
 * carries the bytes over its stdin and stdout, byte-exact. The relay is whatever the image has — busybox
 * or netcat `nc`, else Python 3, else bash's `/dev/tcp` — so it works whatever the backend's network is
 * (a pod whose egress is blocked still has its loopback). A port nobody listens on ends the relay with
 * an error before any byte came back.
 */
import type { AnyCapabilities, Sandbox } from "@sbox/core";
import type { EmulatorBackend } from "../backend.js";
import { runInMachine } from "../machine-exec.js";

const PYTHON_RELAY = String.raw`
import os, socket, sys, threading
port = int(sys.argv[1])
s = None
for host in ("127.0.0.1", "::1"):
    try:
        s = socket.create_connection((host, port), timeout=10)
        break
    except OSError as e:
        err = e
if s is None:
    sys.stderr.write("connect to localhost:%d: %s\n" % (port, getattr(err, "strerror", None) or err)); sys.exit(1)
s.settimeout(None)
def up():
    while True:
        d = os.read(0, 65536)
        if not d:
            try: s.shutdown(socket.SHUT_WR)
            except OSError: pass
            return
        s.sendall(d)
threading.Thread(target=up, daemon=True).start()
while True:
    try: d = s.recv(65536)
    except OSError: break
    if not d: break
    v = memoryview(d)
    while v:
        n = os.write(1, v)
        v = v[n:]
`;

const RELAY_SCRIPT = `p="$1"
if command -v nc >/dev/null 2>&1; then exec nc 127.0.0.1 "$p"; fi
if command -v python3 >/dev/null 2>&1; then exec python3 -c "$2" "$p"; fi
if command -v bash >/dev/null 2>&1; then exec bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1; cat <&3 & cat >&3; wait' bash "$p"; fi
echo "the container has neither nc, python3 nor bash to reach port $p" >&2
exit 127`;

/** An open connection to a pod port. */
export interface PodConnection {
  /** Sends bytes to the port. */
  write(data: Uint8Array): Promise<void>;
  /** Half-closes the sending side. */
  end(): Promise<void>;
  /** Ends the connection at once. */
  close(): void;
  /**
   * Resolves when the connection is over: `undefined` after a normal end, or why it failed (nothing
   * listens, no relay in the image) when it failed before the port sent anything.
   */
  readonly done: Promise<string | undefined>;
}

/** Opens a connection to `port` in the pod sandbox; `onData` receives what the port sends. */
export function connectToPod(
  backend: EmulatorBackend,
  sandbox: Sandbox<AnyCapabilities>,
  port: number,
  onData: (chunk: Uint8Array) => void,
): PodConnection {
  const pipe = new TransformStream<Uint8Array, Uint8Array>();
  const writer = pipe.writable.getWriter();
  const abort = new AbortController();
  let received = false;
  let stderr = "";
  const done = runInMachine(backend, sandbox, {
    argv: ["sh", "-c", RELAY_SCRIPT, "sbox-port-forward", String(port), PYTHON_RELAY],
    stdin: pipe.readable,
    signal: abort.signal,
    onStdout: (chunk) => {
      received = true;
      onData(chunk);
    },
    onStderr: (chunk) => {
      if (stderr.length < 4096) stderr += Buffer.from(chunk).toString("utf8");
    },
  }).then(
    (exit) =>
      exit.exitCode !== 0 && !received
        ? stderr.trim() || `the relay to port ${port} exited with ${exit.exitCode}`
        : undefined,
    (error: unknown) =>
      abort.signal.aborted || received ? undefined : error instanceof Error ? error.message : String(error),
  );
  return {
    async write(data) {
      await writer.write(data).catch(() => undefined);
    },
    async end() {
      await writer.close().catch(() => undefined);
    },
    close() {
      abort.abort();
      void writer.abort().catch(() => undefined);
    },
    done,
  };
}
