// An ordinary Node.js LevelDB program, on classic-level or leveldown as npm installs them (a
// prebuilt addon with LevelDB 1.22 or 1.20 compiled in, no C API): it knows nothing of
// leveldb-bloom. The same workload as ../plyvel/program.py, and the same name=value lines.
//
// Usage: node program.js ADDON DB_DIR          (ADDON: classic-level or leveldown)
//        node program.js ADDON --read DB_DIR   (every pair counted and digested)
'use strict';
const crypto = require('crypto');
const { promisify } = require('util');

// Fewer keys than plyvel's: each of Node.js's awaited calls costs microseconds.
const N = 20000;
const key = (i) => 'key' + String(i).padStart(8, '0');
const value = (i) => 'value-' + i * 7919;

// The addon's database, with the promise API classic-level has and leveldown's callbacks.
function open(addon, dir, options) {
  if (addon === 'classic-level') {
    const { ClassicLevel } = require('classic-level');
    const db = new ClassicLevel(dir, options);
    return db.open().then(() => ({
      put: (k, v) => db.put(k, v), del: (k) => db.del(k), batch: (ops) => db.batch(ops),
      get: (k) => db.get(k).then((v) => (v === undefined ? null : v),
        (e) => { if (e.code === 'LEVEL_NOT_FOUND') return null; throw e; }),
      compact: () => db.compactRange('\x00', '\xff'), close: () => db.close(),
      entries: async () => { const out = []; for await (const [k, v] of db.iterator()) out.push([k, v]); return out; },
    }));
  }
  const db = require('leveldown')(dir);
  const call = (f, ...args) => promisify(f).call(db, ...args);
  return call(db.open, options).then(() => ({
    del: (k) => call(db.del, k), batch: (ops) => call(db.batch, ops),
    get: (k) => call(db.get, k, { asBuffer: false }).catch((e) => {
      if (/NotFound/.test(e.message)) return null; throw e; }),
    compact: () => call(db.compactRange, '\x00', '\xff'), close: () => call(db.close),
    entries: () => new Promise((resolve, reject) => {
      const it = db.iterator({ keyAsBuffer: false, valueAsBuffer: false }), out = [];
      const next = () => it.next((e, k, v) => {
        if (e) return reject(e);
        if (k === undefined) return it.end(() => resolve(out));
        out.push([k, v]); next();
      });
      next();
    }),
  }));
}

async function write(addon, dir) {
  let db = await open(addon, dir, { createIfMissing: true, errorIfExists: true, writeBufferSize: 256 << 20 });
  const ops = [];
  for (let i = 0; i < N; i++) ops.push({ type: 'put', key: key(i), value: value(i) });
  await db.batch(ops);
  let deletes = 0;
  for (let i = 0; i < N; i += 10) { await db.del(key(i)); deletes++; }
  await db.compact();
  await db.close();

  db = await open(addon, dir, {});
  const digest = crypto.createHash('sha256');
  let present = 0, absent = 0;
  for (let i = 0; i < N; i++) {
    const got = await db.get(key(i));
    const expected = i % 10 === 0 ? null : value(i);
    if (got !== expected) throw new Error(`key ${i}: read ${got}, expected ${expected}`);
    if (got !== null) { present++; digest.update(key(i) + '=' + got + '\n'); }
  }
  for (let i = 0; i < N; i++) {
    if ((await db.get(key(i) + '~')) !== null) throw new Error(`absent key ${i} found`);
    absent++;
  }
  await db.close();
  console.log(`puts=${N}\ndeletes=${deletes}\npresent_lookups=${present}\n` +
              `absent_lookups=${absent}\ndigest=${digest.digest('hex')}`);
}

async function read(addon, dir) {
  const db = await open(addon, dir, {});
  const digest = crypto.createHash('sha256');
  const entries = await db.entries();
  for (const [k, v] of entries) digest.update(k + '=' + v + '\n');
  await db.close();
  console.log(`pairs=${entries.length}\ndigest=${digest.digest('hex')}`);
}

const [addon, first, second] = process.argv.slice(2);
(first === '--read' ? read(addon, second) : write(addon, first)).catch((e) => {
  console.error('program.js: ' + e.message);
  process.exit(1);
});
