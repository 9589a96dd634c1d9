/**
 * The conformance kit against a real Docker Engine and the busybox image (which proves the core's
 * emulations need no GNU tools): once as declared, once primitives-only (every emulatable driver method
 * hidden, so the emulations run on Docker).
 */
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

const exclude = {
  // Docker cannot unpublish a port of a running container, so the provider has no unexpose (optional in
  // the spec) and the case's unexpose step cannot pass; publishing and the URL are covered by
  // test/docker-lifecycle.test.ts.
  "ports.expose.http": "Docker cannot unpublish a port of a running container (no doUnexposePort)",
};

if (ENGINE.ok) {
  ensureTestImage();
  const provider = () => docker({ image: TEST_IMAGE, labels: { [RUN_LABEL]: RUN_ID } });
  runConformance({ provider, exclude, fixtures: { volume: VOLUME } });
  runConformance({ provider, exclude, fixtures: { volume: VOLUME }, primitivesOnly: true });
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
