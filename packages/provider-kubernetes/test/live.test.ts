/**
 * The conformance kit against a real cluster. Runs only when KUBECONFIG points at one (its current context
 * and namespace, or SBOX_K8S_NAMESPACE); without it the suite is reported as skipped, with the variable
 * named — it never falls back to the emulator. Sandboxes run SBOX_K8S_IMAGE (default busybox:stable) and
 * carry this run's label; the kit destroys them and checks at the end that none is left. The egress cases
 * need a network plugin that enforces NetworkPolicies, and an image with python3 (SBOX_K8S_EGRESS_IMAGE).
 */
import { existsSync } from "node:fs";
import { runConformance } from "@sbox/conformance/vitest";
import { describe, test } from "vitest";
import { kubernetes } from "../src/index.js";
import { RUN_ID, RUN_LABEL } from "./kubernetes-test-env.js";

const kubeconfig = process.env.KUBECONFIG;
const live = Boolean(kubeconfig?.split(":").some((path) => existsSync(path)));

describe.skipIf(!live)("kubernetes live conformance (needs KUBECONFIG pointing at a cluster)", () => {
  if (!live) {
    test("runs the conformance kit against a real cluster", () => {});
    return;
  }
  const namespace = process.env.SBOX_K8S_NAMESPACE;
  const image = process.env.SBOX_K8S_IMAGE ?? "busybox:stable";
  const egressImage = process.env.SBOX_K8S_EGRESS_IMAGE;
  const egress = ["network.egress.block-all", "network.egress.at-create", "network.egress.allow-list"];
  const provider = () =>
    kubernetes({ image, labels: { [RUN_LABEL]: RUN_ID }, ...(namespace ? { namespace } : {}) });
  runConformance({
    provider,
    timeoutMs: 180_000,
    label: "kubernetes (live)",
    exclude: Object.fromEntries(
      egress.map((id) => [
        id,
        egressImage
          ? "run with SBOX_K8S_EGRESS_IMAGE below"
          : "set SBOX_K8S_EGRESS_IMAGE to an image with python3",
      ]),
    ),
  });
  if (egressImage) {
    runConformance({
      provider: () =>
        kubernetes({
          image: egressImage,
          labels: { [RUN_LABEL]: RUN_ID },
          ...(namespace ? { namespace } : {}),
        }),
      only: egress,
      timeoutMs: 180_000,
      label: "kubernetes (live, egress)",
    });
  }
});
