// The case patterns (conformance/IMPLEMENTING.md, "Patterns"), as conformance/match.py has them.

const UUID4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO_8601 =
  /^(\d{4}-\d{2}-\d{2})(?:[Tt ](\d{2}:\d{2})(?::(\d{2})(?:\.(\d+))?)?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;
const TOKENS = new Set([
  '$exact',
  '$absent',
  '$any',
  '$uuid',
  '$timestamp',
  '$contains',
  '$length',
  '$capture',
  '$same',
  '$notBefore',
]);
const MISSING = Symbol('missing');

export class Mismatch extends Error {
  constructor(path, problem) {
    super(`${problem} at ${path}`);
    this.path = path;
    this.problem = problem;
  }
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

function token(pattern) {
  if (isObject(pattern)) {
    const keys = Object.keys(pattern);
    if (keys.length === 1 && TOKENS.has(keys[0])) return keys[0];
  }
  return null;
}

/** A short, Python-repr-like rendering of a value for messages. */
export function show(value) {
  if (value === MISSING || value === undefined) return 'nothing';
  let text;
  try {
    text = JSON.stringify(value);
  } catch {
    text = String(value);
  }
  if (text === undefined) text = String(value);
  return text.length <= 120 ? text : text.slice(0, 117) + '...';
}

/** Milliseconds since the epoch for an ISO-8601 timestamp (any fraction digits), or null. */
export function parseTimestamp(text) {
  if (typeof text !== 'string') return null;
  const m = ISO_8601.exec(text);
  if (!m) return null;
  const [, date, hm, s, frac, tzRaw] = m;
  const ms = (frac ?? '').slice(0, 3).padEnd(3, '0');
  const micro = Number((frac ?? '').slice(3, 6).padEnd(3, '0')) / 1000;
  let tz = tzRaw ?? 'Z';
  if (tz === 'z') tz = 'Z';
  else if (tz !== 'Z' && tz.length === 3) tz += ':00';
  else if (tz !== 'Z' && !tz.includes(':')) tz = `${tz.slice(0, 3)}:${tz.slice(3)}`;
  const parsed = Date.parse(`${date}T${hm ?? '00:00'}:${s ?? '00'}.${ms}${tz}`);
  return Number.isNaN(parsed) ? null : parsed + micro;
}

const isNumber = (v) => typeof v === 'number';

/** JSON equality: booleans are not numbers, 1 equals 1.0, objects compare key by key. */
export function equal(actual, expected) {
  if (typeof actual === 'boolean' || typeof expected === 'boolean') return actual === expected;
  if (Array.isArray(expected)) {
    return (
      Array.isArray(actual) &&
      actual.length === expected.length &&
      expected.every((e, i) => equal(actual[i], e))
    );
  }
  if (isObject(expected)) {
    if (!isObject(actual)) return false;
    const a = Object.keys(actual);
    const e = Object.keys(expected);
    return a.length === e.length && e.every((k) => Object.hasOwn(actual, k) && equal(actual[k], expected[k]));
  }
  if (expected === null) return actual === null;
  if (isNumber(actual) && isNumber(expected)) return actual === expected;
  return typeof actual === typeof expected && actual === expected;
}

/** Check `actual` against the pattern `expected`; throw Mismatch at the first difference. */
export function match(actual, expected, captures = {}, path = '$') {
  const t = token(expected);
  if (t !== null) {
    matchToken(actual, t, expected[t], captures, path);
    return;
  }
  if (actual === MISSING || actual === undefined) {
    throw new Mismatch(path, `expected ${show(expected)}, found nothing`);
  }
  if (isObject(expected)) {
    if (!isObject(actual)) throw new Mismatch(path, `expected an object, found ${show(actual)}`);
    for (const [key, sub] of Object.entries(expected)) {
      match(Object.hasOwn(actual, key) ? actual[key] : MISSING, sub, captures, `${path}.${key}`);
    }
    return;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) throw new Mismatch(path, `expected an array, found ${show(actual)}`);
    if (actual.length !== expected.length) {
      throw new Mismatch(path, `expected ${expected.length} items, found ${actual.length}: ${show(actual)}`);
    }
    expected.forEach((e, i) => match(actual[i], e, captures, `${path}[${i}]`));
    return;
  }
  if (!equal(actual, expected)) throw new Mismatch(path, `expected ${show(expected)}, found ${show(actual)}`);
}

function matchToken(actual, t, arg, captures, path) {
  const missing = actual === MISSING || actual === undefined;
  if (t === '$absent') {
    if (!missing && actual !== null) throw new Mismatch(path, `expected no value, found ${show(actual)}`);
    return;
  }
  // null is absent, as for $absent: $any and $capture want a value
  if (missing || (actual === null && (t === '$any' || t === '$capture'))) {
    throw new Mismatch(path, `expected a value (${t}), found ${missing ? 'nothing' : 'null'}`);
  }
  switch (t) {
    case '$exact':
      if (!equal(actual, arg)) throw new Mismatch(path, `expected exactly ${show(arg)}, found ${show(actual)}`);
      return;
    case '$any':
      return;
    case '$uuid':
      if (!(typeof actual === 'string' && UUID4.test(actual))) {
        throw new Mismatch(path, `expected a UUID4 string, found ${show(actual)}`);
      }
      return;
    case '$timestamp':
      if (parseTimestamp(actual) === null) {
        throw new Mismatch(path, `expected an ISO-8601 timestamp, found ${show(actual)}`);
      }
      return;
    case '$contains':
      if (!(typeof actual === 'string' && actual.includes(String(arg)))) {
        throw new Mismatch(path, `expected a string containing ${show(String(arg))}, found ${show(actual)}`);
      }
      return;
    case '$length':
      if (!((typeof actual === 'string' || Array.isArray(actual)) && lengthOf(actual) === arg)) {
        throw new Mismatch(path, `expected length ${arg}, found ${show(actual)}`);
      }
      return;
    case '$capture':
      captures[String(arg)] = actual;
      return;
    case '$same':
      if (!Object.hasOwn(captures, String(arg))) throw new Mismatch(path, `nothing was captured as '${arg}'`);
      if (!equal(actual, captures[String(arg)])) {
        throw new Mismatch(
          path,
          `expected the value captured as '${arg}' (${show(captures[String(arg)])}), found ${show(actual)}`
        );
      }
      return;
    case '$notBefore': {
      const earlier = captures[String(arg)];
      const a = parseTimestamp(actual);
      const e = parseTimestamp(earlier);
      if (a === null || e === null) {
        throw new Mismatch(path, `expected a timestamp not before '${arg}' (${show(earlier)}), found ${show(actual)}`);
      }
      if (a < e) throw new Mismatch(path, `expected a timestamp not before ${show(earlier)}, found ${show(actual)}`);
      return;
    }
    default:
      throw new Error(`unknown pattern token ${t}`);
  }
}

/** Length as Python counts it: code points for strings. */
function lengthOf(value) {
  return typeof value === 'string' ? [...value].length : value.length;
}
