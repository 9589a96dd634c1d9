/**
 * The conformance kit's fault-injection hook (`RemoteUnderTest.faults` of `@sbox/conformance`) over an
 * emulator's {@link FaultInjector}, so the kit's `secrets.*` and `deadline.*` cases run against the
 * emulators as they do against any remote. The kit's fault kinds are restated here as a structural type:
 * this package does not depend on the kit.
 */
import type { FaultInjector } from "./http-server.js";

/** How the remote answers every request while the fault is in force (the kit's `RemoteFault`). */
export type KitRemoteFault =
  | { readonly kind: "none" }
  | { readonly kind: "stall" }
  | { readonly kind: "echo-credential" }
  | { readonly kind: "redirect"; readonly location: string; readonly status?: 301 | 302 | 303 | 307 | 308 };

/** The kit's `FaultInjection`. */
export interface KitFaultHook {
  /** Makes every request from now on, on every server of the emulator, follow `fault`. */
  set(fault: KitRemoteFault): void;
}

/**
 * The kit's hook over `faults`. Setting a fault replaces every rule in force (the kit owns the emulator's
 * faults while its cases run); `none` lifts them, which also ends the requests a stall holds.
 */
export function kitFaultHook(faults: FaultInjector): KitFaultHook {
  const everyRequest = () => true;
  return {
    set(fault) {
      faults.clear();
      switch (fault.kind) {
        case "none":
          return;
        case "stall":
          faults.add({ match: everyRequest, kind: "stall" });
          return;
        case "echo-credential":
          faults.add({
            match: everyRequest,
            kind: "respond",
            respond: (request) => {
              const text = `echo of the request: ${Object.entries(request.headers)
                .map(([name, value]) => `${name}: ${Array.isArray(value) ? value.join(", ") : (value ?? "")}`)
                .join("; ")}`;
              return {
                status: 400,
                headers: { Connection: "close" },
                body: { code: 400, message: text, error: text },
              };
            },
          });
          return;
        case "redirect":
          faults.add({
            match: everyRequest,
            kind: "respond",
            respond: (request) => ({
              status: fault.status ?? 307,
              headers: {
                Location: `${fault.location.replace(/\/+$/, "")}${request.url}`,
                Connection: "close",
              },
              body: "",
            }),
          });
          return;
      }
    },
  };
}
