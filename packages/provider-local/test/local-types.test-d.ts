/**
 * Compile-time checks (run by `pnpm typecheck`): spec fields the local provider refuses do not
 * type-check, and what it can do does, method by method.
 */
import { createSandboxClient } from "@sbox/core";
import { local } from "../src/index.js";

export async function localTypes(): Promise<void> {
  const client = createSandboxClient({ provider: local() });
  const sandbox = await client.create({ name: "web", env: { A: "1" }, ttlMs: 60_000, ports: [8080] });
  await sandbox.ports.expose(8080);
  await sandbox.ports.unexpose(8080);
  await sandbox.ports.fetch(8080, "/");
  // @ts-expect-error template: the local provider has no images
  await client.create({ template: "python:3.12" });
  // @ts-expect-error volumes: unsupported by the local provider's capability map
  await client.create({ volumes: [{ name: "data", mountPath: "/data" }] });
  // @ts-expect-error resources: the local provider cannot enforce limits
  await client.create({ resources: { memoryMB: 512 } });
  const unisolated = createSandboxClient({ provider: local({ isolation: "none" }) });
  // @ts-expect-error without isolation there is no egress control: only allow-all
  await unisolated.create({ network: { egress: "block-all" } });
}
