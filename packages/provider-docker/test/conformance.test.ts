/**
 * The conformance kit against a real Docker Engine and the busybox image (which proves the core's
 * emulations need no GNU tools): once as declared, once primitives-only (every emulatable driver method
 * hidden, so the emulations run on Docker). The egress cases fetch from the host with the sandbox's HTTP
 * client, and busybox 1.35's wget crashes when given a timeout: they run on the Debian image instead
 * (python3), in both modes.
 */
import { spawnSync } from "node:child_process";
import { runConformance } from "@sbox/conformance/vitest";
import { afterAll, describe, expect, test } from "vitest";
import { docker } from "../src/index.js";
import {
  ENGINE,
  ensureTestImage,
  RUN_ID,
  RUN_LABEL,
  rawDocker,
  removeLeftovers,
  SKIP_NOTE,
  TEST_IMAGE,
} from "./docker-test-env.js";

const VOLUME = `sbox-conformance-${RUN_ID}`;
const EGRESS_IMAGE = process.env.SBOX_DOCKER_EGRESS_IMAGE ?? "sbox-debian:bookworm";
const EGRESS_CASES = ["network.egress.block-all", "network.egress.at-create", "network.egress.allow-list"];
const WGET_CRASH = `busybox 1.35 wget segfaults with -T (the kit's HTTP client); run on ${EGRESS_IMAGE} below`;

const exclude: Record<string, string> = Object.fromEntries(EGRESS_CASES.map((id) => [id, WGET_CRASH]));

function hasImage(image: string): boolean {
  return spawnSync("docker", ["image", "inspect", image], { stdio: "ignore", timeout: 15_000 }).status === 0;
}

const egressImage = ENGINE.ok && hasImage(EGRESS_IMAGE);
if (ENGINE.ok && !egressImage) {
  const message = `${EGRESS_IMAGE} is missing (scripts/build-debian-image.sh builds it): egress conformance cases not run`;
  if (process.env.CI) throw new Error(`CI is set but ${message}`);
  console.warn(`[provider-docker] SKIPPING: ${message}`);
}

if (ENGINE.ok) {
  ensureTestImage();
  const labels = { [RUN_LABEL]: RUN_ID };
  const provider = () => docker({ image: TEST_IMAGE, labels });
  const providerWithOptions = (extra: Record<string, unknown>) =>
    docker({ image: TEST_IMAGE, labels, ...extra });
  runConformance({
    provider,
    providerWithOptions,
    exclude,
    fixtures: { volume: VOLUME },
    label: "docker (busybox)",
  });
  runConformance({
    provider,
    providerWithOptions,
    exclude,
    fixtures: { volume: VOLUME },
    primitivesOnly: true,
    label: "docker (busybox)",
  });
  if (egressImage) {
    const debian = () => docker({ image: EGRESS_IMAGE, labels });
    runConformance({ provider: debian, only: EGRESS_CASES, label: "docker (debian, egress)" });
    runConformance({
      provider: debian,
      only: EGRESS_CASES,
      primitivesOnly: true,
      label: "docker (debian, egress)",
    });
  }
}

describe.skipIf(!ENGINE.ok)(`docker conformance cleanup${SKIP_NOTE}`, () => {
  afterAll(async () => {
    await rawDocker()
      .getVolume(VOLUME)
      .remove()
      .catch(() => undefined);
  });
  test("no container of this run is left", async () => {
    expect(await removeLeftovers()).toBe(0);
  });
});
