import { NotSupportedError, type PortInfo, SandboxError } from "@sbox/core/spec";
import type { FlyHttp } from "./fly-http.js";
import { publishedPorts } from "./fly-machine-config.js";
import { getMachine } from "./fly-machines-api.js";
import { FLY_PROVIDER_NAME } from "./fly-names.js";
import type { ResolvedFlyOptions } from "./fly-options.js";

/** Ports through the Fly Proxy: only ports declared at create (they are the machine's services). */
export interface FlyPorts {
  expose(id: string, port: number, isPrivate: boolean, signal: AbortSignal): Promise<PortInfo>;
  list(id: string, signal: AbortSignal): Promise<PortInfo[]>;
}

/** Builds the port methods (previewModel `declaredPorts`). */
export function flyPorts(http: FlyHttp, options: ResolvedFlyOptions): FlyPorts {
  const infoOf = (machineId: string, port: number): PortInfo => ({
    port,
    url: options.previewUrl({ app: http.app(), machineId, port }),
  });
  return {
    async expose(id, port, isPrivate, signal) {
      if (isPrivate) {
        throw new NotSupportedError(
          "privatePreview",
          FLY_PROVIDER_NAME,
          "the Fly Proxy has no per-port access token; keep the port public or use Flycast",
        );
      }
      const machine = await getMachine(http, id, signal);
      const published = publishedPorts(machine.config);
      if (!published.includes(port)) {
        throw new SandboxError(
          "Validation",
          `port ${port} is not published by machine ${id}: the Fly Proxy only routes ports declared at create (create the sandbox with { ports: [${port}] }); published: ${published.length > 0 ? published.join(", ") : "none"}`,
        );
      }
      return infoOf(id, port);
    },
    async list(id, signal) {
      const machine = await getMachine(http, id, signal);
      return publishedPorts(machine.config).map((port) => infoOf(id, port));
    },
  };
}
