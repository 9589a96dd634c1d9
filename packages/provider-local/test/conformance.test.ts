/**
 * The conformance kit against the local provider in four set-ups: with bubblewrap and without isolation,
 * each as declared and primitives-only (every emulatable driver method hidden, so the core's emulations run
 * on real host processes). One case is excluded, in the primitives-only runs on a host where the provider
 * makes no cgroups (unprivileged; see PRIMITIVES_ONLY_EXCLUDES). `SBOX_CONFORMANCE_ONLY=files,exec` narrows a local run.
 *
 * The kit's egress cases need a server on this machine that a sandbox can reach with egress allowed. A
 * sandbox reaches nothing of the host unless the host's loopback is opened explicitly, which these runs do
 * (`network.hostLoopback`); the default, closed, is what test/local-escapes.test.ts attacks. Where no
 * user-mode network stack is usable (an unprivileged user without access to /dev/net/tun), allow-all is
 * refused unless the host's network is accepted explicitly, which these runs do (`network.hostNetwork`), so
 * the egress and port cases still run there.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runConformance } from "@sbox/conformance/vitest";
import { afterAll } from "vitest";
import { local } from "../src/index.js";
import { cgroupSupport } from "../src/local-cgroups.js";
import { removeTestDir } from "./helpers.js";

// One state root for every set-up; each conformance run checks that it leaves no sandbox behind.
const root = mkdtempSync(join(tmpdir(), "sbox-local-conformance-"));
afterAll(() => removeTestDir(root));

/**
 * What the core's emulations cannot measure on a local sandbox without a cgroup. With one, the sandbox sees
 * its own cgroup read-only at /sys/fs/cgroup and the core's metrics emulation (E8) reads it. Without one
 * (a host where the provider makes no cgroups, as an unprivileged user) E8 falls back to /proc/meminfo,
 * which is the whole host's: other programs on the machine move it by more than the 64 MiB the case holds.
 */
const PRIMITIVES_ONLY_EXCLUDES: Readonly<Record<string, string>> =
  cgroupSupport().kind === "none"
    ? {
        "metrics.tracks-load":
          "no cgroup on this host: the emulated metrics read the host's /proc/meminfo, which the host's other programs move by more than the case's 64 MiB",
      }
    : {};

const only = process.env.SBOX_CONFORMANCE_ONLY?.split(",").filter(Boolean);

for (const isolation of ["bwrap", "none"] as const) {
  for (const primitivesOnly of [false, true]) {
    runConformance({
      provider: () =>
        local({ root: join(root, isolation), isolation, network: { hostLoopback: true, hostNetwork: true } }),
      providerWithOptions: (extra) =>
        local({
          root: join(root, isolation),
          isolation,
          network: { hostLoopback: true, hostNetwork: true },
          ...extra,
        }),
      primitivesOnly,
      ...(primitivesOnly ? { exclude: PRIMITIVES_ONLY_EXCLUDES } : {}),
      label: `local (${isolation})`,
      ...(only ? { only } : {}),
    });
  }
}
