/**
 * A zip archive of stored (uncompressed) entries, as the spec's (APPNOTE 6.3) local headers,
 * central directory and end record: enough for a download of a few files, and what every unzip
 * tool and Python's `zipfile` read. Float32 tensors hardly compress, so nothing is deflated.
 */

export interface ZipEntry {
  /** The path inside the archive ('/'-separated, UTF-8). */
  name: string;
  data: Uint8Array;
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (the zip and gzip one: reflected, polynomial 0xEDB88320). */
export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** MS-DOS date and time fields (local time, two-second resolution), as zip stores them. */
function dosDateTime(date: Date): { time: number; day: number } {
  const year = Math.min(Math.max(date.getFullYear(), 1980), 2107);
  return {
    time: (date.getHours() << 11) | (date.getMinutes() << 5) | (date.getSeconds() >> 1),
    day: ((year - 1980) << 9) | ((date.getMonth() + 1) << 5) | date.getDate(),
  };
}

const UTF8_NAMES = 0x0800;
const VERSION = 20;

/** The entries as one zip file, in order; over 4 GiB or 65535 entries (zip64) is refused. */
export function zipStored(entries: readonly ZipEntry[], date = new Date()): Uint8Array<ArrayBuffer> {
  if (entries.length > 0xffff) throw new RangeError('A zip without zip64 holds at most 65535 entries.');
  const { time, day } = dosDateTime(date);
  const encoder = new TextEncoder();
  const parts = entries.map((entry) => ({ name: encoder.encode(entry.name), data: entry.data, crc: crc32(entry.data) }));
  const localSize = parts.reduce((n, p) => n + 30 + p.name.length + p.data.length, 0);
  const total = localSize + parts.reduce((n, p) => n + 46 + p.name.length, 0) + 22;
  if (total > 0xffffffff) throw new RangeError('A zip without zip64 holds at most 4 GiB.');
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  let at = 0;
  const u16 = (v: number) => {
    view.setUint16(at, v, true);
    at += 2;
  };
  const u32 = (v: number) => {
    view.setUint32(at, v, true);
    at += 4;
  };
  // What the local header and the central directory both say of an entry, in the same order:
  // version needed, flags, method (stored), time, date, CRC, both sizes, name length, extra length.
  const entryFields = (p: (typeof parts)[number]) => {
    u16(VERSION);
    u16(UTF8_NAMES);
    u16(0);
    u16(time);
    u16(day);
    u32(p.crc);
    u32(p.data.length);
    u32(p.data.length);
    u16(p.name.length);
    u16(0);
  };
  const offsets: number[] = [];
  for (const p of parts) {
    offsets.push(at);
    u32(0x04034b50);
    entryFields(p);
    out.set(p.name, at);
    at += p.name.length;
    out.set(p.data, at);
    at += p.data.length;
  }
  const centralStart = at;
  parts.forEach((p, i) => {
    u32(0x02014b50);
    u16(VERSION); // made by
    entryFields(p);
    u16(0); // comment
    u16(0); // disk
    u16(0); // internal attributes
    u32(0); // external attributes
    u32(offsets[i]);
    out.set(p.name, at);
    at += p.name.length;
  });
  const centralLength = at - centralStart;
  u32(0x06054b50);
  u16(0);
  u16(0);
  u16(parts.length);
  u16(parts.length);
  u32(centralLength);
  u32(centralStart);
  u16(0);
  return out;
}
