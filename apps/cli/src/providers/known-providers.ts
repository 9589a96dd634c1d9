/** An environment variable a provider reads. */
export interface ProviderEnvVar {
  readonly name: string;
  /** Without it the provider cannot work. */
  readonly required: boolean;
  readonly description: string;
}

/** What the CLI knows about a provider package without importing it. */
export interface KnownProvider {
  /** Provider name, the `--provider` value and the sandbox id prefix. */
  readonly name: string;
  /** npm package that implements it. */
  readonly packageName: string;
  /** Named export of the package that builds the provider, e.g. `docker` for `docker(options)`. */
  readonly factoryExport: string;
  /** Environment variables the provider documents (credentials come only from these, or `-o` options). */
  readonly env: readonly ProviderEnvVar[];
  /** What else it needs, in a few words. */
  readonly needs?: string | undefined;
}

/** The providers of this repository. Others are found as `@sbox/provider-<name>` or by package name. */
export const KNOWN_PROVIDERS: readonly KnownProvider[] = [
  {
    name: "local",
    packageName: "@sbox/provider-local",
    factoryExport: "local",
    env: [
      {
        name: "SBOX_HOME",
        required: false,
        description: "state root of sbox (default ~/.sbox); local sandboxes live under it",
      },
    ],
    needs: "bubblewrap (bwrap) for isolation on Linux; without it commands run unisolated",
  },
  {
    name: "docker",
    packageName: "@sbox/provider-docker",
    factoryExport: "docker",
    env: [
      {
        name: "DOCKER_HOST",
        required: false,
        description: "engine address (unix://, tcp://, ssh://); default the local socket",
      },
    ],
    needs: "a reachable Docker Engine",
  },
  {
    name: "e2b",
    packageName: "@sbox/provider-e2b",
    factoryExport: "e2b",
    env: [{ name: "E2B_API_KEY", required: true, description: "API key from the E2B dashboard" }],
  },
  {
    name: "fly",
    packageName: "@sbox/provider-fly",
    factoryExport: "fly",
    env: [
      { name: "FLY_API_TOKEN", required: true, description: "token from `fly tokens create`" },
      { name: "FLY_APP", required: true, description: "the Fly app that holds the machines" },
    ],
  },
  {
    name: "vercel",
    packageName: "@sbox/provider-vercel",
    factoryExport: "vercel",
    env: [
      {
        name: "VERCEL_TOKEN",
        required: false,
        description: "access token (with VERCEL_TEAM_ID and VERCEL_PROJECT_ID)",
      },
      { name: "VERCEL_TEAM_ID", required: false, description: "team of the sandboxes, with VERCEL_TOKEN" },
      {
        name: "VERCEL_PROJECT_ID",
        required: false,
        description: "project of the sandboxes, with VERCEL_TOKEN",
      },
      {
        name: "VERCEL_OIDC_TOKEN",
        required: false,
        description: "OIDC token from `vercel env pull` (instead of a token)",
      },
    ],
  },
  {
    name: "daytona",
    packageName: "@sbox/provider-daytona",
    factoryExport: "daytona",
    env: [{ name: "DAYTONA_API_KEY", required: true, description: "API key from the Daytona dashboard" }],
  },
];

/** The provider used when neither `--provider` nor `SBOX_PROVIDER` says otherwise. */
export const DEFAULT_PROVIDER = "local";

/** The known provider of that name, if any. */
export function knownProvider(name: string): KnownProvider | undefined {
  return KNOWN_PROVIDERS.find((provider) => provider.name === name);
}
