import type { Sandbox } from "@sbox/core";
import {
  ConformanceFailure,
  check,
  expectBytes,
  expectEqual,
  expectRejects,
  expectSandboxError,
  hexOf,
  show,
} from "../assertions.js";
import type { ConformanceCase, ConformanceContext } from "../conformance-case.js";
import {
  existsViaShell,
  hexOfFileViaShell,
  printfFormatOf,
  runOk,
  shArgs,
  sizeViaShell,
} from "../sandbox-scripts.js";
import { allByteValues, patternBytes, readAll, sha256, streamOf, utf8 } from "./case-helpers.js";

/** File names that break naive quoting or line-based parsing. */
export const HOSTILE_NAMES: readonly string[] = [
  "with space.txt",
  'it\'s "quoted".txt',
  "new\nline.txt",
  "ünïcödé-日本-🎉.txt",
  "$(echo x)`y`;z&.txt",
  "-starts-with-dash",
  "*glob?[a].txt",
  " leading space",
  "back\\slash",
  ".hidden",
];

async function setup(ctx: ConformanceContext): Promise<{ sandbox: Sandbox; dir: string }> {
  const sandbox = await ctx.sharedSandbox();
  return { sandbox, dir: await ctx.scratchDir(sandbox) };
}

const MIB = 1024 * 1024;

/** File operations, each checked through a second channel (a shell command) where possible. */
export function filesCases(): ConformanceCase[] {
  return [
    {
      id: "files.write.text-roundtrip",
      title: "a UTF-8 string written with files.write reads back identical with readText, read and `cat`",
      requires: [],
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        const text = "héllo wörld 日本語 🎉\nsecond line\r\nno newline at end";
        const path = `${dir}/text.txt`;
        await sandbox.files.write(path, text);
        expectEqual(await sandbox.files.readText(path), text, "readText()");
        expectBytes(await sandbox.files.read(path), utf8(text), "read()");
        expectEqual(await hexOfFileViaShell(sandbox, path), hexOf(utf8(text)), "bytes seen by od");
      },
    },
    {
      id: "files.write.binary-roundtrip",
      title:
        "bytes with all 256 values written with files.write read back identical, also through `od` in the sandbox",
      requires: [],
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        const bytes = allByteValues();
        const path = `${dir}/binary.bin`;
        await sandbox.files.write(path, bytes);
        expectBytes(await sandbox.files.read(path), bytes, "read() of the binary file");
        expectEqual(await hexOfFileViaShell(sandbox, path), hexOf(bytes), "bytes seen by od");
      },
    },
    {
      id: "files.read.written-by-shell",
      title: "bytes with all 256 values written by a shell command read back identical with files.read",
      requires: [],
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        const bytes = allByteValues();
        const path = `${dir}/from-shell.bin`;
        await runOk(
          sandbox,
          shArgs('printf "$1" > "$2"', printfFormatOf(bytes), path),
          "writing bytes with printf",
        );
        expectBytes(await sandbox.files.read(path), bytes, "read() of a file written by printf");
      },
    },
    {
      id: "files.write.empty",
      title: "an empty file is written, read back as 0 bytes, and exists with size 0",
      requires: [],
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        const path = `${dir}/empty`;
        await sandbox.files.write(path, new Uint8Array(0));
        expectEqual((await sandbox.files.read(path)).length, 0, "length of read() of an empty file");
        expectEqual(await sandbox.files.readText(path), "", "readText() of an empty file");
        expectEqual(await sizeViaShell(sandbox, path), 0, "size seen by wc");
        expectEqual((await sandbox.files.stat(path)).size, 0, "stat().size");
        await sandbox.files.write(`${dir}/empty-string`, "");
        expectEqual(
          await sizeViaShell(sandbox, `${dir}/empty-string`),
          0,
          "size of a file written from an empty string",
        );
      },
    },
    {
      id: "files.write.large-20mb",
      title: "a 20 MiB binary file is written and read back identical (no command line carries it whole)",
      requires: [],
      timeoutMs: 180_000,
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        const bytes = patternBytes(20 * MIB, 7);
        const path = `${dir}/large.bin`;
        await sandbox.files.write(path, bytes);
        expectEqual(await sizeViaShell(sandbox, path), bytes.length, "size seen by wc");
        for (const block of [0, 2560, 5119]) {
          const seen = await runOk(
            sandbox,
            shArgs(
              'dd if="$1" bs=4096 skip="$2" count=1 2>/dev/null | od -An -v -tx1 | tr -d " \\n"',
              path,
              String(block),
            ),
            `reading block ${block} with dd`,
          );
          expectEqual(
            seen.stdout.trim(),
            hexOf(bytes.subarray(block * 4096, block * 4096 + 4096)),
            `bytes of 4 KiB block ${block} seen by dd`,
          );
        }
        const back = await sandbox.files.read(path);
        expectEqual(back.length, bytes.length, "length of read()");
        expectEqual(sha256(back), sha256(bytes), "sha256 of read()");
      },
    },
    {
      id: "files.stream.roundtrip-20mb",
      title: "a 20 MiB file written from a stream and read with readStream comes back identical",
      requires: ["filesUpload"],
      timeoutMs: 180_000,
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        const bytes = patternBytes(20 * MIB, 11);
        const path = `${dir}/streamed.bin`;
        await sandbox.files.write(path, streamOf(bytes, MIB));
        expectEqual(await sizeViaShell(sandbox, path), bytes.length, "size seen by wc");
        const back = await readAll(sandbox.files.readStream(path));
        expectEqual(back.length, bytes.length, "length read with readStream");
        expectEqual(sha256(back), sha256(bytes), "sha256 read with readStream");
      },
    },
    {
      id: "files.read-stream.basic",
      title: "readStream() yields a file's bytes, and errors with NotFound for a missing file",
      requires: [],
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        const bytes = patternBytes(MIB + 17, 3);
        await sandbox.files.write(`${dir}/s.bin`, bytes);
        const back = await readAll(sandbox.files.readStream(`${dir}/s.bin`));
        expectBytes(back, bytes, "bytes from readStream");
        await expectRejects(
          readAll(sandbox.files.readStream(`${dir}/missing`)),
          "NotFound",
          "readStream() of a missing file",
        );
      },
    },
    {
      id: "files.write.creates-parents",
      title: "files.write creates missing parent directories",
      requires: [],
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        await sandbox.files.write(`${dir}/a/b/c/deep.txt`, "deep");
        const seen = await runOk(
          sandbox,
          shArgs('test -d "$1/a/b/c" && cat "$1/a/b/c/deep.txt"', dir),
          "reading the nested file",
        );
        expectEqual(seen.stdout, "deep", "content of the nested file");
      },
    },
    {
      id: "files.write.overwrite",
      title: "writing over an existing file replaces its content entirely (a shorter write truncates)",
      requires: [],
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        const path = `${dir}/over.txt`;
        await sandbox.files.write(path, "a much longer first version of the file");
        await sandbox.files.write(path, "short");
        expectEqual(await sandbox.files.readText(path), "short", "content after overwrite");
        expectEqual(await sizeViaShell(sandbox, path), 5, "size after overwrite");
      },
    },
    {
      id: "files.write.mode",
      title: "files.write honours mode: 0o755 makes an executable file",
      requires: [],
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        const path = `${dir}/script.sh`;
        await sandbox.files.write(path, "#!/bin/sh\necho executed\n", { mode: 0o755 });
        const result = await runOk(sandbox, [path], "running the written script");
        expectEqual(result.stdout, "executed\n", "output of the executable file");
        const info = await sandbox.files.stat(path);
        if (info.mode !== undefined)
          expectEqual((info.mode & 0o777).toString(8), "755", "stat().mode & 0o777 (octal)");
      },
    },
    {
      id: "files.list.types",
      title:
        "files.list reports every entry (dotfiles too) with its type — file, dir, symlink (not followed) — its size and absolute path",
      requires: [],
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        await runOk(
          sandbox,
          shArgs(
            'cd "$1" && printf abc > file && mkdir sub && ln -s file link && ln -s missing dangling && printf x > .hidden && printf y > sub/nested',
            dir,
          ),
          "creating entries with the shell",
        );
        const entries = await sandbox.files.list(dir);
        const byName = new Map(entries.map((e) => [e.name, e]));
        expectEqual(
          [...byName.keys()].sort().join(","),
          [".hidden", "dangling", "file", "link", "sub"].sort().join(","),
          "names listed (not recursive, no . or ..)",
        );
        expectEqual(byName.get("file")!.type, "file", "type of file");
        expectEqual(byName.get("file")!.size, 3, "size of file");
        expectEqual(byName.get("file")!.path, `${dir}/file`, "path of file");
        expectEqual(byName.get("sub")!.type, "dir", "type of sub");
        expectEqual(byName.get("link")!.type, "symlink", "type of link");
        expectEqual(byName.get("dangling")!.type, "symlink", "type of a dangling symlink");
        const empty = await sandbox.files.list(`${dir}/sub/`);
        expectEqual(
          empty.map((e) => e.name).join(","),
          "nested",
          "names listed in sub (path with a trailing slash)",
        );
        await runOk(sandbox, ["mkdir", `${dir}/void`], "creating an empty directory");
        expectEqual(
          (await sandbox.files.list(`${dir}/void`)).length,
          0,
          "number of entries of an empty directory",
        );
      },
    },
    {
      id: "files.stat.types",
      title: "files.stat reports name, absolute path, type and size; a symlink is reported as a symlink",
      requires: [],
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        await runOk(
          sandbox,
          shArgs('cd "$1" && printf hello > f && mkdir d && ln -s f l', dir),
          "creating entries",
        );
        const file = await sandbox.files.stat(`${dir}/f`);
        expectEqual(file.name, "f", "stat(f).name");
        expectEqual(file.path, `${dir}/f`, "stat(f).path");
        expectEqual(file.type, "file", "stat(f).type");
        expectEqual(file.size, 5, "stat(f).size");
        if (file.mtime !== undefined) {
          check(
            file.mtime instanceof Date && Math.abs(file.mtime.getTime() - Date.now()) < 24 * 3600_000,
            `expected stat(f).mtime to be a recent Date, got ${show(file.mtime)}`,
          );
        }
        expectEqual((await sandbox.files.stat(`${dir}/d`)).type, "dir", "stat(d).type");
        expectEqual((await sandbox.files.stat(`${dir}/l`)).type, "symlink", "stat(l).type");
      },
    },
    {
      id: "files.exists.semantics",
      title:
        "files.exists is true for files and directories, false for missing paths (also under a missing parent), and an invalid path is an error, not false",
      requires: [],
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        await runOk(sandbox, shArgs('printf x > "$1/f"', dir), "creating a file");
        expectEqual(await sandbox.files.exists(`${dir}/f`), true, "exists(file)");
        expectEqual(await sandbox.files.exists(dir), true, "exists(dir)");
        expectEqual(await sandbox.files.exists(`${dir}/missing`), false, "exists(missing)");
        expectEqual(await sandbox.files.exists(`${dir}/missing/deeper`), false, "exists(missing/deeper)");
        await expectRejects(
          sandbox.files.exists(`${dir}/bad\0name`),
          "Validation",
          "exists() of a path with a NUL byte",
        );
      },
    },
    {
      id: "files.not-found",
      title: "read, readText, stat, list, remove and rename of a missing path reject with NotFound",
      requires: [],
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        const missing = `${dir}/missing`;
        await expectRejects(sandbox.files.read(missing), "NotFound", "read(missing)");
        await expectRejects(sandbox.files.readText(missing), "NotFound", "readText(missing)");
        await expectRejects(sandbox.files.stat(missing), "NotFound", "stat(missing)");
        await expectRejects(sandbox.files.list(missing), "NotFound", "list(missing)");
        await expectRejects(sandbox.files.remove(missing), "NotFound", "remove(missing)");
        await expectRejects(
          sandbox.files.rename(missing, `${dir}/other`),
          "NotFound",
          "rename(missing, other)",
        );
        await expectRejects(
          sandbox.files.read(`${dir}/missing-dir/file`),
          "NotFound",
          "read(missing-dir/file)",
        );
      },
    },
    {
      id: "files.errors.not-not-found",
      title:
        "a failure other than absence is not reported as NotFound: reading a directory or listing a file rejects with another code",
      requires: [],
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        await runOk(sandbox, shArgs('printf x > "$1/f"', dir), "creating a file");
        for (const [what, action] of [
          ["read(directory)", () => sandbox.files.read(dir)],
          ["list(file)", () => sandbox.files.list(`${dir}/f`)],
          ["write(path under a file)", () => sandbox.files.write(`${dir}/f/child`, "x")],
        ] as const) {
          let error: unknown;
          try {
            await action();
          } catch (e) {
            error = e;
          }
          const err = expectSandboxError(
            error,
            ["Validation", "Conflict", "InvalidState", "Provider", "Unauthorized"],
            what,
          );
          check(err.code !== "NotFound", `expected ${what} not to be NotFound`);
        }
      },
    },
    {
      id: "files.mkdir.semantics",
      title:
        "mkdir creates nested directories with recursive, is a no-op on an existing directory with recursive, and fails without it when the parent is missing",
      requires: [],
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        await sandbox.files.mkdir(`${dir}/x/y/z`, { recursive: true });
        check(await existsViaShell(sandbox, `${dir}/x/y/z`), "expected mkdir recursive to create x/y/z");
        await sandbox.files.mkdir(`${dir}/x/y/z`, { recursive: true });
        await sandbox.files.mkdir(`${dir}/single`);
        expectEqual(
          (await sandbox.files.stat(`${dir}/single`)).type,
          "dir",
          "type of a directory made by mkdir",
        );
        await expectRejects(
          sandbox.files.mkdir(`${dir}/no/parent`),
          "NotFound",
          "mkdir without recursive under a missing parent",
        );
        check(
          !(await existsViaShell(sandbox, `${dir}/no`)),
          "expected mkdir without recursive not to create the missing parent",
        );
      },
    },
    {
      id: "files.remove.semantics",
      title:
        "remove deletes a file; a non-empty directory only with recursive (without it the call fails and nothing is lost)",
      requires: [],
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        await runOk(
          sandbox,
          shArgs(
            'cd "$1" && printf x > f && mkdir -p tree/a/b && printf y > tree/a/b/leaf && ln -s f link',
            dir,
          ),
          "creating a tree",
        );
        await sandbox.files.remove(`${dir}/f`);
        check(!(await existsViaShell(sandbox, `${dir}/f`)), "expected the removed file to be gone");
        await sandbox.files.remove(`${dir}/link`);
        check(!(await existsViaShell(sandbox, `${dir}/link`)), "expected the removed symlink to be gone");
        let refused = false;
        try {
          await sandbox.files.remove(`${dir}/tree`);
        } catch (error) {
          expectSandboxError(
            error,
            ["Conflict", "Validation", "InvalidState", "Provider"],
            "remove(non-empty dir) without recursive",
          );
          refused = true;
        }
        check(refused, "expected remove() of a non-empty directory without recursive to reject");
        check(
          await existsViaShell(sandbox, `${dir}/tree/a/b/leaf`),
          "expected a refused remove() to leave the tree intact",
        );
        await sandbox.files.remove(`${dir}/tree`, { recursive: true });
        check(
          !(await existsViaShell(sandbox, `${dir}/tree`)),
          "expected remove(recursive) to delete the whole tree",
        );
      },
    },
    {
      id: "files.rename.semantics",
      title: "rename moves files and directories (with content) and replaces an existing target file",
      requires: [],
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        await runOk(
          sandbox,
          shArgs(
            'cd "$1" && printf one > a && printf two > b && mkdir -p d/inner && printf leaf > d/inner/leaf && mkdir other',
            dir,
          ),
          "creating entries",
        );
        await sandbox.files.rename(`${dir}/a`, `${dir}/other/a-moved`);
        check(!(await existsViaShell(sandbox, `${dir}/a`)), "expected the source to be gone after rename");
        expectEqual(await sandbox.files.readText(`${dir}/other/a-moved`), "one", "content after rename");
        await sandbox.files.rename(`${dir}/other/a-moved`, `${dir}/b`);
        expectEqual(await sandbox.files.readText(`${dir}/b`), "one", "content of a replaced target");
        await sandbox.files.rename(`${dir}/d`, `${dir}/d2`);
        expectEqual(
          (await runOk(sandbox, ["cat", `${dir}/d2/inner/leaf`], "reading inside the renamed directory"))
            .stdout,
          "leaf",
          "content inside a renamed directory",
        );
      },
    },
    {
      id: "files.names.hostile",
      title:
        "names with spaces, quotes, newlines, unicode, $(), globs and a leading dash work in write, read, list, stat, exists, rename and remove",
      requires: [],
      timeoutMs: 120_000,
      async run(ctx) {
        const { sandbox, dir } = await setup(ctx);
        for (const name of HOSTILE_NAMES) {
          const path = `${dir}/${name}`;
          const content = `content of ${name}`;
          await sandbox.files.write(path, content).catch((error: unknown) => {
            throw new ConformanceFailure(`expected write(${show(name)}) to succeed, got ${show(error)}`);
          });
          const viaShell = await runOk(sandbox, ["cat", "--", path], `cat of ${show(name)}`);
          expectEqual(viaShell.stdout, content, `content of ${show(name)} seen by cat`);
          expectEqual(await sandbox.files.readText(path), content, `readText(${show(name)})`);
          expectEqual(await sandbox.files.exists(path), true, `exists(${show(name)})`);
          const info = await sandbox.files.stat(path);
          expectEqual(info.name, name, `stat(${show(name)}).name`);
          expectEqual(info.type, "file", `stat(${show(name)}).type`);
        }
        const listed = (await sandbox.files.list(dir)).map((e) => e.name).sort();
        expectEqual(JSON.stringify(listed), JSON.stringify([...HOSTILE_NAMES].sort()), "names listed");
        for (const name of HOSTILE_NAMES) {
          const from = `${dir}/${name}`;
          const to = `${dir}/renamed ${name}`;
          await sandbox.files.rename(from, to);
          expectEqual(await sandbox.files.exists(from), false, `exists(${show(name)}) after rename`);
          await sandbox.files.remove(to);
          check(
            !(await existsViaShell(sandbox, to)),
            `expected ${show(`renamed ${name}`)} to be gone after remove`,
          );
        }
        const dirName = `${dir}/dir 'with' "hostile"\nname ü`;
        await sandbox.files.mkdir(dirName, { recursive: true });
        await sandbox.files.write(`${dirName}/inside`, "x");
        expectEqual(
          (await sandbox.files.list(dirName)).map((e) => e.name).join(","),
          "inside",
          "names listed in a hostile directory",
        );
        await sandbox.files.remove(dirName, { recursive: true });
        check(!(await existsViaShell(sandbox, dirName)), "expected the hostile directory to be removed");
      },
    },
  ];
}
