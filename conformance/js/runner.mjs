#!/usr/bin/env node
// Runs the genkit_sessions conformance cases (conformance/cases/*.json) against Genkit JS session stores.
//
//   node conformance/js/runner.mjs [--store memory|file|file-tenants|./module.mjs[:export]]...
//        [--profile walk-back|reject] [--area A]... [--case ID]... [--claim CAP]...
//        [--json FILE] [--markdown FILE] [--quiet]
//
// Store cases call the store's own methods (getSnapshot, saveSnapshot, onSnapshotStateChange); abort goes
// through the agent runtime's abort (Genkit JS has no store-level abort); resolve cases run a real agent turn
// (ai.defineCustomAgent over the store, a model defined as a JS function), so Genkit's own session
// resolution decides; codec cases validate the JSON with Genkit's schemas at an action boundary and, for a
// Message, go through Genkit's Message class. See conformance/IMPLEMENTING.md for what each case means.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { genkit, z } from 'genkit/beta';
import { AgentInitSchema, Message, MessageSchema, PartSchema } from '@genkit-ai/ai';
import { SessionSnapshotSchema, SessionStateSchema } from '@genkit-ai/ai/session';
import { GenkitError } from '@genkit-ai/core';
import { parseSchema } from '@genkit-ai/core/schema';
import { match, Mismatch, show } from './lib/match.mjs';
import { BUILT_IN, loadStoreKit } from './lib/stores.mjs';
import { coverageLine, isOk, renderSummary, toJson, writeMarkdown } from './lib/report.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CASES_DIR = path.join(HERE, '..', 'cases');
const WATCH_TIMEOUT_MS = 2000;
const CAPABILITIES = ['restore', 'list', 'delete', 'abort', 'heartbeat', 'watch', 'records', 'sessions', 'tenancy'];
const STATUSES = new Set([
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'UNAUTHENTICATED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
]);
const TERMINAL = new Set(['completed', 'failed', 'aborted']);
const CODEC_SCHEMAS = {
  SessionSnapshot: SessionSnapshotSchema,
  SessionState: SessionStateSchema,
  AgentInit: AgentInitSchema,
  Message: MessageSchema,
  Part: PartSchema,
};
/** Why Genkit JS lacks a capability (shown in the skip reason). */
const MISSING_WHY = {
  restore: 'no verbatim import call',
  list: "Genkit JS's SessionStore cannot list a session's snapshots",
  delete: "Genkit JS's SessionStore cannot delete a session",
  heartbeat: 'Genkit JS refreshes heartbeatAt only inside a detached turn, every 30 s',
  watch: 'no onSnapshotStateChange',
  records: 'Genkit JS has no session records, contract section 6',
  sessions: 'Genkit JS has no session service, contract section 6',
  tenancy: 'the request context does not isolate data',
};

// --- cases ------------------------------------------------------------------------------------------------

function expand(value) {
  if (Array.isArray(value)) return value.map(expand);
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === '$repeat') {
      const [text, n] = value.$repeat;
      return text.repeat(n);
    }
    return Object.fromEntries(keys.map((k) => [k, expand(value[k])]));
  }
  return value;
}

function loadCases({ areas, ids }) {
  const cases = [];
  for (const file of fs.readdirSync(CASES_DIR).filter((f) => f.endsWith('.json')).sort()) {
    const doc = JSON.parse(fs.readFileSync(path.join(CASES_DIR, file), 'utf-8'));
    for (const raw of doc.cases) {
      if (areas.length && !areas.includes(doc.area)) continue;
      if (ids.length && !ids.includes(raw.id)) continue;
      const data = expand(raw);
      cases.push({
        id: raw.id,
        area: doc.area,
        rules: raw.rules ?? [raw.rule],
        rule: (raw.rules ?? [raw.rule])[0],
        description: raw.description,
        action: ['resolve', 'steps', 'codec'].find((a) => a in raw),
        profile: raw.profile ?? null,
        requires: raw.requires ?? [],
        level: raw.level ?? 'must',
        data,
      });
    }
  }
  return cases;
}

// --- errors and expectations ------------------------------------------------------------------------------

class CaseFailed extends Error {}
class CaseSkipped extends Error {}

const fail = (c, message) => new CaseFailed(`[${c.rule}] ${message}`);
const isStatusError = (e) => e !== null && typeof e === 'object' && STATUSES.has(e.status);
const messageOf = (e) => (typeof e?.originalMessage === 'string' ? e.originalMessage : String(e?.message ?? e));
/** A message fit for one report line: its first line, at most 200 characters. */
const oneLine = (text) => {
  const first = String(text).split('\n')[0].trim();
  return first.length <= 200 ? first : first.slice(0, 197) + '...';
};
const describeError = (e) => `${e?.constructor?.name ?? typeof e} (${oneLine(messageOf(e))})`;
const json = (v) => (v === undefined ? null : JSON.parse(JSON.stringify(v)));

function short(value) {
  const text = JSON.stringify(value) ?? String(value);
  return text.length <= 40 ? text : `${text.slice(0, 30)}...(${String(value).length} chars)`;
}

function describe(value) {
  if (value !== null && typeof value === 'object' && 'snapshotId' in value) {
    return `snapshot ${short(value.snapshotId)} (${value.status ?? 'completed'})`;
  }
  const text = show(value);
  return text.length <= 160 ? text : text.slice(0, 157) + '...';
}

function check(c, what, actual, expected, captures) {
  try {
    match(actual, expected, captures);
  } catch (e) {
    if (e instanceof Mismatch) throw fail(c, `${what}: ${e.message}`);
    throw e;
  }
}

function checkRaised(c, what, error, expected) {
  if (!isStatusError(error)) {
    throw fail(c, `${what} raised a raw ${describeError(error)} instead of a status-carrying error`);
  }
  const message = messageOf(error);
  const brief = oneLine(message);
  if (error.status !== expected.status) {
    throw fail(c, `${what} raised ${error.status} (${brief}), expected ${expected.status}`);
  }
  if ('reason' in expected && error.reason !== expected.reason) {
    throw fail(c, `${what} raised reason ${error.reason ?? 'none'}, expected ${expected.reason} (${brief})`);
  }
  for (const text of expected.messageContains ?? []) {
    if (!message.includes(text)) throw fail(c, `${what} raised a message without '${text}': '${brief}'`);
  }
  if ('details' in expected) check(c, `${what} error details`, json(error.detail ?? error.details), expected.details, {});
}

// --- Genkit: one instance, a model defined as a JS function ----------------------------------------------

const ai = genkit({});
const model = ai.defineModel({ name: 'conformance-echo' }, async (request) => {
  const last = request.messages.at(-1);
  const text = (last?.content ?? []).map((p) => p.text ?? '').join('');
  return { message: { role: 'model', content: [{ text: `echo: ${text}` }] }, finishReason: 'stop' };
});
let agentCount = 0;

/**
 * A real Genkit JS agent over `store` (none: client-managed). Its handler records the session Genkit
 * resolved (before the turn adds anything), then runs one turn through `ai.generate` on the JS model.
 */
function defineAgent(store, stateSchema) {
  const captured = { resolved: null };
  const agent = ai.defineCustomAgent(
    { name: `conformance-agent-${++agentCount}`, store, stateSchema },
    async (sess) => {
      captured.resolved = {
        sessionId: sess.session.sessionId,
        parentSnapshotId: sess.lastSnapshot?.snapshotId ?? null,
        state: json(sess.getState()),
      };
      await sess.run(async () => {
        const response = await ai.generate({ model, messages: sess.getMessages() });
        sess.addMessages([response.message.toJSON()]);
        return { finishReason: response.finishReason };
      });
      return { message: sess.getMessages().at(-1) };
    }
  );
  return { agent, captured };
}

async function runTurn(agent, init, context) {
  const bidi = agent.streamBidi(init ?? undefined, { context });
  bidi.send({ message: { role: 'user', content: [{ text: 'conformance turn' }] } });
  bidi.close();
  try {
    for await (const _chunk of bidi.stream) {
      // drain
    }
  } catch {
    // the output says what went wrong
  }
  return await bidi.output;
}

// --- stores -----------------------------------------------------------------------------------------------

const contextFor = (tenant) => (tenant === undefined || tenant === null ? undefined : { tenant });
// a step's or resolve spec's raw context when it has one (one a store must refuse), else its tenant's
const contextOf = (spec) => ('context' in spec ? structuredClone(spec.context) : contextFor(spec.tenant));

function faultError(fault) {
  const message = String(fault.message ?? 'injected store failure');
  const kind = fault.kind ?? 'status';
  if (kind === 'status') return new GenkitError({ status: fault.status, message });
  // Node's own raw errors for a timeout, a refused connection and a denied permission.
  if (kind === 'timeout') return Object.assign(new Error(message), { name: 'TimeoutError', code: 'ETIMEDOUT' });
  if (kind === 'connection') return Object.assign(new Error(message), { code: 'ECONNREFUSED' });
  if (kind === 'permission') return Object.assign(new Error(message), { code: 'EACCES' });
  if (kind === 'unexpected') return new Error(message);
  throw new Error(`unknown fault kind ${kind}`);
}

/** The store, with every read after the first `afterReads` going wrong as the fault says. */
function withFault(store, fault) {
  let reads = 0;
  const wrapped = {
    async getSnapshot(opts) {
      reads += 1;
      if (reads <= Number(fault.afterReads ?? 0)) return store.getSnapshot(opts);
      if (fault.kind === 'returnSnapshot') return structuredClone(fault.snapshot);
      throw faultError(fault);
    },
    saveSnapshot: (...args) => store.saveSnapshot(...args),
  };
  if (typeof store.onSnapshotStateChange === 'function') {
    wrapped.onSnapshotStateChange = (...args) => store.onSnapshotStateChange(...args);
  }
  return wrapped;
}

async function detectCapabilities(kit) {
  const store = await kit.make();
  const has = (m) => typeof store[m] === 'function';
  const found = {
    restore: typeof kit.restore === 'function',
    list: has('listSnapshots'),
    delete: has('deleteSession'),
    abort: true, // the agent runtime's abort works on any SessionStore
    heartbeat: has('heartbeat'),
    watch: has('onSnapshotStateChange'),
    records: false,
    sessions: false,
    tenancy: false,
  };
  try {
    const probe = { snapshotId: 'conformance-probe', sessionId: 'conformance-probe', createdAt: new Date().toISOString() };
    await store.saveSnapshot('conformance-probe', () => probe, { context: contextFor('probe-a') });
    const leaked = await store.getSnapshot({ snapshotId: 'conformance-probe', context: contextFor('probe-b') });
    const own = await store.getSnapshot({ snapshotId: 'conformance-probe', context: contextFor('probe-a') });
    found.tenancy = leaked === undefined && own !== undefined;
  } catch {
    found.tenancy = false;
  }
  await kit.close?.(store);
  return found;
}

class Handle {
  constructor(kit, store) {
    this.kit = kit;
    this.store = store;
    this.abortAgent = null;
  }

  /** Abort through the agent runtime (`agent.abort`), the way Genkit JS aborts a snapshot. */
  async abort(snapshotId, context) {
    this.abortAgent ??= defineAgent(this.store).agent;
    return this.abortAgent.abort(snapshotId, { context });
  }
}

async function seed(c, handle, capabilities) {
  const given = c.data.given ?? {};
  const groups = [[undefined, given.snapshots ?? []], ...Object.entries(given.tenants ?? {})];
  const seeded = [];
  for (const [tenant, snaps] of groups) {
    if (!snaps.length) continue;
    const context = contextFor(tenant);
    try {
      if (capabilities.restore) {
        await handle.kit.restore(handle.store, structuredClone(snaps), context);
      } else {
        for (const snap of snaps) {
          await handle.store.saveSnapshot(snap.snapshotId, () => structuredClone(snap), { context });
        }
      }
    } catch (e) {
      throw fail(c, `the store refused the case's data (${describeError(e)})`);
    }
    for (const snap of snaps) seeded.push([tenant, snap.snapshotId]);
  }
  return seeded;
}

async function readBack(handle, seeded) {
  const found = [];
  for (const [tenant, snapshotId] of seeded) {
    found.push(json(await handle.store.getSnapshot({ snapshotId, context: contextFor(tenant) })));
  }
  return found;
}

// --- resolve cases ----------------------------------------------------------------------------------------

/**
 * The case's validator as a Genkit JS state schema. Genkit validates custom state against the JSON schema
 * of its zod `stateSchema`, so only what a JSON schema can say is expressible.
 */
function stateSchemaFor(spec) {
  if (!spec) return undefined;
  if (spec.validator === 'requireKeys') {
    return z.object(Object.fromEntries(spec.keys.map((k) => [k, z.custom((v) => v !== undefined)]))).passthrough();
  }
  if (spec.validator === 'rejectAll') return z.never();
  if (spec.validator === 'acceptAll') return z.any();
  if (spec.validator === 'raises') {
    throw new CaseSkipped(
      'Genkit JS validates custom state against a JSON schema (stateSchema): a validator that throws cannot be expressed'
    );
  }
  throw new Error(`unknown validator ${spec.validator}`);
}

function sourceOf(init, resolved) {
  // Genkit JS does not report how it obtained the session: tell it from the init and the resumed snapshot.
  if (resolved.parentSnapshotId !== null) return init?.snapshotId ? 'resumed_by_snapshot_id' : 'resumed_by_session_id';
  if (init?.state) return 'hydrated';
  return 'fresh';
}

async function runResolve(c, handle, capabilities) {
  const spec = c.data.resolve;
  const expect = c.data.expect;
  const serverManaged = Boolean(spec.serverManaged);
  const withStore = Boolean(spec.withStore ?? serverManaged);
  if (serverManaged !== withStore) {
    throw new CaseSkipped(
      'Genkit JS derives server-managed state from whether the agent has a store: the two cannot disagree'
    );
  }
  const stateSchema = stateSchemaFor(spec.validator);
  const seeded = await seed(c, handle, capabilities);
  const before = await readBack(handle, seeded);
  let store = withStore ? handle.store : undefined;
  if (store && spec.fault) store = withFault(store, spec.fault);
  const { agent, captured } = defineAgent(store, stateSchema);
  const init = spec.init ?? null;
  let output;
  let thrown = null;
  try {
    output = await runTurn(agent, init === null ? undefined : structuredClone(init), contextOf(spec));
  } catch (e) {
    thrown = e;
  }
  if (thrown !== null && captured.resolved === null) {
    if (!('raise' in expect)) throw fail(c, `resolve raised ${describeError(thrown)}, expected ${expectedOutcome(expect)}`);
    checkRaised(c, 'resolve', thrown, expect.raise);
  } else if (captured.resolved === null) {
    // Genkit resolved to a graceful failure: the agent output carries finishReason "failed" and the error.
    const error = output?.error ?? {};
    if ('raise' in expect) {
      throw fail(c, `resolve returned failure ${error.status}, expected it to raise ${expect.raise.status}`);
    }
    if (!('failure' in expect)) {
      throw fail(c, `resolve failed with ${error.status}: ${oneLine(error.message)}; expected a session`);
    }
    check(c, 'failure', json({ status: error.status, message: error.message, details: error.details }), expect.failure, {});
  } else {
    const source = sourceOf(init, captured.resolved);
    if ('raise' in expect) throw fail(c, `resolve returned a ${source} session, expected it to raise ${expect.raise.status}`);
    if ('failure' in expect) throw fail(c, `resolve returned a ${source} session, expected a failure`);
    const { sessionId, parentSnapshotId, state } = captured.resolved;
    const actual = { source, sessionId, parentSnapshotId, state, messageCount: (state.messages ?? []).length };
    check(c, 'session', actual, expect.session, {});
  }
  const after = await readBack(handle, seeded);
  const changed = seeded.filter((_, i) => JSON.stringify(after[i]) !== JSON.stringify(before[i])).map(([, id]) => id);
  if (changed.length) throw fail(c, `resolving changed what the store holds (snapshots ${JSON.stringify(changed)})`);
}

function expectedOutcome(expect) {
  return 'failure' in expect ? `a failure with ${expect.failure.status}` : 'a session';
}

// --- codec cases ------------------------------------------------------------------------------------------

function runCodec(c) {
  const spec = c.data.codec;
  const expect = c.data.expect;
  let encoded;
  try {
    // What an action boundary does (its input/output schema), then JSON; a Message through the Message class.
    const decoded = parseSchema(structuredClone(spec.json), { schema: CODEC_SCHEMAS[spec.type] });
    encoded = json(spec.type === 'Message' ? new Message(decoded).toJSON() : decoded);
  } catch (e) {
    if (!('raise' in expect)) throw fail(c, `decoding raised ${describeError(e)}`);
    checkRaised(c, 'decoding', e, expect.raise);
    return;
  }
  if ('raise' in expect) throw fail(c, `decoding succeeded, expected ${expect.raise.status}`);
  if (expect.roundTrip) check(c, 'round trip', encoded, { $exact: spec.json }, {});
  if ('wire' in expect) check(c, 'encoded', encoded, expect.wire, {});
}

// --- step cases -------------------------------------------------------------------------------------------

function mutatorFor(spec, snapshotId, seen) {
  if ('async' in spec) {
    // an async function: its call gives a promise, not a snapshot (S3)
    return async (current) => {
      seen.push(current === undefined ? null : json(current));
      return { snapshotId, ...structuredClone(spec.async) };
    };
  }
  return (current) => {
    seen.push(current === undefined ? null : json(current));
    if ('write' in spec) return { snapshotId, ...structuredClone(spec.write) };
    if ('update' in spec) {
      if (current === undefined) return null;
      const merged = { ...current, ...structuredClone(spec.update) };
      return Object.fromEntries(Object.entries(merged).filter(([, v]) => v !== null));
    }
    if (spec.skip) return null;
    if ('returns' in spec) return structuredClone(spec.returns); // not a snapshot, as it is (S3)
    if ('fail' in spec) {
      throw new GenkitError({ status: spec.fail.status, message: String(spec.fail.message ?? 'mutator failed') });
    }
    if ('incrementCustom' in spec) {
      const key = spec.incrementCustom;
      if (current === undefined) {
        return { snapshotId, sessionId: spec.sessionId, status: 'pending', state: { custom: { [key]: 1 } } };
      }
      const custom = { ...(current.state?.custom ?? {}) };
      custom[key] = Number(custom[key] ?? 0) + 1;
      return { ...current, state: { ...(current.state ?? {}), custom } };
    }
    throw new Error(`unknown mutator ${JSON.stringify(spec)}`);
  };
}

function tamper(value, depth = 0) {
  if (depth > 6 || value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    for (const item of value) tamper(item, depth + 1);
    try {
      value.push('conformance-tampered');
    } catch {
      // frozen: fine
    }
    return;
  }
  for (const key of Object.keys(value)) tamper(value[key], depth + 1);
  try {
    value['conformance-tampered'] = true;
    for (const key of ['snapshotId', 'sessionId', 'text', 'createdAt']) {
      if (typeof value[key] === 'string') value[key] = 'conformance-tampered';
    }
    if (typeof value.status === 'string') value.status = 'failed';
  } catch {
    // frozen: fine
  }
}

async function watch(c, handle, step, captures) {
  const store = handle.store;
  const context = contextOf(step);
  const statuses = [];
  const queue = [];
  let wake = null;
  let last;
  let unsubscribe;
  try {
    unsubscribe = store.onSnapshotStateChange(
      step.snapshotId,
      (snapshot) => {
        // A snapshot-change stream: a change that keeps the status is not a status change.
        const status = snapshot?.status ?? 'completed';
        if (status === last) return;
        last = status;
        queue.push(status);
        wake?.();
      },
      { context }
    );
  } catch (e) {
    throw e;
  }
  const next = async () => {
    if (!queue.length) {
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, WATCH_TIMEOUT_MS);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = null;
    }
    return queue.shift();
  };
  try {
    const first = await next();
    if (first === undefined) {
      throw fail(c, `watch ${short(step.snapshotId)} yielded no status within ${WATCH_TIMEOUT_MS / 1000} s`);
    }
    statuses.push(first);
    for (const inner of step.during ?? []) await runStep(c, handle, inner, captures);
    while (!TERMINAL.has(statuses.at(-1))) {
      const status = await next();
      if (status === undefined) break;
      statuses.push(status);
    }
  } finally {
    if (typeof unsubscribe === 'function') unsubscribe();
  }
  return statuses;
}

/**
 * The refusals every restore makes (docs/contract.md, Restore), over the whole batch before any of it
 * is planted by a built-in kit. Genkit JS has no restore of its own, so a restore case on a built-in
 * store judges the runner's planting, never Genkit; a store module's exported restore is judged as is.
 */
function checkRestorable(snapshots) {
  const refuse = (message, reason) => {
    const error = new GenkitError({ status: 'INVALID_ARGUMENT', message });
    if (reason !== undefined) error.reason = reason;
    return error;
  };
  for (const s of snapshots) {
    const id = JSON.stringify(s.snapshotId);
    if (!s.createdAt) throw refuse(`snapshot ${id} has no createdAt; a restore stamps nothing`);
    if (s.status === 'expired') throw refuse(`snapshot ${id}: 'expired' is computed on read and never stored`);
    const top = s.sessionId ?? null;
    const inner = s.state?.sessionId ?? null;
    if (top !== null && inner !== null && top !== inner) {
      throw refuse(`snapshot ${id} names session ${JSON.stringify(top)} but its state names ${JSON.stringify(inner)}`);
    }
    if (top === null && inner === null) throw refuse(`snapshot ${id} has no sessionId`, 'SESSION_ID_REQUIRED');
  }
}

async function perform(c, handle, step, captures, seen) {
  const store = handle.store;
  const context = contextOf(step);
  switch (step.op) {
    case 'get': {
      const opts = { context };
      if ('snapshotId' in step) opts.snapshotId = step.snapshotId;
      if ('sessionId' in step) opts.sessionId = step.sessionId;
      return json(await store.getSnapshot(opts));
    }
    case 'save': {
      const id = await store.saveSnapshot(step.snapshotId, mutatorFor(step.mutator, step.snapshotId, seen), { context });
      // Genkit JS's saveSnapshot returns the id it wrote (null: nothing written); read what was stored.
      return id === null || id === undefined ? null : json(await store.getSnapshot({ snapshotId: id, context }));
    }
    case 'list': {
      const listed = await store.listSnapshots(step.sessionId, { context });
      return listed.map((s) => (typeof s === 'string' ? s : s.snapshotId));
    }
    case 'delete':
      return json(await store.deleteSession(step.sessionId, { context }));
    case 'abort':
      return json(await handle.abort(step.snapshotId, context));
    case 'heartbeat':
      return json(await store.heartbeat(step.snapshotId, { context }));
    case 'watch':
      return watch(c, handle, step, captures);
    case 'concurrentSaves': {
      const count = Number(step.count);
      await Promise.all(
        Array.from({ length: count }, () =>
          store.saveSnapshot(step.snapshotId, mutatorFor(step.mutator, step.snapshotId, []), { context })
        )
      );
      return json(await store.getSnapshot({ snapshotId: step.snapshotId, context }));
    }
    case 'tamper': {
      const opts = 'snapshotId' in step ? { snapshotId: step.snapshotId } : { sessionId: step.sessionId };
      const first = await store.getSnapshot({ ...opts, context });
      if (first === undefined || first === null) throw fail(c, `tamper: nothing to read at ${JSON.stringify(opts)}`);
      const original = JSON.stringify(first);
      tamper(first);
      const again = await store.getSnapshot({ ...opts, context });
      if (again === undefined || again === null || JSON.stringify(again) !== original) {
        throw fail(c, 'a caller changed what the store holds by modifying what a read returned');
      }
      return json(again);
    }
    case 'restore': {
      const snapshots = structuredClone(step.snapshots);
      if (handle.kit.plants) checkRestorable(snapshots); // a store module's own restore makes its refusals itself
      await handle.kit.restore(store, snapshots, context);
      return snapshots.length;
    }
    case 'record':
    case 'service':
      throw new CaseSkipped(`Genkit JS has no ${step.op === 'record' ? 'session records' : 'session service'}`);
    default:
      throw new Error(`unknown op ${step.op}`);
  }
}

async function runStep(c, handle, step, captures) {
  const target = step.snapshotId ?? step.sessionId;
  const what = target === undefined || target === null ? `step ${step.op}` : `step ${step.op} ${short(target)}`;
  const expect = step.expect ?? {};
  const seen = [];
  let result;
  try {
    result = await perform(c, handle, step, captures, seen);
  } catch (e) {
    if (e instanceof CaseFailed || e instanceof CaseSkipped) throw e;
    if (!('raise' in expect)) {
      if (!isStatusError(e)) throw fail(c, `${what} raised a raw ${describeError(e)} [S12]`);
      throw fail(c, `${what} raised ${e.status}: ${oneLine(messageOf(e))}`);
    }
    checkRaised(c, what, e, expect.raise);
    return;
  }
  if ('raise' in expect) {
    throw fail(c, `${what} returned ${describe(result)}, expected it to raise ${expect.raise.status}`);
  }
  const mutator = step.mutator;
  if (mutator && typeof mutator === 'object' && 'sees' in mutator) {
    check(c, `${what}: what the mutator saw`, seen.length ? seen.at(-1) : null, mutator.sees, captures);
  }
  if (expect.none && result !== null) throw fail(c, `${what} returned ${describe(result)}, expected none`);
  if ('snapshot' in expect) {
    if (result === null || typeof result !== 'object' || Array.isArray(result)) {
      throw fail(c, `${what} returned ${describe(result)}, expected a snapshot`);
    }
    check(c, what, result, expect.snapshot, captures);
  }
  if ('value' in expect) check(c, what, result, { $exact: expect.value }, captures);
  if ('snapshotIds' in expect) check(c, what, result, expect.snapshotIds, captures);
  if ('statuses' in expect) check(c, what, result, expect.statuses, captures);
  if ('firstStatus' in expect) check(c, `${what} (first status)`, result?.[0] ?? null, expect.firstStatus, captures);
  if ('lastStatus' in expect) check(c, `${what} (last status)`, result?.at(-1) ?? null, expect.lastStatus, captures);
}

async function runSteps(c, handle, capabilities) {
  await seed(c, handle, capabilities);
  const captures = {};
  for (const step of c.data.steps) await runStep(c, handle, step, captures);
}

// --- the suite --------------------------------------------------------------------------------------------

function skipReason(c, profile, capabilities) {
  if (c.profile !== null && c.profile !== profile) return `profile ${c.profile} only`;
  const missing = c.requires.filter((cap) => !capabilities[cap]).sort();
  if (missing.length) {
    return `store lacks ${missing.map((cap) => (MISSING_WHY[cap] ? `${cap} (${MISSING_WHY[cap]})` : cap)).join(', ')}`;
  }
  return null;
}

async function runCase(c, kit, profile, capabilities) {
  const reason = skipReason(c, profile, capabilities);
  if (reason !== null) return { case: c, outcome: 'skipped', message: reason, seconds: 0 };
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  let store;
  try {
    if (c.action === 'codec') {
      runCodec(c);
    } else {
      store = await kit.make();
      const handle = new Handle(kit, store);
      if (c.action === 'resolve') await runResolve(c, handle, capabilities);
      else await runSteps(c, handle, capabilities);
    }
  } catch (e) {
    if (e instanceof CaseSkipped) return { case: c, outcome: 'skipped', message: e.message, seconds: elapsed() };
    if (e instanceof CaseFailed) return { case: c, outcome: 'failed', message: e.message, seconds: elapsed() };
    const message = `[${c.rule}] the case could not run: ${describeError(e)}`;
    return { case: c, outcome: 'failed', message, seconds: elapsed() };
  } finally {
    if (store !== undefined) await kit.close?.(store);
  }
  return { case: c, outcome: 'passed', message: '', seconds: elapsed() };
}

async function runStore(kit, cases, { profile, claims }) {
  const started = performance.now();
  const detected = await detectCapabilities(kit);
  const allClaims = new Set([...claims, ...(kit.claims ?? [])]);
  const capabilities = Object.fromEntries(CAPABILITIES.map((cap) => [cap, detected[cap] || allClaims.has(cap)]));
  const results = [];
  for (const c of cases) results.push(await runCase(c, kit, profile, capabilities));
  return {
    store: kit.name,
    description: kit.description,
    profile,
    capabilities,
    claimedNotDetected: [...allClaims].filter((cap) => !detected[cap]).sort(),
    results,
    seconds: (performance.now() - started) / 1000,
  };
}

function parseArgs(argv) {
  const opts = { stores: [], profile: 'walk-back', areas: [], ids: [], claims: [], json: null, markdown: null, quiet: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${arg} needs a value`);
      return argv[++i];
    };
    if (arg === '--store') opts.stores.push(value());
    else if (arg === '--profile') opts.profile = value();
    else if (arg === '--area') opts.areas.push(value());
    else if (arg === '--case') opts.ids.push(value());
    else if (arg === '--claim') opts.claims.push(value());
    else if (arg === '--json') opts.json = value();
    else if (arg === '--markdown') opts.markdown = value();
    else if (arg === '--quiet') opts.quiet = true;
    else if (arg === '--help' || arg === '-h') {
      console.log(
        'usage: node conformance/js/runner.mjs [--store NAME|MODULE[:EXPORT]]... [--profile walk-back|reject]\n' +
          '       [--area AREA]... [--case ID]... [--claim CAPABILITY]... [--json FILE] [--markdown FILE]\n' +
          `built-in stores: ${Object.keys(BUILT_IN).join(', ')} (default: all of them)`
      );
      process.exit(0);
    } else throw new Error(`unknown argument ${arg}`);
  }
  if (!['walk-back', 'reject'].includes(opts.profile)) throw new Error(`unknown profile ${opts.profile}`);
  if (!opts.stores.length) opts.stores = Object.keys(BUILT_IN);
  return opts;
}

async function main() {
  const argv = process.argv.slice(2);
  const opts = parseArgs(argv);
  const cases = loadCases(opts);
  const reports = [];
  for (const spec of opts.stores) {
    const kit = await loadStoreKit(spec);
    const report = await runStore(kit, cases, opts);
    reports.push(report);
    console.log(opts.quiet ? `${report.store}: ${coverageLine(report)}` : renderSummary(report));
    console.log('');
  }
  if (opts.json) {
    const data = reports.length === 1 ? toJson(reports[0]) : { reports: reports.map(toJson) };
    fs.writeFileSync(opts.json, JSON.stringify(data, null, 2) + '\n', 'utf-8');
  }
  if (opts.markdown) {
    const shown = argv.map((a) => (a === opts.json ? 'FILE' : a)).join(' ');
    writeMarkdown(reports, opts.markdown, `node conformance/js/runner.mjs ${shown}`.trim());
  }
  process.exitCode = reports.every(isOk) ? 0 : 1;
}

main().catch((e) => {
  console.error(e?.stack ?? String(e));
  process.exitCode = 2;
});
