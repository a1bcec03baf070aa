// pinned.js: the member's client core, shared by the catalog and the apps.
//
// What it keeps, all in this origin's IndexedDB (database "pinned"):
//   keys/member      the member's X25519 key pair (libsodium crypto_box_keypair)
//   connections/ID   {service, sealed}: the connection (credential, cap, account)
//                    as a crypto_box_seal box to the member's own public key
//   events           the apps' typed events ({app, type, at, ...}), folded into app state
// Nothing is kept in localStorage or sessionStorage. docs/WEB.md explains the
// choices and how a messenger embedding this syncs the sealed blobs.
//
// Every op goes: the connection is opened (member present), the cap is
// checked (capAllows), a one-shot grant bound to the op (and for a write, to
// the exact args the member saw through /v1/consent) is sealed to the bot's
// public key, and the relay carries it. A `rotated` pair on any answer, error
// or not, is opened and re-stored before anything else happens.
(function () {
  'use strict';

  const GRANT_TTL_MS = 2 * 60 * 1000; // one-shot grants live two minutes
  const DB_NAME = 'pinned';
  const DB_VERSION = 1;

  class PinnedError extends Error {
    constructor(code, message, extra) {
      super(message);
      this.code = code;
      Object.assign(this, extra || {});
    }
  }

  // ---- IndexedDB -----------------------------------------------------------

  let dbPromise = null;
  function db() {
    if (!dbPromise) {
      dbPromise = new Promise((resolve, reject) => {
        const req = indexedDB.open(DB_NAME, DB_VERSION);
        req.onupgradeneeded = () => {
          const d = req.result;
          d.createObjectStore('keys');
          d.createObjectStore('connections');
          d.createObjectStore('events', { autoIncrement: true });
        };
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error);
      });
    }
    return dbPromise;
  }

  // withStore runs fn(store) in one transaction and resolves with the value
  // of the request fn returns (if any) once the transaction completed.
  async function withStore(name, mode, fn) {
    const d = await db();
    return new Promise((resolve, reject) => {
      const t = d.transaction(name, mode);
      let result;
      const req = fn(t.objectStore(name));
      if (req) req.onsuccess = () => { result = req.result; };
      t.oncomplete = () => resolve(result);
      t.onerror = () => reject(t.error);
      t.onabort = () => reject(t.error);
    });
  }

  const idb = {
    get: (store, key) => withStore(store, 'readonly', (s) => s.get(key)),
    put: (store, key, value) => withStore(store, 'readwrite', (s) => s.put(value, key)),
    del: (store, key) => withStore(store, 'readwrite', (s) => s.delete(key)),
    all: (store) => withStore(store, 'readonly', (s) => s.getAll()),
  };

  // ---- libsodium -------------------------------------------------------------

  let sodium = null;
  async function ready() {
    if (!sodium) {
      await window.sodium.ready;
      sodium = window.sodium;
    }
    return sodium;
  }
  const b64 = (u8) => sodium.to_base64(u8, sodium.base64_variants.ORIGINAL);
  const unb64 = (s) => sodium.from_base64(s, sodium.base64_variants.ORIGINAL);

  // seal: JSON → crypto_box_seal to a base64 X25519 public key → base64.
  function seal(obj, publicKeyB64) {
    const plain = sodium.from_string(JSON.stringify(obj));
    try {
      return b64(sodium.crypto_box_seal(plain, unb64(publicKeyB64)));
    } finally {
      plain.fill(0);
    }
  }

  // open: base64 sealed box → crypto_box_seal_open with a key pair → JSON.
  function open(sealedB64, kp) {
    const plain = sodium.crypto_box_seal_open(unb64(sealedB64), kp.publicKey, kp.privateKey);
    try {
      return JSON.parse(sodium.to_string(plain));
    } finally {
      plain.fill(0);
    }
  }

  // ---- the member's key ----------------------------------------------------

  // memberKey loads the member's key pair, generating it on first use; one
  // promise, so two callers never generate two keys.
  let memberKP = null;
  function memberKey() {
    if (!memberKP) {
      memberKP = (async () => {
        await ready();
        let kp = await idb.get('keys', 'member');
        if (!kp) {
          const k = sodium.crypto_box_keypair();
          kp = { publicKey: k.publicKey, privateKey: k.privateKey, created: new Date().toISOString() };
          try {
            await withStore('keys', 'readwrite', (st) => st.add(kp, 'member')); // never replaces a key
          } catch (e) {
            kp = await idb.get('keys', 'member'); // another tab made it first
            if (!kp) throw e;
          }
        }
        return kp;
      })();
      memberKP.catch(() => { memberKP = null; });
    }
    return memberKP;
  }
  async function memberPublicKey() { return b64((await memberKey()).publicKey); }

  // ---- the catalog and the bots ------------------------------------------------

  async function api(path, body) {
    const init = { method: body === undefined ? 'GET' : 'POST', credentials: 'same-origin', cache: 'no-store', headers: {} };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const resp = await fetch(path, init);
    let data = null;
    try { data = await resp.json(); } catch (e) { data = null; }
    return { ok: resp.ok, status: resp.status, body: data };
  }

  let catalogPromise = null;
  function catalog() {
    if (!catalogPromise) {
      catalogPromise = api('/api/integrations').then((r) => {
        if (!r.ok) throw new PinnedError('catalog_unavailable', 'The catalog could not be loaded.');
        const byId = {};
        for (const s of r.body.services) {
          s.opsByName = {};
          for (const op of s.ops) s.opsByName[op.name] = op;
          byId[s.id] = s;
        }
        r.body.byId = byId;
        return r.body;
      });
    }
    return catalogPromise;
  }

  let botsPromise = null;
  function bots() {
    if (!botsPromise) {
      botsPromise = api('/api/bots').then((r) => (r.ok ? r.body.filter((b) => b.public_key) : []));
    }
    return botsPromise;
  }
  let chosenBot = null;
  async function currentBot() {
    const list = await bots();
    if (!list.length) throw new PinnedError('no_bot', 'No bot is reachable right now; try again later.');
    if (!chosenBot) chosenBot = (await idb.get('keys', 'bot')) || list[0].name;
    return list.find((b) => b.name === chosenBot) || list[0];
  }
  async function chooseBot(name) { chosenBot = name; await idb.put('keys', 'bot', name); }

  // fillBotSelect fills the page's <select id="bot">.
  async function fillBotSelect(select) {
    const list = await bots();
    const cur = list.length ? (await currentBot()).name : '';
    select.textContent = '';
    for (const b of list) {
      const o = document.createElement('option');
      o.value = b.name;
      o.textContent = b.name;
      o.selected = b.name === cur;
      select.append(o);
    }
    if (!list.length) {
      const o = document.createElement('option');
      o.textContent = 'no bot reachable';
      select.append(o);
    }
    select.addEventListener('change', () => chooseBot(select.value));
  }

  // ---- connections ----------------------------------------------------------

  // A connection's plaintext, sealed to the member's key:
  //   {v:1, service, kind:"pat"|"oauth", cap:"read"|"write", secret, refresh,
  //    token_expires_at, account, connected_at, resources?}
  // resources, when set, limits every grant to chosen resources by kind
  // ({repository: ["octo/notes"]}, the manifest's resources).
  async function storeConnection(conn) {
    const pub = await memberPublicKey();
    await idb.put('connections', conn.service, { service: conn.service, sealed: seal(conn, pub) });
  }
  async function getConnection(service) {
    const rec = await idb.get('connections', service);
    if (!rec) return null;
    const conn = open(rec.sealed, await memberKey());
    if (conn.v !== 1 || conn.service !== service) throw new PinnedError('connection_invalid', 'The stored connection is not valid; disconnect and connect again.');
    return conn;
  }
  async function connections() {
    const out = {};
    const kp = await memberKey();
    for (const rec of await idb.all('connections')) {
      try {
        const c = open(rec.sealed, kp);
        if (c.v === 1 && c.service === rec.service) out[rec.service] = c;
      } catch (e) { /* a blob this key cannot open is ignored */ }
    }
    return out;
  }
  // revoke asks the provider, through pinned web and the broker, to revoke
  // an OAuth connection's tokens (RFC 7009). The tokens leave the page only
  // sealed to the broker's revoke_key. It answers {revoked: true} when the
  // provider confirmed, else {revoked: false, why}; it never throws for a
  // refusal, so Disconnect always goes on.
  async function revoke(service) {
    const conn = await getConnection(service);
    const svc = (await catalog()).byId[service];
    if (!conn || conn.kind !== 'oauth') return { revoked: false, why: 'a pasted token cannot be revoked from here' };
    if (!svc || !svc.revoke_key) return { revoked: false, why: (svc ? svc.name : service) + ' cannot be revoked through this broker' };
    await ready();
    const tokens = {};
    if (conn.refresh) tokens.refresh_token = conn.refresh;
    if (conn.secret) tokens.access_token = conn.secret;
    const r = await api('/api/revoke', { service, sealed: seal(tokens, svc.revoke_key) });
    if (r.ok) return { revoked: true };
    const msg = r.body && r.body.error ? r.body.error.message : 'HTTP ' + r.status;
    return { revoked: false, why: 'the provider did not confirm the revocation (' + msg + ')' };
  }
  async function disconnect(service) {
    await revokeStanding(service).catch(() => {}); // best effort: it lapses within its TTL anyway
    await idb.del('connections', service);
    await clearEvents(service);
    await clearActivity(service);
  }
  const clearActivity = (service) => deleteEvents((ev) => ev.app === 'activity' && ev.service === service);

  // setResources limits a connection to chosen resources by kind (null or
  // {} lifts the limit) and re-seals it; every later grant carries it.
  async function setResources(service, resources) {
    const conn = await getConnection(service);
    if (!conn) throw new PinnedError('not_connected', 'Not connected.');
    const kept = {};
    for (const [kind, names] of Object.entries(resources || {})) {
      const uniq = [...new Set((names || []).filter((n) => typeof n === 'string' && n))];
      if (uniq.length) kept[kind] = uniq;
    }
    if (Object.keys(kept).length) conn.resources = kept; else delete conn.resources;
    await storeConnection(conn);
    return conn;
  }

  // limitText says what a connection's limit allows, for a consent:
  // "Repositories: octo/notes, octo/hello", or '' with no limit.
  function limitText(svc, conn) {
    if (!conn || !conn.resources) return '';
    return Object.entries(conn.resources).map(([kind, names]) => {
      const r = (svc && svc.resources && svc.resources[kind]) || { label: kind };
      return r.label + ': ' + names.join(', ');
    }).join('; ');
  }

  // capAllows: a read-only connection mints read grants only; a read & write
  // connection mints both. Anything else mints nothing.
  function capAllows(cap, access) {
    if (access === 'read') return cap === 'read' || cap === 'write';
    if (access === 'write') return cap === 'write';
    return false;
  }

  async function setCap(service, cap) {
    if (cap !== 'read' && cap !== 'write') throw new PinnedError('bad_cap', 'The cap is read or write.');
    const conn = await getConnection(service);
    if (!conn) throw new PinnedError('not_connected', 'Not connected.');
    conn.cap = cap;
    await storeConnection(conn); // re-sealed with the new cap inside
    return conn;
  }

  function rfc3339(ms) { return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z'); }

  // mintGrant seals a one-shot grant for one op to a bot. It refuses any
  // access beyond the connection's cap, whatever the caller asks.
  async function mintGrant(conn, bot, opName, access, argsSha256) {
    if (!capAllows(conn.cap, access)) {
      throw new PinnedError('cap_refused', 'This connection is read-only: change its access to read & write in Integrations first.');
    }
    const g = {
      v: 1, service: conn.service, access: access, kind: conn.kind, secret: conn.secret,
      expires_at: rfc3339(Date.now() + GRANT_TTL_MS),
      nonce: sodium.to_base64(sodium.randombytes_buf(16), sodium.base64_variants.URLSAFE_NO_PADDING),
      member_key: await memberPublicKey(), op: opName,
    };
    if (conn.refresh) g.refresh = conn.refresh;
    if (conn.token_expires_at) g.token_expires_at = conn.token_expires_at;
    if (argsSha256) g.args_sha256 = argsSha256;
    if (conn.resources && Object.keys(conn.resources).length) g.resources = conn.resources;
    return seal(g, bot.public_key);
  }

  // ---- standing read grants ----------------------------------------------
  // A standing read grant lets the bot run a service's read ops without a
  // tap per op (docs/SECURITY.md, "Standing read grants"). It lives in this
  // page only: re-sealed (renewed) every standingRenewMs while the page is
  // open, well before its STANDING_TTL_MS expiry. Closing the page stops
  // the renewals, so the grant lapses within the TTL; Revoke stops it at
  // once at the bot. Writes still take a one-shot grant and a consent.
  const STANDING_TTL_MS = 10 * 60 * 1000;
  let standingRenewMs = 4 * 60 * 1000;
  const standing = {}; // service → {series, bot, sealed, expiresAt, renewals, since, timer}

  async function sealStanding(conn, bot, series) {
    const expiresAt = Date.now() + STANDING_TTL_MS;
    const g = {
      v: 1, service: conn.service, access: 'read', kind: conn.kind, secret: conn.secret,
      expires_at: rfc3339(expiresAt),
      nonce: sodium.to_base64(sodium.randombytes_buf(16), sodium.base64_variants.URLSAFE_NO_PADDING),
      member_key: await memberPublicKey(), standing: series,
    };
    if (conn.refresh) g.refresh = conn.refresh;
    if (conn.token_expires_at) g.token_expires_at = conn.token_expires_at;
    if (conn.resources && Object.keys(conn.resources).length) g.resources = conn.resources;
    return { sealed: seal(g, bot.public_key), expiresAt: expiresAt };
  }

  // startStanding seals a new standing read grant for service (after the
  // member allowed it on its consent card) and keeps renewing it.
  async function startStanding(service) {
    const conn = await getConnection(service);
    if (!conn) throw new PinnedError('not_connected', 'Connect this service in Integrations first.');
    if (standing[service]) await revokeStanding(service).catch(() => {});
    const series = sodium.to_base64(sodium.randombytes_buf(16), sodium.base64_variants.URLSAFE_NO_PADDING);
    standing[service] = { series: series, bot: await currentBot(), renewals: 0, since: Date.now() };
    await renewStanding(service);
    return standingState(service);
  }

  // renewStanding re-seals the standing grant (same series, fresh nonce
  // and expiry) and schedules the next renewal.
  async function renewStanding(service) {
    const st = standing[service];
    if (!st) return;
    clearTimeout(st.timer);
    const conn = await getConnection(service);
    if (!conn) { delete standing[service]; return; }
    const r = await sealStanding(conn, st.bot, st.series);
    if (standing[service] !== st) return; // revoked meanwhile
    st.sealed = r.sealed;
    st.expiresAt = r.expiresAt;
    st.renewals++;
    st.timer = setTimeout(() => { renewStanding(service).catch(() => {}); }, standingRenewMs);
  }

  // revokeStanding stops renewing and revokes the series at the bot: its
  // next op under any renewal is refused grant_revoked.
  async function revokeStanding(service) {
    const st = standing[service];
    if (!st) return false;
    clearTimeout(st.timer);
    delete standing[service];
    const r = await api('/api/bots/' + encodeURIComponent(st.bot.name) + '/revoke', { grant: st.sealed });
    if (!r.ok) throw errorFrom(r);
    return true;
  }

  // standingState is what the page shows of a standing grant (null: none).
  function standingState(service) {
    const st = standing[service];
    if (!st) return null;
    return { sealed: st.sealed, expiresAt: st.expiresAt, renewals: st.renewals, since: st.since, bot: st.bot.name };
  }

  // adoptRotated opens a rotated pair (sealed to the member) and puts it in
  // conn; persist stores the connection at once.
  async function adoptRotated(conn, sealed, persist) {
    const r = open(sealed, await memberKey());
    if (r.v !== 1 || r.service !== conn.service || r.kind !== 'oauth' || typeof r.access !== 'string' || !r.access) {
      throw new PinnedError('rotated_invalid', 'The bot sent back a token pair that is not valid.');
    }
    conn.kind = 'oauth';
    conn.secret = r.access;
    if (r.refresh) conn.refresh = r.refresh;
    conn.token_expires_at = r.token_expires_at || '';
    if (persist) await storeConnection(conn);
    rotations++;
  }
  let rotations = 0;

  async function consent(service, opName, args) {
    const bot = await currentBot();
    const r = await api('/api/bots/' + encodeURIComponent(bot.name) + '/consent', { service: service, op: opName, args: args || {} });
    if (!r.ok) throw errorFrom(r);
    return r.body; // {service, op, access, confirm, target, sends, text, args_sha256}
  }

  function errorFrom(r) {
    const e = (r.body && r.body.error) || {};
    return new PinnedError(e.code || 'http_' + r.status, e.message || 'The request failed (HTTP ' + r.status + ').',
      { status: r.status, arg: e.arg, upstreamStatus: e.upstream_status || 0 });
  }

  // runWith runs one op with conn (opened), handling rotation. persist: the
  // connection is stored (a rotated pair is re-stored at once).
  async function runWith(conn, opName, args, opts) {
    opts = opts || {};
    const cat = await catalog();
    const svc = cat.byId[conn.service];
    const op = svc && svc.opsByName[opName];
    if (!op) throw new PinnedError('unknown_op', 'No such op.');
    if (!capAllows(conn.cap, op.access)) {
      throw new PinnedError('cap_refused', 'This ' + svc.name + ' connection is read-only: change its access to read & write in Integrations to ' + op.summary.toLowerCase() + '.');
    }
    const bot = await currentBot();
    let sha = opts.argsSha256 || '';
    if (op.access === 'write' && !sha) sha = (await consent(conn.service, opName, args)).args_sha256;
    // opts.unlimited (the member picking resources) lists every choice:
    // a read grant without the connection's limit, for the list op only.
    const unlimited = opts.unlimited && op.access === 'read' && Object.values(svc.resources || {}).some((r) => r.list && r.list.op === opName);
    // A read under an active standing grant runs with it: no grant per op.
    const st = op.access === 'read' && !unlimited && opts.persist !== false ? standing[conn.service] : null;
    const grant = st && st.bot.name === bot.name ? st.sealed :
      await mintGrant(unlimited ? Object.assign({}, conn, { resources: undefined }) : conn, bot, opName, op.access, sha);
    const r = await api('/api/bots/' + encodeURIComponent(bot.name) + '/ops', { service: conn.service, op: opName, args: args || {}, grant: grant });
    await recordActivity(conn.service, bot.name, opName, op.access, r);
    if (r.body && typeof r.body.rotated === 'string') {
      await adoptRotated(conn, r.body.rotated, opts.persist !== false);
      if (standing[conn.service]) await renewStanding(conn.service); // re-seal with the fresh pair
    }
    if (!r.ok) throw errorFrom(r);
    return opts.full ? r.body : r.body.data;
  }

  // runOp runs an op of a stored connection and returns its data; with
  // opts.full the whole answer ({status, data, next?}).
  async function runOp(service, opName, args, opts) {
    const conn = await getConnection(service);
    if (!conn) throw new PinnedError('not_connected', 'Connect this service in Integrations first.');
    return runWith(conn, opName, args, Object.assign({}, opts, { persist: true }));
  }

  // accountName says whose account a viewer op's data is.
  function accountName(service, d) {
    if (!d || typeof d !== 'object') return '';
    const pick = (...v) => v.find((x) => x !== undefined && x !== null && x !== '');
    switch (service) {
      case 'hubspot': return d.portalId ? 'portal ' + d.portalId + (d.uiDomain ? ' (' + d.uiDomain + ')' : '') : '';
      case 'dnsimple': return pick(d.account && d.account.email, d.user && d.user.email, '') || '';
      case 'stripe': return pick(d.settings && d.settings.dashboard && d.settings.dashboard.display_name, d.business_profile && d.business_profile.name, d.email, d.id, '') || '';
      default: return String(pick(d.login, d.displayName, d.name, d.email, d.id, '') || '');
    }
  }

  // refusedBy says who refused a credential on verification, and why: the
  // provider (its answer's HTTP status and message), the bot's sidecar, or
  // the relay in front of it. The error keeps its code and statuses.
  function refusedBy(svc, e) {
    if (!(e instanceof PinnedError)) return e;
    let msg;
    if (e.upstreamStatus) {
      msg = svc.name + ' refused the token (' + svc.id + '.' + svc.viewer + ', ' + svc.host + ' answered HTTP ' + e.upstreamStatus + '): ' + e.message;
    } else if (e.code === 'bot_unavailable' || e.code === 'no_bot') {
      msg = 'The bot could not verify the token: ' + e.message;
    } else {
      msg = 'The bot refused to verify the token (' + e.code + '): ' + e.message;
    }
    return new PinnedError(e.code, msg, { status: e.status, arg: e.arg, upstreamStatus: e.upstreamStatus });
  }

  // connect verifies a credential through the service's viewer op (a
  // one-shot read grant bound to that op) and stores it sealed.
  async function connect(service, cred) {
    const cat = await catalog();
    const svc = cat.byId[service];
    if (!svc) throw new PinnedError('unknown_service', 'No such service.');
    const conn = {
      v: 1, service: service, kind: cred.kind, cap: cred.cap === 'write' ? 'write' : 'read',
      secret: cred.secret, refresh: cred.refresh || '', token_expires_at: cred.token_expires_at || '',
      account: '', connected_at: new Date().toISOString(),
    };
    if (!conn.secret) throw new PinnedError('no_secret', 'Paste the token first.');
    if (svc.viewer) {
      // Verification may rotate the pair: conn then holds the fresh one.
      let viewer;
      try {
        viewer = await runWith(conn, svc.viewer, {}, { persist: false });
      } catch (e) {
        throw refusedBy(svc, e);
      }
      conn.account = accountName(service, viewer);
    }
    await storeConnection(conn);
    return conn;
  }

  // ---- app events -------------------------------------------------------------

  // appendEvent adds a typed event; supersedes(old) says which earlier
  // events of the app it replaces (compaction: a fresh listing makes older
  // listings dead weight).
  async function appendEvent(app, ev, supersedes) {
    const d = await db();
    ev = Object.assign({ app: app, at: new Date().toISOString() }, ev);
    return new Promise((resolve, reject) => {
      const t = d.transaction('events', 'readwrite');
      const s = t.objectStore('events');
      if (supersedes) {
        s.openCursor().onsuccess = (e) => {
          const cur = e.target.result;
          if (!cur) { s.add(ev); return; }
          if (cur.value.app === app && supersedes(cur.value)) cur.delete();
          cur.continue();
        };
      } else {
        s.add(ev);
      }
      t.oncomplete = () => resolve(ev);
      t.onerror = () => reject(t.error);
    });
  }
  async function events(app) { return (await idb.all('events')).filter((e) => e.app === app); }
  const clearEvents = (app) => deleteEvents((ev) => ev.app === app);
  // deleteEvents deletes every event for which match(ev) holds.
  async function deleteEvents(match) {
    const d = await db();
    return new Promise((resolve, reject) => {
      const t = d.transaction('events', 'readwrite');
      t.objectStore('events').openCursor().onsuccess = (e) => {
        const cur = e.target.result;
        if (!cur) return;
        if (match(cur.value)) cur.delete();
        cur.continue();
      };
      t.oncomplete = () => resolve();
      t.onerror = () => reject(t.error);
    });
  }

  // ---- the member's activity ---------------------------------------------------

  // Every op a bot ran under one of this member's grants, as the answer
  // the page saw: {app: "activity", type: "op.ran", service, bot, op,
  // access, status: "ok" or the error code, http}, newest last, at most
  // ACTIVITY_MAX per service. Kept with the apps' events; a disconnect
  // clears them.
  const ACTIVITY_MAX = 50;
  async function recordActivity(service, bot, opName, access, r) {
    const code = r.ok ? 'ok' : ((r.body && r.body.error && r.body.error.code) || 'http_' + r.status);
    await appendEvent('activity', { type: 'op.ran', service: service, bot: bot, op: opName, access: access, status: code, http: r.status });
    const d = await db();
    const keys = [];
    await new Promise((resolve) => {
      const t = d.transaction('events', 'readwrite');
      const st = t.objectStore('events');
      st.openCursor().onsuccess = (e) => {
        const cur = e.target.result;
        if (!cur) {
          for (const k of keys.slice(0, Math.max(0, keys.length - ACTIVITY_MAX))) st.delete(k);
          return;
        }
        if (cur.value.app === 'activity' && cur.value.service === service) keys.push(cur.key);
        cur.continue();
      };
      t.oncomplete = resolve;
      t.onerror = resolve;
    });
  }
  // activity returns the recorded ops by service, newest first.
  async function activity() {
    const out = {};
    for (const ev of await events('activity')) (out[ev.service] = out[ev.service] || []).unshift(ev);
    return out;
  }

  // ---- small DOM helpers -------------------------------------------------------

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }

  // renderConsent shows a write's consent (POST /v1/consent) in node: the
  // confirm line (its target first), then every other value the request
  // will carry, labelled by arg name and shown whole in a scrollable
  // block (never cut). The sidecar has already written every invisible
  // character as a visible escape (⟨U+200B⟩); text only, never HTML.
  function renderConsent(node, c) {
    node.textContent = '';
    if (!c || !c.confirm) return;
    node.append(el('p', { class: 'confirm-line', text: c.confirm }));
    const sends = Array.isArray(c.sends) ? c.sends : [];
    if (sends.length === 0) return;
    const list = el('dl', { class: 'confirm-sends' });
    for (const s of sends) {
      // The value scrolls when long: the box takes keyboard focus.
      list.append(el('dt', { text: String(s.arg) }), el('dd', {}, el('pre', { class: 'consent-value', tabindex: '0', 'aria-label': 'Value of ' + s.arg, text: String(s.value) })));
    }
    node.append(el('p', { class: 'confirm-also', text: 'Also sent:' }), list);
  }

  // ---- OAuth flows ------------------------------------------------------------

  // An OAuth result arrives in the fragment of a URL anyone can write: a
  // link to this page with #service=github&access_token=<theirs> would
  // otherwise replace the member's connection with an attacker's account
  // (the member's bots then write into it). beginOAuth records a one-time
  // flow id before the page leaves for the broker, carried in the return
  // URL's query; endOAuth accepts a result only for that id and service,
  // within FLOW_TTL_MS, and spends the record whatever the outcome.
  const FLOW_TTL_MS = 15 * 60 * 1000;
  async function beginOAuth(service) {
    await ready();
    const id = sodium.to_base64(sodium.randombytes_buf(16), sodium.base64_variants.URLSAFE_NO_PADDING);
    await idb.put('keys', 'oauth_flow', { service: service, id: id, at: Date.now() });
    return id;
  }
  async function endOAuth(service, id) {
    const rec = await idb.get('keys', 'oauth_flow');
    await idb.del('keys', 'oauth_flow');
    return !!rec && typeof id === 'string' && id.length >= 22 && rec.id === id && rec.service === service &&
      Date.now() - rec.at >= 0 && Date.now() - rec.at < FLOW_TTL_MS;
  }

  // safeHref keeps a URL that came from a provider's data only when it is
  // https, on the default port, without userinfo, to one of the service's
  // own web hosts (the manifest's web_hosts, in the catalog): anything
  // else gets no link at all.
  function safeHref(u, webHosts) {
    if (typeof u !== 'string' || !Array.isArray(webHosts) || /[\s\\]/.test(u)) return undefined;
    let url;
    try { url = new URL(u); } catch (e) { return undefined; }
    if (url.protocol !== 'https:' || url.port !== '' || url.username !== '' || url.password !== '') return undefined;
    if (!u.toLowerCase().startsWith('https://' + url.hostname + '/') && u.toLowerCase() !== 'https://' + url.hostname) return undefined;
    return webHosts.includes(url.hostname) ? url.href : undefined;
  }
  // wireSkipLinks makes the page's skip links (nav.skip a[href^="#"]) move
  // focus to their target, so the next Tab starts there.
  function wireSkipLinks(root) {
    for (const a of (root || document).querySelectorAll('nav.skip a[href^="#"]')) {
      if (a.dataset.wired) continue;
      a.dataset.wired = 'true';
      a.addEventListener('click', (ev) => {
        const target = document.getElementById(a.getAttribute('href').slice(1));
        if (!target || target.closest('[hidden]')) return;
        ev.preventDefault();
        // A list that is one Tab stop (a roving tabindex) gets its stop focused.
        const stop = target.matches('a[href], button, input, select, textarea') ? target : target.querySelector('[tabindex="0"]');
        if (stop) {
          stop.focus();
        } else {
          if (!target.hasAttribute('tabindex')) target.tabIndex = -1;
          target.focus();
        }
        target.scrollIntoView({ block: 'start' });
      });
    }
  }

  // fieldTitle turns a pick path into a column header a person reads:
  // "properties.email" is "Email", "html_url" is "HTML URL"; a leaf two
  // fields share keeps its parent ("Owner login").
  const ACRONYMS = { id: 'ID', url: 'URL', html: 'HTML', api: 'API', ip: 'IP', ttl: 'TTL', dns: 'DNS' };
  function fieldTitle(path, all) {
    const parts = String(path).split('.');
    const leaf = parts[parts.length - 1];
    const clash = (all || []).filter((p) => String(p).split('.').pop() === leaf).length > 1;
    const words = (clash && parts.length > 1 ? parts.slice(-2) : [leaf]).join('_').split(/[_\s]+|(?<=[a-z])(?=[A-Z])/).filter(Boolean)
      .map((w) => ACRONYMS[w.toLowerCase()] || w.toLowerCase());
    const out = words.join(' ');
    return out.charAt(0).toUpperCase() + out.slice(1);
  }

  function status(node, msg, kind) {
    node.textContent = msg || '';
    node.className = kind === 'bad' ? 'status-bad' : kind === 'ok' ? 'status-ok' : '';
  }

  window.pinned = {
    PinnedError, ready, memberPublicKey, catalog, bots, currentBot, chooseBot, fillBotSelect,
    connections, getConnection, connect, revoke, disconnect, setCap, setResources, limitText, capAllows, consent, runOp, activity,
    startStanding, renewStanding, revokeStanding, standingState, STANDING_TTL_MS,
    get standingRenewMs() { return standingRenewMs; },
    set standingRenewMs(ms) { standingRenewMs = ms; },
    appendEvent, events, clearEvents, el, status, safeHref, beginOAuth, endOAuth, renderConsent, wireSkipLinks, fieldTitle,
    get rotations() { return rotations; },
    // For the cross-language test: the member's sealed-box primitives.
    _seal: (obj, pub) => seal(obj, pub),
    _open: async (sealed) => open(sealed, await memberKey()),
  };
})();
