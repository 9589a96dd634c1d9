/**
 * Compile-time checks (run by `pnpm typecheck`): what Docker cannot do does not type-check, method by
 * method and spec field by spec field, as its provider type and capability map say.
 */
import { createSandboxClient } from "@sbox/core";
import { docker } from "../src/index.js";

export async function dockerTypes(): Promise<void> {
  const client = createSandboxClient({ provider: docker({ image: "sbox-busybox:latest" }) });
  const sandbox = await client.create({ template: "sbox-busybox:latest", ports: [8080], volumes: [] });
  await sandbox.ports.expose(8080);
  await sandbox.ports.list();
  // @ts-expect-error Docker cannot unpublish a running container's port: no ports.unexpose
  await sandbox.ports.unexpose(8080);
  // @ts-expect-error proxiedFetch is unsupported on Docker: no ports.fetch
  await sandbox.ports.fetch(8080, "/");
  // @ts-expect-error region is unsupported on Docker
  await client.create({ region: "fra" });
  // @ts-expect-error resources.diskMB is not honoured by Docker
  await client.create({ resources: { diskMB: 100 } });
}
