import { Sandbox } from "@vercel/sandbox";
import { test, expect } from "vitest";
import { startVercelEmulator } from "../src/vercel/index.js";

test("smoke", async () => {
  const emu = await startVercelEmulator();
  try {
    const creds = { token: emu.token, teamId: emu.teamId, projectId: emu.projectId, fetch: emu.fetch };
    const sb = await Sandbox.create({ ...creds, runtime: "node24", ports: [3000] });
    console.log(sb.name, sb.status, sb.cwd, sb.routes);
    const r = await sb.runCommand("sh", ["-c", "echo hi; echo err >&2; exit 3"]);
    console.log(r.exitCode, JSON.stringify(await r.stdout()), JSON.stringify(await r.stderr()));
    const d = await sb.runCommand({ cmd: "sh", args: ["-c", "for i in 1 2 3; do echo $i; sleep 0.3; done"], detached: true });
    const t0 = Date.now();
    for await (const log of d.logs()) console.log(Date.now() - t0, log);
    console.log((await d.wait()).exitCode);
    await sb.writeFiles([{ path: "a/b.txt", content: Buffer.from("hello") }]);
    console.log((await sb.readFileToBuffer({ path: "a/b.txt" }))?.toString());
    console.log(await sb.readFileToBuffer({ path: "nope" }));
    const k = await sb.runCommand({ cmd: "sleep", args: ["100"], detached: true });
    await k.kill("SIGTERM");
    console.log("killed", (await k.wait()).exitCode);
    await sb.extendTimeout(60000);
    console.log("timeout", sb.timeout);
    const list = await Sandbox.list({ ...creds });
    console.log(list.sandboxes.map((s) => s.name));
    await sb.stop();
    console.log("stopped", sb.status);
    const r2 = await sb.runCommand("echo", ["again"]);
    console.log("resumed", await r2.stdout(), sb.status);
    await sb.delete();
  } finally {
    await emu.close();
  }
}, 60000);
