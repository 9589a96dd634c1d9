// Raw dockerode calls written the way a careful user would, shared by the benchmarks in this directory:
// they are the baseline every sbox figure is divided by, measured in the same run on the same engine.

/** Creates and starts a container that sleeps, as sbox does (with an init process). */
export async function rawCreate(raw, image, labels) {
  const container = await raw.createContainer({
    Image: image,
    Entrypoint: ["sleep"],
    Cmd: ["2147483647"],
    Labels: labels,
    HostConfig: { Init: true },
  });
  await container.start();
  return container;
}

/** Splits Docker's multiplexed stream; `onChunk(stream, bytes)` sees each payload as it arrives. */
export function demux(stream, onChunk) {
  return new Promise((resolve, reject) => {
    let pending = Buffer.alloc(0);
    stream.on("data", (chunk) => {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      while (pending.length >= 8) {
        const size = pending.readUInt32BE(4);
        if (pending.length < 8 + size) break;
        onChunk(pending[0], pending.subarray(8, 8 + size));
        pending = pending.subarray(8 + size);
      }
    });
    stream.on("end", resolve);
    stream.on("close", resolve);
    stream.on("error", reject);
  });
}

/**
 * Runs `cmd` with a hijacked exec; resolves with the exit code, stdout, and the milliseconds from the call
 * to the first stdout byte. `stdin` (bytes) is written and closed.
 */
export async function rawRun(container, cmd, stdin) {
  const started = performance.now();
  const exec = await container.exec({
    Cmd: cmd,
    AttachStdout: true,
    AttachStderr: true,
    AttachStdin: stdin !== undefined,
  });
  const stream = await exec.start({ hijack: true, stdin: stdin !== undefined });
  let firstMs;
  const out = [];
  const done = demux(stream, (kind, bytes) => {
    if (kind !== 1) return;
    firstMs ??= performance.now() - started;
    out.push(bytes);
  });
  if (stdin !== undefined) stream.end(stdin);
  await done;
  const info = await exec.inspect();
  return { exitCode: info.ExitCode, stdout: Buffer.concat(out), firstMs };
}

/** A one-file tar archive. */
export function tarOf(name, data) {
  const header = Buffer.alloc(512);
  header.write(name, 0);
  header.write("0000644\0", 100);
  header.write("0000000\0", 108);
  header.write("0000000\0", 116);
  header.write(`${data.length.toString(8).padStart(11, "0")}\0`, 124);
  header.write(
    `${Math.floor(Date.now() / 1000)
      .toString(8)
      .padStart(11, "0")}\0`,
    136,
  );
  header.write("        ", 148);
  header.write("0", 156);
  header.write("ustar\0", 257);
  header.write("00", 263);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
  const pad = (512 - (data.length % 512)) % 512;
  return Buffer.concat([header, data, Buffer.alloc(pad + 1024)]);
}

/** Writes one file with putArchive. */
export async function rawWrite(container, dir, name, data) {
  await container.putArchive(tarOf(name, data), { path: dir });
}

/** Reads one file with getArchive. */
export async function rawRead(container, path) {
  const stream = await container.getArchive({ path });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  const tar = Buffer.concat(chunks);
  const size = Number.parseInt(tar.subarray(124, 136).toString("ascii").replace(/\0.*$/s, "").trim(), 8);
  return tar.subarray(512, 512 + size);
}

/** Removes every container of this run, whatever happened. */
export async function removeLabelled(raw, label) {
  const left = await raw.listContainers({ all: true, filters: { label: [label] } });
  for (const c of left) {
    await raw
      .getContainer(c.Id)
      .remove({ force: true })
      .catch(() => undefined);
  }
}
