import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { ConformanceOptions } from "@sbox/conformance";
import type { SandboxProvider } from "@sbox/core/spec";

/** A provider module as imported: its named exports. */
export type ProviderModule = Record<string, unknown>;

/** One way to run the kit against one provider package. */
export interface ConformanceTarget {
  /** Column name in the matrix, e.g. `"local (bwrap)"`. */
  id: string;
  /** The workspace package that provides it. */
  packageName: string;
  /** Environment variables a live provider needs; the target is skipped, naming them, when one is unset. */
  env?: readonly string[] | undefined;
  /** Returns why the target cannot run here, or undefined when it can. */
  precondition?: ((repoRoot: string) => string | undefined) | undefined;
  /**
   * Builds the provider factory from the imported module; `tempDir` is removed after the run. The factory
   * takes further options on top of the target's own (the kit checks that an unknown one is refused).
   */
  factory(module: ProviderModule, tempDir: string): (extra?: Record<string, unknown>) => SandboxProvider;
  /** Modes to run (default both). */
  modes?: readonly ("declared" | "primitives-only")[] | undefined;
  /** Further kit options (exclusions with reasons, fixtures). */
  options?: Partial<Omit<ConformanceOptions, "provider" | "primitivesOnly">> | undefined;
  /** Removes what the runs left on purpose (e.g. the fixture volume), after all modes ran. */
  cleanup?: (() => void) | undefined;
}

function exported<T>(module: ProviderModule, name: string): T {
  const value = module[name];
  if (typeof value !== "function") throw new Error(`the module does not export a function ${name}`);
  return value as T;
}

function bwrapWorks(): string | undefined {
  const result = spawnSync("bwrap", ["--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"], {
    stdio: "ignore",
    timeout: 10_000,
  });
  if (result.error) return `bubblewrap is not installed (${result.error.message})`;
  return result.status === 0 ? undefined : `bubblewrap does not work here (exit ${result.status})`;
}

const DOCKER_IMAGE = process.env.SBOX_DOCKER_TEST_IMAGE ?? "sbox-busybox:latest";
/** A volume the volumes case may mount; Docker creates it on first use, the target's cleanup removes it. */
const DOCKER_VOLUME = `sbox-conformance-matrix-${process.pid}`;

function dockerReady(repoRoot: string): string | undefined {
  const info = spawnSync("docker", ["info", "--format", "{{.ServerVersion}}"], {
    encoding: "utf8",
    timeout: 15_000,
  });
  if (info.error) return `no docker client (${info.error.message})`;
  if (info.status !== 0)
    return `no Docker Engine answers (${info.stderr.trim().split("\n")[0] ?? ""}); start one with scripts/start-dockerd.sh`;
  const image = spawnSync("docker", ["image", "inspect", DOCKER_IMAGE], { stdio: "ignore", timeout: 15_000 });
  if (image.status === 0) return undefined;
  const script = join(repoRoot, "scripts", "build-busybox-image.sh");
  if (!existsSync(script))
    return `image ${DOCKER_IMAGE} is missing and scripts/build-busybox-image.sh is absent`;
  const build = spawnSync("bash", [script, DOCKER_IMAGE], { stdio: "inherit", timeout: 180_000 });
  return build.status === 0 ? undefined : `building ${DOCKER_IMAGE} failed (exit ${build.status})`;
}

/**
 * Every target the matrix knows. A target whose package is absent from the workspace is left out; one
 * whose precondition fails (no engine, no credentials) is reported as skipped with the reason.
 */
export const CONFORMANCE_TARGETS: readonly ConformanceTarget[] = [
  {
    id: "minimal-sh (example)",
    packageName: "@sbox/example-minimal-sh-provider",
    factory: (module, tempDir) => {
      const make = exported<(options: Record<string, unknown>) => SandboxProvider>(
        module,
        "minimalShProvider",
      );
      return (extra = {}) => make({ root: tempDir, ...extra });
    },
  },
  {
    id: "local (bwrap)",
    packageName: "@sbox/provider-local",
    precondition: () => bwrapWorks(),
    factory: (module, tempDir) => {
      const make = exported<(options: Record<string, unknown>) => SandboxProvider>(module, "local");
      return (extra = {}) => make({ root: tempDir, isolation: "bwrap", ...extra });
    },
  },
  {
    id: "local (no isolation)",
    packageName: "@sbox/provider-local",
    factory: (module, tempDir) => {
      const make = exported<(options: Record<string, unknown>) => SandboxProvider>(module, "local");
      return (extra = {}) => make({ root: tempDir, isolation: "none", ...extra });
    },
  },
  {
    id: "docker (busybox)",
    packageName: "@sbox/provider-docker",
    precondition: dockerReady,
    factory: (module) => {
      const make = exported<(options: Record<string, unknown>) => SandboxProvider>(module, "docker");
      return (extra = {}) => make({ image: DOCKER_IMAGE, ...extra });
    },
    options: { fixtures: { volume: DOCKER_VOLUME } },
    cleanup: () => {
      spawnSync("docker", ["volume", "rm", "-f", DOCKER_VOLUME], { stdio: "ignore", timeout: 30_000 });
    },
  },
  {
    id: "e2b",
    packageName: "@sbox/provider-e2b",
    env: ["E2B_API_KEY"],
    factory: (module) => exported<(options?: Record<string, unknown>) => SandboxProvider>(module, "e2b"),
  },
  {
    id: "fly",
    packageName: "@sbox/provider-fly",
    env: ["FLY_API_TOKEN", "FLY_APP"],
    factory: (module) => exported<(options?: Record<string, unknown>) => SandboxProvider>(module, "fly"),
  },
  {
    id: "daytona",
    packageName: "@sbox/provider-daytona",
    env: ["DAYTONA_API_KEY"],
    factory: (module) => exported<(options?: Record<string, unknown>) => SandboxProvider>(module, "daytona"),
  },
  {
    id: "modal",
    packageName: "@sbox/provider-modal",
    env: ["MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET"],
    factory: (module) => exported<(options?: Record<string, unknown>) => SandboxProvider>(module, "modal"),
  },
  {
    id: "vercel",
    packageName: "@sbox/provider-vercel",
    env: ["VERCEL_TOKEN", "VERCEL_TEAM_ID", "VERCEL_PROJECT_ID"],
    factory: (module) => exported<(options?: Record<string, unknown>) => SandboxProvider>(module, "vercel"),
  },
  {
    id: "kubernetes",
    packageName: "@sbox/provider-kubernetes",
    env: ["KUBECONFIG"],
    factory: (module) =>
      exported<(options?: Record<string, unknown>) => SandboxProvider>(module, "kubernetes"),
  },
];
