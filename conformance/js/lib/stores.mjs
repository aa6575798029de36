// The stores the runner can drive: Genkit JS's own, or any module a JS store author names.
//
// A store target is a "kit": { name, make(): store, restore?(store, snapshots, context), close?(store),
// claims?: [capability] }. `make` must return a fresh, empty SessionStore each call.
//
// Built in:
//   memory        InMemorySessionStore()                      (ignores the request context)
//   file          FileSessionStore(tmpdir)                    (one "global" directory for every caller)
//   file-tenants  FileSessionStore(tmpdir, {snapshotPathPrefix: the context's tenant})
//
// A module path (./my-store.mjs, or ./my-store.mjs:exportName) exports a function returning a fresh store
// (the default export, `makeStore`, or the named export), and optionally `restore`, `close` and `claims`.

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { FileSessionStore, InMemorySessionStore } from '@genkit-ai/ai/session-stores';

const tempRoots = [];

function tempDir() {
  if (tempRoots.length === 0) {
    tempRoots.push(fs.mkdtempSync(path.join(os.tmpdir(), 'genkit-js-conformance-')));
    process.on('exit', () => {
      for (const root of tempRoots) fs.rmSync(root, { recursive: true, force: true });
    });
  }
  return fs.mkdtempSync(path.join(tempRoots[0], 'store-'));
}

const tenantPrefix = (options) => {
  const tenant = options?.context?.tenant;
  return tenant === undefined ? 'default' : `tenant-${encodeURIComponent(String(tenant))}`;
};

function fileRestore(prefixOf) {
  // FileSessionStore has no import call: write each snapshot as the file the store itself would write.
  return (store, snapshots, context) => {
    const dir = path.join(store.dirPath, prefixOf({ context }));
    fs.mkdirSync(dir, { recursive: true });
    for (const snapshot of snapshots) {
      fs.writeFileSync(path.join(dir, `${snapshot.snapshotId}.json`), JSON.stringify(snapshot, null, 2));
    }
  };
}

export const BUILT_IN = {
  memory: {
    name: 'memory',
    description: "@genkit-ai/ai's InMemorySessionStore",
    make: () => new InMemorySessionStore(),
    // InMemorySessionStore has no import call: plant the snapshots in its map, as the peer adapter does.
    plants: true, // restore is the runner's own planting, not a store call
    restore: (store, snapshots) => {
      for (const snapshot of snapshots) store.snapshots.set(snapshot.snapshotId, structuredClone(snapshot));
    },
  },
  file: {
    name: 'file',
    description: "@genkit-ai/ai's FileSessionStore (default options: one directory for every caller)",
    make: () => new FileSessionStore(tempDir()),
    plants: true, // restore is the runner's own planting, not a store call
    restore: fileRestore(() => 'global'),
    close: (store) => fs.rmSync(store.dirPath, { recursive: true, force: true }),
  },
  'file-tenants': {
    name: 'file-tenants',
    description:
      "@genkit-ai/ai's FileSessionStore with snapshotPathPrefix taken from the request context's tenant",
    make: () => new FileSessionStore(tempDir(), { snapshotPathPrefix: tenantPrefix }),
    plants: true, // restore is the runner's own planting, not a store call
    restore: fileRestore(tenantPrefix),
    close: (store) => fs.rmSync(store.dirPath, { recursive: true, force: true }),
  },
};

/** The kit for a `--store` argument: a built-in name or `module[:export]`. */
export async function loadStoreKit(spec) {
  if (Object.hasOwn(BUILT_IN, spec)) return BUILT_IN[spec];
  const colon = spec.lastIndexOf(':');
  const hasExport = colon > 1 && !/^[A-Za-z]:[\\/]/.test(spec.slice(colon - 1));
  const file = hasExport ? spec.slice(0, colon) : spec;
  const exportName = hasExport ? spec.slice(colon + 1) : null;
  const resolved = path.resolve(process.cwd(), file);
  if (!fs.existsSync(resolved)) {
    throw new Error(`--store ${spec}: not a built-in store (${Object.keys(BUILT_IN).join(', ')}) nor a file`);
  }
  const mod = await import(pathToFileURL(resolved).href);
  const make = exportName ? mod[exportName] : (mod.makeStore ?? mod.default);
  if (typeof make !== 'function') {
    throw new Error(`--store ${spec}: the module exports no store factory (${exportName ?? 'makeStore or default'})`);
  }
  return {
    name: spec,
    description: `the store module ${spec}`,
    make,
    restore: typeof mod.restore === 'function' ? mod.restore : undefined,
    close: typeof mod.close === 'function' ? mod.close : undefined,
    claims: Array.isArray(mod.claims) ? mod.claims : [],
  };
}
