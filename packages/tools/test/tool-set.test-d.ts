import { type CapabilityMap, createSandboxClient, type Sandbox, type SandboxProvider } from "@sbox/core";
import { local } from "@sbox/provider-local";
import { describe, expectTypeOf, it } from "vitest";
import { createAiSdkTools } from "../src/ai-sdk/index.js";
import { createSandboxTools, type SandboxTool } from "../src/index.js";

type Without<C extends keyof CapabilityMap> = {
  readonly [K in keyof CapabilityMap]: K extends C ? "unsupported" : "native";
};
type NoPorts = Without<"exposePort" | "codeInterpreter">;
type LocalSandbox = Sandbox<ReturnType<typeof local>["capabilities"]>;

declare const noPorts: Sandbox<NoPorts>;
declare const localSandbox: LocalSandbox;
declare const unknownSandbox: Sandbox;

describe("the tool set's type follows the capabilities and the policy", () => {
  it("a provider without exposePort yields a tool set without the port tool", () => {
    const tools = createSandboxTools(noPorts);
    expectTypeOf(tools).not.toHaveProperty("expose_port");
    expectTypeOf(tools).not.toHaveProperty("run_code");
    expectTypeOf(tools.run_command).toEqualTypeOf<SandboxTool<"run_command">>();
    expectTypeOf(tools.create_snapshot).toEqualTypeOf<SandboxTool<"create_snapshot">>();
    const ai = createAiSdkTools(noPorts);
    expectTypeOf(ai).not.toHaveProperty("expose_port");
    expectTypeOf(ai).toHaveProperty("read_file");
  });

  it("through a client: a provider declaring exposePort unsupported gives a sandbox whose tools have no expose_port", async () => {
    const provider = null as unknown as SandboxProvider<NoPorts>;
    const sandbox = await createSandboxClient({ provider }).create();
    const tools = createSandboxTools(sandbox);
    expectTypeOf(tools).not.toHaveProperty("expose_port");
    expectTypeOf(tools).toHaveProperty("run_command");
  });

  it("provider-local without isolation has no egress control, so no set_egress even with destructive tools on", async () => {
    const unisolated = await createSandboxClient({ provider: local({ isolation: "none" }) }).create();
    expectTypeOf(createSandboxTools(unisolated, { policy: { destructive: true } })).not.toHaveProperty(
      "set_egress",
    );
    const isolated = await createSandboxClient({ provider: local({ isolation: "bwrap" }) }).create();
    expectTypeOf(createSandboxTools(isolated, { policy: { destructive: true } }).set_egress).toEqualTypeOf<
      SandboxTool<"set_egress">
    >();
  });

  it("provider-local has ports but no code interpreter", () => {
    const tools = createSandboxTools(localSandbox);
    expectTypeOf(tools).toHaveProperty("expose_port");
    expectTypeOf(tools.expose_port).toEqualTypeOf<SandboxTool<"expose_port">>();
    expectTypeOf(tools).not.toHaveProperty("run_code");
  });

  it("destructive tools are absent unless the policy enables them", () => {
    expectTypeOf(createSandboxTools(noPorts)).not.toHaveProperty("remove_file");
    expectTypeOf(createSandboxTools(noPorts, { policy: { destructive: true } }).remove_file).toEqualTypeOf<
      SandboxTool<"remove_file">
    >();
    const asked = createSandboxTools(noPorts, {
      policy: { tools: { stop_sandbox: "ask", write_file: "deny" } },
    });
    expectTypeOf(asked.stop_sandbox).toEqualTypeOf<SandboxTool<"stop_sandbox">>();
    expectTypeOf(asked).not.toHaveProperty("write_file");
    expectTypeOf(asked).not.toHaveProperty("remove_file");
  });

  it("a sandbox of an unknown provider has every gated tool as optional", () => {
    const tools = createSandboxTools(unknownSandbox);
    expectTypeOf(tools.expose_port).toEqualTypeOf<SandboxTool<"expose_port"> | undefined>();
    expectTypeOf(tools.read_file).toEqualTypeOf<SandboxTool<"read_file">>();
  });
});
