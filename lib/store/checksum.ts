/**
 * Checksums that catch edits to stored records. The persistent stores (files, IndexedDB) write
 * each record with a digest of every field under `integrity`, and check them when they read the
 * record back; a field whose value changed, that was removed or that was added since the write is
 * named in the `StoreCorruptError`. A record without `integrity` is damage too (deleting the key
 * would otherwise hide any edit); stores written before checksums existed are sealed once, on
 * their owner's word (file/seal.ts, idb/seal.ts).
 *
 * A field is a path of at most `DEPTH` names (`config.epochs`, `adapter.a`, `items[2].rollouts`);
 * what lies deeper is digested whole under its path, so a record keeps a few dozen digests, not one
 * per token. Values are digested as canonical JSON (keys sorted, as `JSON.stringify` writes the
 * rest), so a file reformatted or its keys reordered by a tool reads as unchanged. The digest is a
 * 64-bit non-cryptographic hash: it finds hand edits and damaged bytes, not forgery (whoever can
 * edit a record can also rewrite its checksum).
 */

/** Where a stored record keeps its checksums. */
export const INTEGRITY = 'integrity';
const VERSION = 1;
const DEPTH = 3;

type Obj = Record<string, unknown>;

/** A record's checksums as stored: a digest per field path. */
export interface Integrity {
  version: number;
  fields: Record<string, string>;
}

/** What differs between a record and its checksums: the field, and how. */
export interface FieldChange {
  field: string;
  change: 'changed' | 'removed' | 'added';
}

/** `record` with its checksums, as a persistent store writes it. */
export function sealed<T extends object>(record: T): T & { integrity: Integrity } {
  const { [INTEGRITY]: _old, ...fields } = record as Obj;
  return { ...record, [INTEGRITY]: { version: VERSION, fields: fieldDigests(fields) } } as T & { integrity: Integrity };
}

/** A stored record split from its checksums (`integrity` undefined: written before them, or not an object). */
export function unsealed(value: unknown): { record: unknown; integrity: unknown } {
  if (!isObj(value) || !(INTEGRITY in value)) return { record: value, integrity: undefined };
  const { [INTEGRITY]: integrity, ...record } = value;
  return { record, integrity };
}

/**
 * The first field of `record` that disagrees with `integrity` (the deepest, so an edited number is
 * named rather than the object around it), or undefined when all agree. Checksums of an unknown
 * version or shape are a change of the `integrity` field itself.
 */
export function changedField(record: unknown, integrity: unknown): FieldChange | undefined {
  if (!isObj(integrity) || integrity.version !== VERSION || !isObj(integrity.fields)) return { field: INTEGRITY, change: 'changed' };
  const stored = integrity.fields;
  const actual = fieldDigests(isObj(record) ? record : {});
  let found: FieldChange | undefined;
  const consider = (field: string, change: FieldChange['change']) => {
    if (!found || depthOf(field) > depthOf(found.field)) found = { field, change };
  };
  for (const [field, digest] of Object.entries(stored)) {
    if (!(field in actual)) consider(field, 'removed');
    else if (actual[field] !== digest) consider(field, 'changed');
  }
  for (const field of Object.keys(actual)) if (!(field in stored)) consider(field, 'added');
  return found;
}

/** A digest per field path, down to `DEPTH` names; an empty object or list is a field of its own. */
function fieldDigests(record: Obj): Record<string, string> {
  const out: Record<string, string> = {};
  const visit = (value: unknown, path: string, depth: number) => {
    if (depth < DEPTH && typeof value === 'object' && value !== null) {
      const children = Array.isArray(value)
        ? value.map((v, i) => [`${path}[${i}]`, v] as const)
        : Object.keys(value)
            .sort()
            .filter((key) => isStored((value as Obj)[key]))
            .map((key) => [join(path, key), (value as Obj)[key]] as const);
      if (children.length > 0) {
        for (const [child, v] of children) visit(v, child, depth + 1);
        return;
      }
    }
    out[path] = digest(canonical(value));
  };
  for (const key of Object.keys(record).sort()) if (isStored(record[key])) visit(record[key], join('', key), 1);
  return out;
}

/** JSON text with object keys sorted; everything else as `JSON.stringify` writes it. */
function canonical(value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (isStored(v) ? canonical(v) : 'null')).join(',')}]`;
  const keys = Object.keys(value)
    .sort()
    .filter((key) => isStored((value as Obj)[key]));
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonical((value as Obj)[key])}`).join(',')}}`;
}

/** Whether JSON keeps a value (`undefined` and functions are dropped from objects). */
function isStored(value: unknown): boolean {
  return value !== undefined && typeof value !== 'function' && typeof value !== 'symbol';
}

/** `path.key`, or `path["odd key"]` where the key could be read as more than one name. */
function join(path: string, key: string): string {
  if (/^[A-Za-z_$][\w$-]*$/.test(key)) return path ? `${path}.${key}` : key;
  return `${path}[${JSON.stringify(key)}]`;
}

function depthOf(field: string): number {
  return field.split(/[.[]/).length;
}

/**
 * 64 bits of cyrb53 (bryc's public-domain string hash: two 32-bit multiply-xorshift lanes over the
 * UTF-16 code units, mixed at the end), as 16 hex digits.
 */
function digest(text: string): string {
  let h1 = 0xdeadbeef ^ text.length;
  let h2 = 0x41c6ce57 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (h2 >>> 0).toString(16).padStart(8, '0') + (h1 >>> 0).toString(16).padStart(8, '0');
}

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
