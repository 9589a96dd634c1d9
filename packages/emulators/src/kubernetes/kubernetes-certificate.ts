/**
 * The emulator's TLS identity. A real API server only speaks HTTPS, and clients insist on it
 * (`@kubernetes/client-node` refuses plain HTTP unless TLS checks are switched off), so every emulator run
 * makes a fresh self-signed certificate for its listening addresses and puts it into the kubeconfig as
 * `certificate-authority-data`. Node can make keys but not certificates, so the X.509 DER is built here:
 * a P-256 key, a v3 certificate that is its own CA, valid for loopback and `localhost`.
 */
import { generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { isIP } from "node:net";

/** A key and certificate pair, PEM encoded. */
export interface EmulatorCertificate {
  readonly key: string;
  readonly cert: string;
}

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
}

const sequence = (...content: Buffer[]) => tlv(0x30, ...content);
const set = (...content: Buffer[]) => tlv(0x31, ...content);

function oid(dotted: string): Buffer {
  const parts = dotted.split(".").map(Number);
  const bytes = [40 * parts[0]! + parts[1]!];
  for (const part of parts.slice(2)) {
    const chunk: number[] = [];
    let v = part;
    do {
      chunk.unshift(v & 0x7f);
      v = Math.floor(v / 128);
    } while (v > 0);
    for (let i = 0; i < chunk.length - 1; i++) chunk[i]! |= 0x80;
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

function integer(bytes: Buffer): Buffer {
  let body = bytes;
  while (body.length > 1 && body[0] === 0 && (body[1]! & 0x80) === 0) body = body.subarray(1);
  if ((body[0]! & 0x80) !== 0) body = Buffer.concat([Buffer.from([0]), body]);
  return tlv(0x02, body);
}

/** UTCTime (YYMMDDHHMMSSZ), valid for years before 2050 as X.509 requires. */
function utcTime(date: Date): Buffer {
  const two = (n: number) => String(n).padStart(2, "0");
  const text = `${two(date.getUTCFullYear() % 100)}${two(date.getUTCMonth() + 1)}${two(date.getUTCDate())}${two(date.getUTCHours())}${two(date.getUTCMinutes())}${two(date.getUTCSeconds())}Z`;
  return tlv(0x17, Buffer.from(text, "ascii"));
}

function name(commonName: string): Buffer {
  return sequence(set(sequence(oid("2.5.4.3"), tlv(0x0c, Buffer.from(commonName, "utf8")))));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return sequence(oid(id), ...(critical ? [tlv(0x01, Buffer.from([0xff]))] : []), tlv(0x04, value));
}

function ipBytes(address: string): Buffer {
  if (isIP(address) === 4) return Buffer.from(address.split(".").map(Number));
  const [head = "", tail = ""] = address.split("::");
  const groups = (text: string) => (text === "" ? [] : text.split(":"));
  const left = groups(head);
  const right = address.includes("::") ? groups(tail) : [];
  const all = [...left, ...new Array(8 - left.length - right.length).fill("0"), ...right];
  const out = Buffer.alloc(16);
  all.forEach((group, i) => {
    out.writeUInt16BE(Number.parseInt(group, 16), i * 2);
  });
  return out;
}

function pem(label: string, der: Buffer): string {
  const lines = der.toString("base64").match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

/**
 * A self-signed certificate for `hosts` (IP addresses and DNS names; loopback and `localhost` are always
 * included), valid from an hour ago for `days` days.
 */
export function selfSignedCertificate(hosts: readonly string[] = [], days = 365): EmulatorCertificate {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const spki = publicKey.export({ type: "spki", format: "der" });
  const names = [...new Set(["127.0.0.1", "::1", "localhost", ...hosts])];
  const altNames = names.map((host) =>
    isIP(host) ? tlv(0x87, ipBytes(host)) : tlv(0x82, Buffer.from(host, "ascii")),
  );
  const ecdsaWithSha256 = sequence(oid("1.2.840.10045.4.3.2"));
  const serial = randomBytes(16);
  serial[0]! &= 0x7f;
  serial[0]! |= 0x01;
  const now = Date.now();
  const subject = name("sbox-kubernetes-emulator");
  const tbs = sequence(
    tlv(0xa0, integer(Buffer.from([2]))),
    integer(serial),
    ecdsaWithSha256,
    subject,
    sequence(utcTime(new Date(now - 3_600_000)), utcTime(new Date(now + days * 86_400_000))),
    subject,
    spki,
    tlv(
      0xa3,
      sequence(
        extension("2.5.29.19", true, sequence(tlv(0x01, Buffer.from([0xff])))),
        // digitalSignature and keyCertSign.
        extension("2.5.29.15", true, tlv(0x03, Buffer.from([0x02, 0x84]))),
        extension("2.5.29.37", false, sequence(oid("1.3.6.1.5.5.7.3.1"))),
        extension("2.5.29.17", false, sequence(...altNames)),
      ),
    ),
  );
  const signature = sign("sha256", tbs, privateKey);
  const certificate = sequence(tbs, ecdsaWithSha256, tlv(0x03, Buffer.from([0]), signature));
  return {
    key: privateKey.export({ type: "pkcs8", format: "pem" }) as string,
    cert: pem("CERTIFICATE", certificate),
  };
}
