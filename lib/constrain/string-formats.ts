/**
 * JSON Schema string `format`s as patterns over the whole string, the ones OpenAI's structured
 * outputs accept that matter most: `date`, `time`, `date-time` (RFC 3339), `uuid`, `email`,
 * `ipv4`. Each pattern is a subset of what validators accept (ajv-formats, full mode), so every
 * string it lets through validates:
 *
 * - dates have the right number of days in each month, February 29 only in leap years;
 * - times are `hh:mm:ss`, an optional fraction of up to 9 digits, then `Z` or `±hh:mm` (no leap
 *   second 60, which validators accept only at 23:59:60 UTC);
 * - e-mail addresses are a dot-atom local part, `@`, then two or more host labels of up to 63
 *   letters, digits and inner hyphens (no quoted local parts, no IP literals);
 * - IPv4 addresses are four decimal octets without leading zeros.
 */

const DAY_31 = '(?:0[1-9]|[12][0-9]|3[01])';
const DAY_30 = '(?:0[1-9]|[12][0-9]|30)';
const DAY_28 = '(?:0[1-9]|1[0-9]|2[0-8])';
// Divisible by 4 and not by 100, or by 400.
const LEAP_YEAR = '(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)';
const DATE =
  `(?:[0-9]{4}-(?:(?:0[13578]|1[02])-${DAY_31}|(?:0[469]|11)-${DAY_30}|02-${DAY_28})|${LEAP_YEAR}-02-29)`;
const HOUR = '(?:[01][0-9]|2[0-3])';
const MINUTE = '[0-5][0-9]';
const TIME = `${HOUR}:${MINUTE}:${MINUTE}(?:\\.[0-9]{1,9})?(?:Z|[+-]${HOUR}:${MINUTE})`;
const ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
const HEX = '[0-9a-fA-F]';
const OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])';

export const STRING_FORMATS: Readonly<Record<string, string>> = {
  date: DATE,
  time: TIME,
  'date-time': `${DATE}T${TIME}`,
  uuid: `${HEX}{8}-${HEX}{4}-${HEX}{4}-${HEX}{4}-${HEX}{12}`,
  email: `${ATOM}(?:\\.${ATOM})*@${LABEL}(?:\\.${LABEL})+`,
  ipv4: `${OCTET}(?:\\.${OCTET}){3}`,
};
