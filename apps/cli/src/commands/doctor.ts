import { join } from "node:path";
import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { EXIT_CODES } from "../output/exit-codes.js";
import { installHint } from "../providers/install-hint.js";
import {
  type DiscoveredProvider,
  discoverProviders,
  packageForProvider,
} from "../providers/load-provider.js";
import { openRecords } from "../records/cli-records.js";
import type { CommandDefinition } from "./command-definition.js";
import {
  checkBwrap,
  checkDockerEngine,
  checkDockerImages,
  checkStateRoot,
  type DoctorCheck,
  sboxHome,
} from "./doctor-checks.js";

/** A provider's health as `doctor` reports it. */
interface ProviderReport {
  name: string;
  package: string;
  ready: boolean;
  checks: DoctorCheck[];
}

/** The image docker sandboxes start from without `-t`, and what decided it. */
function dockerDefaultImage(
  provider: DiscoveredProvider,
  options: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>>,
): { image: string; from: string } | undefined {
  if (typeof options.image === "string" && options.image !== "")
    return { image: options.image, from: "-o image / config.json" };
  const fromEnv = env.SBOX_DOCKER_IMAGE?.trim();
  if (fromEnv) return { image: fromEnv, from: "SBOX_DOCKER_IMAGE" };
  // The package's own default, as it exports it.
  const builtIn = provider.package?.module.DEFAULT_IMAGE;
  return typeof builtIn === "string" ? { image: builtIn, from: "the provider's default" } : undefined;
}

async function checksFor(
  provider: DiscoveredProvider,
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
  options: Record<string, unknown>,
): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  if (provider.status === "installed") {
    checks.push({
      name: "package",
      ok: true,
      required: true,
      detail: `${provider.packageName} is installed`,
    });
  } else if (provider.status === "missing") {
    checks.push({
      name: "package",
      ok: false,
      required: true,
      detail: `${provider.packageName} is not installed`,
      fix: installHint(provider.packageName, cwd),
    });
  } else {
    checks.push({
      name: "package",
      ok: false,
      required: true,
      detail: provider.problem ?? `${provider.packageName} does not load`,
      fix: `reinstall ${provider.packageName}`,
    });
  }
  for (const variable of provider.known?.env ?? []) {
    const set = env[variable.name] !== undefined && env[variable.name] !== "";
    checks.push({
      name: variable.name,
      ok: set || !variable.required,
      required: variable.required,
      // Only whether it is set, never its value.
      detail: set
        ? `${variable.name} is set`
        : `${variable.name} is not set${variable.required ? "" : " (optional)"}`,
      ...(set ? {} : { fix: `export ${variable.name}=... (${variable.description})` }),
    });
  }
  if (provider.name === "local") checks.push(await checkStateRoot(env), await checkBwrap());
  if (provider.name === "docker") {
    const engine = await checkDockerEngine(env);
    checks.push(engine);
    const image = dockerDefaultImage(provider, options, env);
    if (engine.ok && image) checks.push(await checkDockerImages(env, image));
  }
  return checks;
}

/** `sbox doctor`: what each provider needs and what is missing. */
export const doctorCommand: CommandDefinition = {
  name: "doctor",
  summary: "check each provider: installed, credentials, bwrap, Docker Engine; says how to fix",
  usage: ["sbox doctor [--json]"],
  details:
    "Exit code 0 when the selected provider (--provider / SBOX_PROVIDER / local) is ready, 1 otherwise.\n" +
    "Credentials are only reported as set or not set, never printed.",
  options: {},
  async run(context, args) {
    expectPositionals(args, "doctor", [], { max: 0 });
    expectNoCommand(args, "doctor");
    const reports = await context.waitFor("checking providers", async () => {
      const discovered = await discoverProviders(context.io.cwd);
      const selected = packageForProvider(context.providerName);
      if (!discovered.some((provider) => provider.packageName === selected.packageName)) {
        discovered.push({ ...selected, known: undefined, status: "missing" });
      }
      return Promise.all(
        discovered.map(async (provider): Promise<ProviderReport> => {
          const checks = await checksFor(
            provider,
            context.io.env,
            context.io.cwd,
            context.providerOptions(provider.name),
          );
          return {
            name: provider.name,
            package: provider.packageName,
            ready: checks.every((check) => check.ok || !check.required),
            checks,
          };
        }),
      );
    });
    const selected = reports.find((report) => report.name === packageForProvider(context.providerName).name);
    const opened = await openRecords(context.io);
    await opened.records?.close();
    const records = opened.records
      ? { ok: true, detail: `sandboxes are recorded in ${join(sboxHome(context.io.env), "manager.db")}` }
      : { ok: false, detail: `sandboxes are not recorded: ${opened.reason ?? "unknown reason"}` };
    if (context.json) {
      context.printJson({
        selected: context.providerName,
        ready: selected?.ready ?? false,
        providers: reports,
        records,
      });
    } else {
      const { out } = context;
      const width = Math.max(...reports.map((report) => report.name.length));
      for (const report of reports) {
        const mark = report.ready ? out.green("ready") : out.red("not ready");
        const chosen = report === selected ? out.dim(" (selected)") : "";
        context.print(`${out.bold(report.name.padEnd(width))}  ${mark}${chosen}\n`);
        for (const check of report.checks) {
          const symbol = check.ok ? out.green("✓") : check.required ? out.red("✗") : out.yellow("!");
          context.print(`${" ".repeat(width)}  ${symbol} ${check.detail}\n`);
          if (!check.ok && check.fix)
            context.print(`${" ".repeat(width)}    ${out.dim(`fix: ${check.fix}`)}\n`);
        }
      }
      context.print(
        `${out.bold("records")}  ${records.ok ? out.green("✓") : out.yellow("!")} ${records.detail}\n`,
      );
    }
    return selected?.ready ? 0 : EXIT_CODES.generic;
  },
};
