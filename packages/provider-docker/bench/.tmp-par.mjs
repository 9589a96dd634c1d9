// temporary experiment (not committed): does splitting a 20 MB transfer over parallel docker execs help?
import { randomBytes } from "node:crypto";
import Docker from "dockerode";
import { rotatedRounds, summarize } from "../../../scripts/bench-rounds.mjs";
import { rawCreate, rawRun } from "./raw-dockerode.mjs";
const raw = new Docker();
const SIZE = 20_000_000;
const label = { "sbox.bench": `par-${process.pid}` };
const c = await rawCreate(raw, "sbox-busybox:latest", label);
try {
  const data = randomBytes(SIZE);
  await rawRun(c, ["sh", "-c", "cat > /tmp/src.bin"], data);
  const write = (n, tool) => Promise.all(Array.from({ length: n }, (_, i) => {
    const part = data.subarray((i * SIZE) / n, ((i + 1) * SIZE) / n);
    const cmd = tool === "cat" ? `cat > /tmp/w${i}.bin` : `dd of=/tmp/w.bin bs=65536 seek=${(i * SIZE) / n / 4} conv=notrunc obs=4 2>/dev/null`;
    return rawRun(c, ["sh", "-c", tool === "cat" ? cmd : `dd of=/tmp/w${i}.bin bs=65536 2>/dev/null`], part);
  }));
  const read = (n) => Promise.all(Array.from({ length: n }, (_, i) => {
    const bs = 10000; const per = SIZE / n / bs;
    return rawRun(c, ["sh", "-c", `dd if=/tmp/src.bin bs=${bs} skip=${i * per} count=${per} 2>/dev/null`]);
  }));
  const v = {
    w1cat: () => write(1, "cat"), w1dd: () => write(1, "dd"), w2dd: () => write(2, "dd"), w4dd: () => write(4, "dd"),
    r1: () => read(1), r2: () => read(2), r4: () => read(4),
    rcat: () => rawRun(c, ["cat", "/tmp/src.bin"]),
  };
  const s = await rotatedRounds(v, { rounds: Number(process.env.R ?? 6) });
  for (const [k, vals] of Object.entries(s)) { const m = summarize(vals); console.log(k, (SIZE / 1e3 / m.median).toFixed(1), "MB/s", m.median.toFixed(0), "ms", `(${m.p25.toFixed(0)}-${m.p75.toFixed(0)})`); }
} finally { await c.remove({ force: true }); }
