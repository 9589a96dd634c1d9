/**
 * The conformance kit against the local provider in four set-ups: with bubblewrap and without isolation,
 * each as declared and primitives-only (every emulatable driver method hidden, so the core's emulations run
 * on real host processes). No case is excluded. `SBOX_CONFORMANCE_ONLY=files,exec` narrows a local run.
 *
 * The kit's egress cases need a server on this machine that a sandbox can reach with egress allowed. A
 * sandbox reaches nothing of the host unless the host's loopback is opened explicitly, which these runs do
 * (`network.hostLoopback`); the default, closed, is what test/local-isolation.test.ts attacks.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runConformance } from "@sbox/conformance/vitest";
import { afterAll } from "vitest";
import { local } from "../src/index.js";

// One state root for every set-up; each conformance run checks that it leaves no sandbox behind.
const root = mkdtempSync(join(tmpdir(), "sbox-local-conformance-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const only = process.env.SBOX_CONFORMANCE_ONLY?.split(",").filter(Boolean);

for (const isolation of ["bwrap", "none"] as const) {
  for (const primitivesOnly of [false, true]) {
    runConformance({
      provider: () => local({ root: join(root, isolation), isolation, network: { hostLoopback: true } }),
      providerWithOptions: (extra) =>
        local({ root: join(root, isolation), isolation, network: { hostLoopback: true }, ...extra }),
      primitivesOnly,
      label: `local (${isolation})`,
      ...(only ? { only } : {}),
    });
  }
}
