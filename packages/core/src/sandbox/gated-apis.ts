import type { DriverSandbox, SnapshotRef } from "../spec/provider-spec.js";
import type { EgressPolicy } from "../spec/sandbox-spec.js";
import {
  callOptions,
  gatedMethod,
  guard,
  invalidInput,
  requireCapability,
  type SandboxContext,
} from "./sandbox-context.js";
import type {
  CodeApi,
  GatedNamespaces,
  NetworkApi,
  PortsApi,
  PtyApi,
  Sandbox,
  SnapshotsApi,
  SshApi,
} from "./sandbox-types.js";

function validatePort(port: unknown): number {
  if (!Number.isInteger(port) || (port as number) < 1 || (port as number) > 65535) {
    throw invalidInput("port must be an integer between 1 and 65535");
  }
  return port as number;
}

function validateSnapshotRef(ref: unknown): SnapshotRef {
  if (
    typeof ref !== "object" ||
    ref === null ||
    typeof (ref as SnapshotRef).id !== "string" ||
    !(ref as SnapshotRef).id
  ) {
    throw invalidInput("a snapshot reference needs an id");
  }
  return ref as SnapshotRef;
}

/** Validates an egress policy: allow-all, block-all, or `{ allow: [...] }` of hosts and CIDRs. */
export function validateEgressPolicy(policy: unknown): EgressPolicy {
  if (policy === "allow-all" || policy === "block-all") return policy;
  const allow = (policy as { allow?: unknown } | null)?.allow;
  if (Array.isArray(allow) && allow.every((h) => typeof h === "string" && /^[A-Za-z0-9.:/*_-]+$/.test(h))) {
    return { allow: allow as string[] };
  }
  throw invalidInput(
    'egress policy must be "allow-all", "block-all" or { allow: ["host", "10.0.0.0/8", ...] }',
  );
}

/**
 * Builds the gated namespaces of a sandbox: each is present only when its capability is native or
 * emulated, and `undefined` otherwise — at runtime exactly as in the type.
 */
export function createGatedApis(
  context: SandboxContext,
  wrapSandbox: (handle: DriverSandbox) => Sandbox,
): { [K in keyof GatedNamespaces]: GatedNamespaces[K] | undefined } {
  const { map } = context.runtime.capabilities;
  const { handle } = context;
  const { driver } = context.runtime;
  const on = (capability: keyof typeof map) => map[capability] !== "unsupported";

  const ports: PortsApi | undefined = on("exposePort")
    ? {
        expose: (port, options = {}) =>
          guard(context, "ports.expose", async () => {
            validatePort(port);
            const isPrivate = options.private ?? false;
            if (isPrivate) requireCapability(context, "privatePreview");
            return gatedMethod(context, "exposePort", "doExposePort")(handle, port, {
              ...callOptions(),
              private: isPrivate,
            });
          }),
        list: () =>
          guard(context, "ports.list", async () =>
            gatedMethod(context, "exposePort", "doListPorts", "ports.list")(handle, callOptions()),
          ),
        // Method by method, like the namespaces: there only when the provider can, in the type as here.
        unexpose: driver.doUnexposePort
          ? (port) =>
              guard(context, "ports.unexpose", async () =>
                gatedMethod(
                  context,
                  "exposePort",
                  "doUnexposePort",
                  "ports.unexpose",
                )(handle, validatePort(port), callOptions()),
              )
          : undefined,
        fetch: !on("proxiedFetch")
          ? undefined
          : (port, path, init) =>
              guard(context, "ports.fetch", async () => {
                requireCapability(context, "proxiedFetch");
                validatePort(port);
                if (typeof path !== "string" || !path.startsWith("/"))
                  throw invalidInput("path must start with /");
                const request = new Request(new URL(path, `http://sandbox:${port}`), init);
                return gatedMethod(context, "proxiedFetch", "doFetchPort")(handle, port, request);
              }),
      }
    : undefined;

  const snapshots: SnapshotsApi | undefined = on("snapshot")
    ? {
        create: (options = {}) =>
          guard(context, "snapshots.create", async () => {
            if (options.name !== undefined && (typeof options.name !== "string" || options.name === "")) {
              throw invalidInput("snapshot name must be a non-empty string");
            }
            return gatedMethod(
              context,
              "snapshot",
              "doCreateSnapshot",
            )(handle, {
              ...callOptions(),
              name: options.name,
            });
          }),
        restore: (ref) =>
          guard(context, "snapshots.restore", async () =>
            gatedMethod(context, "snapshot", "doRestoreSnapshot")(
              handle,
              validateSnapshotRef(ref),
              callOptions(),
            ),
          ),
        list: () =>
          guard(context, "snapshots.list", async () =>
            gatedMethod(context, "snapshot", "doListSnapshots")(handle, callOptions()),
          ),
        delete: (ref) =>
          guard(context, "snapshots.delete", async () =>
            gatedMethod(context, "snapshot", "doDeleteSnapshot")(
              handle,
              validateSnapshotRef(ref),
              callOptions(),
            ),
          ),
      }
    : undefined;

  const fork: GatedNamespaces["fork"] | undefined = on("fork")
    ? (options = {}) =>
        guard(context, "fork", async () => {
          const count = options.count ?? 1;
          if (!Number.isInteger(count) || count < 1 || count > 100)
            throw invalidInput("fork count must be an integer from 1 to 100");
          const handles = await gatedMethod(context, "fork", "doFork")(handle, { ...callOptions(), count });
          return handles.map(wrapSandbox);
        })
    : undefined;

  const network: NetworkApi | undefined = on("egressControl")
    ? {
        setEgress: (policy) =>
          guard(context, "network.setEgress", async () =>
            gatedMethod(context, "egressControl", "doSetEgress")(
              handle,
              validateEgressPolicy(policy),
              callOptions(),
            ),
          ),
      }
    : undefined;

  const pty: PtyApi | undefined = on("pty")
    ? {
        create: (options) =>
          guard(context, "pty.create", async () => {
            const { cols, rows } = options ?? {};
            if (
              !Number.isInteger(cols) ||
              !Number.isInteger(rows) ||
              cols < 1 ||
              rows < 1 ||
              cols > 1000 ||
              rows > 1000
            ) {
              throw invalidInput("pty cols and rows must be integers from 1 to 1000");
            }
            if (typeof options.onData !== "function") throw invalidInput("pty needs an onData callback");
            const terminal = await gatedMethod(
              context,
              "pty",
              "doCreatePty",
            )(handle, {
              ...callOptions(),
              cols,
              rows,
              cwd: options.cwd,
              env: options.env,
              command: options.command,
              onData: options.onData,
            });
            return {
              pid: terminal.pid,
              write: (data) => guard(context, "pty.write", () => terminal.write(data)),
              resize: (c, r) =>
                guard(context, "pty.resize", async () => {
                  if (!Number.isInteger(c) || !Number.isInteger(r) || c < 1 || r < 1) {
                    throw invalidInput("pty cols and rows must be positive integers");
                  }
                  await terminal.resize(c, r);
                }),
              kill: () => guard(context, "pty.kill", () => terminal.kill()),
              wait: () =>
                guard(context, "pty.wait", async () => {
                  const exit = await terminal.wait();
                  return { exitCode: exit.exitCode ?? 128 + 9, signal: exit.signal };
                }),
            };
          }),
      }
    : undefined;

  const code: CodeApi | undefined = on("codeInterpreter")
    ? {
        run: (source, options = {}) =>
          guard(context, "code.run", async () => {
            if (typeof source !== "string") throw invalidInput("code must be a string");
            if (options.context !== undefined) {
              requireCapability(
                context,
                "statefulKernel",
                "statefulKernel",
                "code contexts need a stateful kernel",
              );
            }
            return gatedMethod(context, "codeInterpreter", "doRunCode")(handle, source, {
              ...callOptions(),
              language: options.language,
              context: options.context,
            });
          }),
      }
    : undefined;

  const ssh: SshApi | undefined = on("ssh")
    ? {
        access: () =>
          guard(context, "ssh.access", async () =>
            gatedMethod(context, "ssh", "doGetSshAccess")(handle, callOptions()),
          ),
      }
    : undefined;

  return { ports, snapshots, fork, network, pty, code, ssh };
}
