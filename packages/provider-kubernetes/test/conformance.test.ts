/**
 * The conformance kit against the provider through the Kubernetes emulator (pods are containers of the
 * local Docker Engine, from the busybox image, so the core's emulations need no GNU tools): once as
 * declared, once primitives-only (every emulatable driver method hidden, so the core's emulations run over
 * Kubernetes exec). The egress cases run on the Debian image (python3 as the HTTP client). The kit's
 * `secrets.*` and `deadline.*` cases run through the emulator's fault hook, with the emulator's bearer token
 * as the planted credential. Afterwards the emulator lists no pod of this run, and the backend keeps no
 * container.
 */
import { runConformance } from "@sbox/conformance/vitest";
import { kitFaultHook } from "@sbox/emulators";
import { afterAll, describe, expect, test } from "vitest";
import {
  DEBIAN_IMAGE,
  ENGINE,
  hasImage,
  SKIP_NOTE,
  startTestEmulator,
  TEST_IMAGE,
  testProvider,
} from "./kubernetes-test-env.js";

const EGRESS_CASES = ["network.egress.block-all", "network.egress.at-create", "network.egress.allow-list"];
const WGET_CRASH = `busybox 1.35 wget segfaults with -T (the kit's HTTP client); run on ${DEBIAN_IMAGE} below`;

/** The deadline the provider is made with; the deadline case holds every call to it. */
const DEADLINE_MS = 5_000;

const emulator = ENGINE.ok ? await startTestEmulator() : undefined;

if (emulator) {
  const exclude = Object.fromEntries(EGRESS_CASES.map((id) => [id, WGET_CRASH]));
  const provider = () => testProvider(emulator, { image: TEST_IMAGE, requestTimeoutMs: DEADLINE_MS });
  const providerWithOptions = (extra: Record<string, unknown>) =>
    testProvider(emulator, { image: TEST_IMAGE, requestTimeoutMs: DEADLINE_MS, ...extra });
  // The emulator's bearer token is a fake credential: the secrets cases check it never leaks.
  const remote = {
    faults: kitFaultHook(emulator.faults),
    deadlineMs: DEADLINE_MS,
    plantedCredential: emulator.token,
  };
  const busybox = { provider, providerWithOptions, remote, exclude, label: "kubernetes (emulator, busybox)" };
  runConformance(busybox);
  runConformance({ ...busybox, primitivesOnly: true });
  const nodePorts = () => testProvider(emulator, { image: TEST_IMAGE, ports: { service: "NodePort" } });
  runConformance({ provider: nodePorts, only: ["ports"], label: "kubernetes (emulator, NodePort services)" });
  if (hasImage(DEBIAN_IMAGE)) {
    const debian = () => testProvider(emulator, { image: DEBIAN_IMAGE });
    runConformance({ provider: debian, only: EGRESS_CASES, label: "kubernetes (emulator, debian, egress)" });
    runConformance({
      provider: debian,
      only: EGRESS_CASES,
      primitivesOnly: true,
      label: "kubernetes (emulator, debian, egress)",
    });
  } else if (process.env.CI)
    throw new Error(`CI is set but ${DEBIAN_IMAGE} is missing (scripts/build-debian-image.sh builds it)`);
}

describe.skipIf(!emulator)(`kubernetes conformance cleanup${SKIP_NOTE}`, () => {
  afterAll(async () => {
    await emulator?.close();
  });
  test("no pod of this run is left on the emulator, and no container on the backend", async () => {
    expect(emulator?.podNames().filter((name) => name.startsWith("default/sbox-"))).toEqual([]);
    await emulator?.close();
    expect(emulator?.machines).toBe(0);
  });
});
