import { join } from "node:path";
import { afterAll, it } from "vitest";
import { call, providerFor, run, tempOutsideTmp } from "./helpers.js";

const { dir, cleanup } = tempOutsideTmp("scratch");
afterAll(() => cleanup());
const N = Number(process.env.N ?? 20);
for (const image of [false, true]) {
  it(`image ${image}`, async () => {
    const p = providerFor("bwrap", join(dir, String(image)), { diskImage: image });
    let t = Date.now();
    const boxes = await Promise.all(Array.from({ length: N }, () => p.doCreate({}, call())));
    const created = Date.now() - t;
    t = Date.now();
    await Promise.all(boxes.map((b) => run(p, b, "true")));
    const firstRun = Date.now() - t;
    t = Date.now();
    await Promise.all(boxes.map((b) => run(p, b, "true")));
    const second = Date.now() - t;
    t = Date.now();
    await Promise.all(boxes.map((b) => p.doDestroy(b, call())));
    console.log(
      `image=${image} N=${N} create ${created} ms, first run ${firstRun} ms, second ${second} ms, destroy ${Date.now() - t} ms, load ${require("node:os").loadavg()[0]}`,
    );
  }, 600_000);
}
