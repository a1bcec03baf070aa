// catalog.js: the Integrations page. Every service with its host and what
// each op reads (its pick fields) or writes (its confirm sentence); connect
// by pasting a scoped token or with OAuth through the broker; the cap is
// chosen at connect time (read-only by default) and changeable later;
// disconnect.
(function () {
  'use strict';
  const P = window.pinned;
  const el = P.el;

  const capLabel = { read: 'read-only', write: 'read & write' };

  // takeFragment reads an OAuth result the broker put in the fragment and
  // clears it at once, before anything else runs.
  // The flow id (beginOAuth) comes back in the query; both are cleared.
  function takeFragment() {
    const flow = new URLSearchParams(location.search).get('flow');
    if (location.search) history.replaceState(null, '', location.pathname + location.hash);
    if (!location.hash || location.hash.length < 2) return null;
    const params = new URLSearchParams(location.hash.slice(1));
    history.replaceState(null, '', location.pathname);
    if (!params.get('service')) return null;
    const out = {};
    for (const [k, v] of params) out[k] = v;
    out.flow = flow || '';
    return out;
  }

  function capFieldset(id, current) {
    const name = 'cap-' + id;
    const radio = (value, text) => {
      const rid = name + '-' + value;
      return el('span', { class: 'cap-choice' },
        el('input', { type: 'radio', name: name, id: rid, value: value, checked: current === value }),
        ' ', el('label', { for: rid, text: text }), ' ');
    };
    return el('fieldset', { class: 'cap' },
      el('legend', { text: 'Access for bots' }),
      radio('read', 'Read-only'),
      radio('write', 'Read & write'));
  }
  function chosenCap(section, id) {
    const r = section.querySelector('input[name="cap-' + id + '"]:checked');
    return r && r.value === 'write' ? 'write' : 'read';
  }

  // fieldLabel names a field the op reads, marking free text a third
  // party can write (its data-flow class, docs/MANIFEST.md).
  function fieldLabel(op, f) {
    return op.classes && op.classes[f] === 'text' ? f + ' (free text)' : f;
  }

  function opsTable(svc) {
    const rows = svc.ops.map((op) => el('tr', {},
      el('td', {}, el('code', { text: op.name })),
      el('td', {}, el('span', { class: 'tag ' + op.access, text: op.access })),
      el('td', {},
        el('div', { text: op.summary }),
        op.access === 'write'
          ? el('div', {}, el('strong', { text: 'Writes: ' }), op.confirm)
          : el('div', { class: 'fields' }, el('strong', { text: 'Reads: ' }), op.fields.length ? op.fields.map((f) => fieldLabel(op, f)).join(', ') : '(nothing)'))));
    return el('table', { class: 'ops' },
      el('caption', { text: 'What ' + svc.name + ' ops can do' }),
      el('colgroup', {}, el('col', { class: 'op-name' }), el('col', { class: 'op-access' }), el('col', {})),
      el('thead', {}, el('tr', {}, el('th', { scope: 'col', text: 'Op' }), el('th', { scope: 'col', text: 'Access' }), el('th', { scope: 'col', text: 'Reads or writes' }))),
      el('tbody', {}, ...rows));
  }

  // activityTable lists the ops bots ran under this member's grants for
  // one service, newest first, as the answers the page saw.
  function activityTable(svc, rows) {
    if (!rows || !rows.length) return el('p', { class: 'muted', id: 'activity-' + svc.id }, 'No op has run under your grants yet.');
    return el('table', { class: 'activity', id: 'activity-' + svc.id },
      el('caption', { text: 'What bots ran with your ' + svc.name + ' grants' }),
      el('thead', {}, el('tr', {}, ...['Time', 'Bot', 'Op', 'Result'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, ...rows.map((a) => el('tr', { class: 'activity-row' },
        el('td', {}, el('time', { datetime: a.at, text: new Date(a.at).toLocaleTimeString() })),
        el('td', { text: a.bot }),
        el('td', {}, el('code', { text: a.op })),
        el('td', { class: a.status === 'ok' ? 'status-ok' : 'status-bad', text: a.status === 'ok' ? 'done' : a.status })))));
  }

  function renderService(svc, conn, cat, acts) {
    const id = svc.id;
    const statusNode = el('p', { id: 'status-' + id, role: 'status', 'aria-live': 'polite' });
    const panel = el('div', { class: 'connect', id: 'connect-' + id });
    const section = el('section', { class: 'service', id: 'service-' + id, 'aria-labelledby': 'h-' + id },
      el('h2', { id: 'h-' + id, text: svc.name }),
      el('div', { class: 'host' }, 'API host: ', el('code', { text: svc.host })),
      svc.description ? el('p', { class: 'desc', text: svc.description }) : null,
      el('div', { class: 'cols' }, opsTable(svc), el('div', { class: 'side' }, panel, statusNode)));

    if (conn) {
      panel.append(...[
        el('p', { class: 'connected', id: 'connected-' + id },
          'Connected', conn.account ? ' as ' : '', conn.account ? el('strong', { class: 'account', text: conn.account }) : null,
          ' · ', el('span', { class: 'cap-now', text: capLabel[conn.cap] }),
          ' · ', conn.kind === 'oauth' ? 'OAuth' : 'pasted token',
          conn.resources ? el('span', { class: 'limit-now' }, ' · limited to ', el('span', { text: P.limitText(svc, conn) })) : null),
        capFieldset(id, conn.cap),
        el('p', {},
          el('button', { type: 'button', id: 'savecap-' + id, onclick: async () => {
            const cap = chosenCap(section, id);
            try {
              await P.setCap(id, cap);
              await refresh(id, 'Access is now ' + capLabel[cap] + '.');
            } catch (e) { P.status(statusNode, e.message, 'bad'); }
          } }, 'Save access'),
          ' ',
          el('button', { type: 'button', id: 'disconnect-' + id, onclick: async () => {
            // Revoke at the provider first (sealed to the broker's key),
            // then delete here whatever the provider said.
            let rv;
            try { rv = await P.revoke(id); } catch (e) { rv = { revoked: false, why: e.message }; }
            await P.disconnect(id);
            if (rv.revoked) {
              await refresh(id, 'Disconnected and revoked at ' + svc.name + ': the token no longer works.');
              return;
            }
            await refresh(id, 'Disconnected; the connection is gone from this device. The token is still valid at ' + svc.name +
              ' (' + rv.why + ')' + (svc.pat_help ? ': revoke it at ' + svc.pat_help + '.' : ': revoke it on its site.'));
          } }, 'Disconnect ' + svc.name)),
        ...Object.entries(svc.resources || {}).map(([kind, r]) => limitPanel(svc, kind, r, conn, statusNode)),
        standingPanel(svc, conn, statusNode),
        id === 'github' ? el('p', {}, el('a', { href: '/apps/github', id: 'open-github' }, 'Open the GitHub app')) : null,
        tryPanel(svc, statusNode),
        el('details', { class: 'activity', id: 'activity-box-' + id }, el('summary', { text: 'Activity' }), activityTable(svc, acts))].filter(Boolean));
      return section;
    }

    const tokenId = 'token-' + id;
    const form = el('form', { id: 'form-' + id, novalidate: true },
      el('p', {},
        el('label', { for: tokenId, text: svc.name + ' token' }), el('br'),
        el('input', { type: 'password', id: tokenId, name: 'token', autocomplete: 'off', spellcheck: 'false', required: true })),
      svc.pat_help ? el('p', { class: 'muted' }, el('a', { href: svc.pat_help, target: '_blank', rel: 'noopener noreferrer', id: 'pathelp-' + id }, 'Create a scoped ' + svc.name + ' token'), ' (give it only what the ops below need)') : null,
      capFieldset(id, 'read'),
      el('p', {},
        el('button', { type: 'submit', class: 'primary', id: 'save-' + id }, 'Save and verify'),
        svc.oauth_enabled && cat.broker ? ' ' : null,
        svc.oauth_enabled && cat.broker ? el('button', { type: 'button', id: 'oauth-' + id, onclick: async () => {
          const ret = location.origin + location.pathname + '?flow=' + encodeURIComponent(await P.beginOAuth(id));
          location.assign(cat.broker + '/oauth/' + encodeURIComponent(id) + '/start?cap=' + chosenCap(section, id) + '&return=' + encodeURIComponent(ret));
        } }, 'Connect with ' + svc.name) : null));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const input = form.querySelector('#' + tokenId);
      const secret = input.value.trim();
      input.value = ''; // the token leaves the DOM at once
      if (!secret) { P.status(statusNode, 'Paste a token first.', 'bad'); return; }
      P.status(statusNode, 'Verifying…');
      try {
        const c = await P.connect(id, { kind: 'pat', cap: chosenCap(section, id), secret: secret });
        await refresh(id, 'Verified' + (c.account ? ': this is ' + c.account + '.' : '.'));
      } catch (e) {
        P.status(statusNode, 'Not saved: ' + e.message, 'bad');
      }
    });
    panel.append(form);
    return section;
  }

  // standingPanel is a standing read grant's consent card: what the bot
  // may read without asking, for how long, and how to stop it; once
  // allowed, when it renews and a Revoke button.
  function standingPanel(svc, conn, statusNode) {
    const base = 'standing-' + svc.id;
    const reads = svc.ops.filter((o) => o.access === 'read').map((o) => o.name);
    const box = el('fieldset', { class: 'standing', id: base }, el('legend', { text: 'Standing read grant' }));
    const st = P.standingState(svc.id);
    const minutes = Math.round(P.STANDING_TTL_MS / 60000);
    const limit = P.limitText(svc, conn);
    if (!st) {
      box.append(
        el('p', { id: base + '-consent', text: 'Let the bot read ' + svc.name + ' without asking each time: ' + reads.join(', ') + '.' +
          (limit ? ' Only ' + limit + '.' : '') + ' Renewed while this page is open; it stops within ' + minutes +
          ' minutes of closing it, or at once when you revoke it. Writes still ask you.' }),
        el('p', {}, el('button', { type: 'button', id: base + '-allow', onclick: async () => {
          try {
            await P.startStanding(svc.id);
            await refresh(svc.id, 'The bot may now read ' + svc.name + ' without asking, while this page is open.');
          } catch (e) { P.status(statusNode, e.message, 'bad'); }
        } }, 'Allow standing reads')));
      return box;
    }
    const time = (ms) => new Date(ms).toLocaleTimeString();
    box.append(
      el('p', { id: base + '-now', text: 'Active since ' + time(st.since) + ' for ' + st.bot + ': the bot reads ' + svc.name + ' without asking' +
        (limit ? ' (only ' + limit + ')' : '') + '. This grant expires at ' + time(st.expiresAt) + ' unless this page renews it.' }),
      el('p', {}, el('button', { type: 'button', id: base + '-revoke', onclick: async () => {
        try {
          await P.revokeStanding(svc.id);
          await refresh(svc.id, 'Standing reads revoked: the bot\'s next read is refused.');
        } catch (e) { P.status(statusNode, e.message, 'bad'); }
      } }, 'Revoke now')));
    return box;
  }

  // limitPanel lets the member limit a connection to chosen resources of
  // one kind (the manifest's resources): "Choose" lists every choice with
  // the list op, and "Save limit" re-seals the connection with the
  // checked ones. Every later grant carries the limit; the sidecar
  // refuses a call naming another resource.
  function limitPanel(svc, kind, r, conn, statusNode) {
    const base = 'limit-' + svc.id + '-' + kind;
    const current = (conn.resources && conn.resources[kind]) || [];
    const box = el('div', { id: base + '-choices' });
    const label = r.label.toLowerCase();
    const fs = el('fieldset', { class: 'limit', id: base },
      el('legend', { text: 'Limit bots to chosen ' + label }),
      el('p', { class: 'muted', id: base + '-now' }, current.length ? 'Only: ' + current.join(', ') : 'No limit: every one of your ' + label + '.'),
      box);
    if (!r.list) {
      // No list op: the member types the names (DNSimple's account ids).
      const input = el('input', { type: 'text', id: base + '-names', autocomplete: 'off', spellcheck: 'false', value: current.join(', ') });
      fs.append(el('p', {},
        el('label', { for: base + '-names', text: r.label + ', separated by commas: ' }), input, ' ',
        el('button', { type: 'button', id: base + '-save', onclick: async () => {
          const chosen = input.value.split(',').map((n) => n.trim()).filter((n) => n);
          try {
            const rs = Object.assign({}, conn.resources || {});
            if (chosen.length) rs[kind] = chosen; else delete rs[kind];
            await P.setResources(svc.id, rs);
            await refresh(svc.id, chosen.length ? 'Bots now reach only ' + chosen.join(', ') + '.' : 'The limit is lifted.');
          } catch (e) { P.status(statusNode, e.message, 'bad'); }
        } }, 'Save limit')));
      return fs;
    }
    const choose = el('button', { type: 'button', id: base + '-choose', onclick: async () => {
      P.status(statusNode, 'Listing your ' + label + '…');
      try {
        const names = [];
        let args = {};
        for (let page = 0; page < 50; page++) {
          const answer = await P.runOp(svc.id, r.list.op, args, { full: true, unlimited: true });
          for (const item of Array.isArray(answer.data) ? answer.data : []) {
            const n = path(item, r.list.field);
            if (n && !names.includes(n)) names.push(n);
          }
          if (!answer.next || typeof answer.next !== 'object') break;
          args = answer.next;
        }
        renderChoices(box, base, names, current, label);
        box.append(el('p', {},
          el('button', { type: 'button', class: 'primary', id: base + '-save', onclick: async () => {
            const chosen = [...box.querySelectorAll('input[type=checkbox]:checked')].map((c) => c.value);
            try {
              const rs = Object.assign({}, conn.resources || {});
              if (chosen.length) rs[kind] = chosen; else delete rs[kind];
              await P.setResources(svc.id, rs);
              await refresh(svc.id, chosen.length ? 'Bots now reach only ' + chosen.length + ' of your ' + label + '.' : 'The limit is lifted.');
            } catch (e) { P.status(statusNode, e.message, 'bad'); }
          } }, 'Save limit')));
        P.status(statusNode, names.length + ' ' + label + ' to choose from.');
        const f = box.querySelector('input');
        if (f) f.focus();
      } catch (e) { P.status(statusNode, e.message, 'bad'); }
    } }, current.length ? 'Change the limit' : 'Choose ' + label);
    fs.append(el('p', {}, choose));
    return fs;
  }

  // renderChoices lists names as checkboxes (the current limit checked)
  // under a filter, in a scroll box.
  function renderChoices(box, base, names, current, label) {
    box.textContent = '';
    const filter = el('input', { type: 'search', id: base + '-filter', autocomplete: 'off', spellcheck: 'false' });
    const list = el('ul', { class: 'choices', id: base + '-list' }, ...names.map((n, i) => el('li', {},
      el('input', { type: 'checkbox', id: base + '-c' + i, value: n, checked: current.includes(n) }), ' ',
      el('label', { for: base + '-c' + i, text: n }))));
    filter.addEventListener('input', () => {
      const q = filter.value.trim().toLowerCase();
      for (const li of list.children) li.hidden = !!q && !li.textContent.toLowerCase().includes(q);
    });
    box.append(el('p', {}, el('label', { for: base + '-filter', text: 'Filter ' + label }), el('br'), filter), list);
  }

  // path reads a dot path; through an array it maps over the elements.
  function path(v, p) {
    for (const k of p.split('.')) {
      if (Array.isArray(v)) v = v.map((x) => (x && typeof x === 'object' ? x[k] : undefined)).filter((x) => x !== undefined);
      else v = v && typeof v === 'object' ? v[k] : undefined;
      if (v === undefined || v === null) return '';
    }
    return Array.isArray(v) ? v.join(', ') : String(v);
  }

  function resultTable(op, data) {
    const rows = Array.isArray(data) ? data : [data];
    return el('table', { class: 'ops result', id: 'result-' + op.name },
      el('caption', { text: op.summary + ': ' + (Array.isArray(data) ? data.length + ' rows' : 'one record') }),
      el('thead', {}, el('tr', {}, ...op.fields.map((f) => el('th', { scope: 'col', title: f, 'data-path': f, text: P.fieldTitle(f, op.fields) })))),
      el('tbody', {}, ...rows.map((r) => el('tr', {}, ...op.fields.map((f) => el('td', { text: path(r, f) }))))));
  }

  // tryPanel runs a read op that needs no args and shows what came back:
  // exactly the fields the manifest's pick lets through.
  function tryPanel(svc, statusNode) {
    const ops = svc.ops.filter((op) => op.access === 'read' && !Object.values(op.args).some((a) => a.required));
    if (!ops.length) return null;
    const sid = 'try-' + svc.id;
    const select = el('select', { id: sid }, ...ops.map((op) => el('option', { value: op.name, text: op.summary })));
    // The results scroll both ways: the box takes keyboard focus (arrow
    // keys scroll it) and is a named region.
    const out = el('div', { id: 'out-' + svc.id, class: 'out', tabindex: '0', role: 'region', 'aria-label': svc.name + ' results' });
    return el('div', { class: 'try' },
      el('p', {}, el('label', { for: sid, text: 'Read now' }), ' ', select, ' ',
        el('button', { type: 'button', id: 'run-' + svc.id, onclick: async () => {
          const op = svc.opsByName[select.value];
          P.status(statusNode, 'Running ' + op.name + '…');
          out.textContent = '';
          try {
            const data = await P.runOp(svc.id, op.name, {});
            out.append(resultTable(op, data));
            P.status(statusNode, op.summary + ': done.', 'ok');
          } catch (e) { P.status(statusNode, e.message, 'bad'); }
        } }, 'Run')),
      out);
  }

  // skipLinks lists one skip link per service: each focuses the
  // service's token field, or its heading once connected.
  function skipLinks() {
    const list = document.getElementById('skip-services');
    for (const li of list.querySelectorAll('li.svc')) li.remove();
    for (const svc of cat.services) {
      const token = document.getElementById('token-' + svc.id);
      list.append(el('li', { class: 'svc' }, el('a', { href: '#' + (token ? token.id : 'h-' + svc.id), id: 'skip-' + svc.id }, 'Skip to ' + svc.name)));
    }
    P.wireSkipLinks();
  }

  // renderUnavailable lists the services the broker's registry knows and
  // this instance does not run yet: shown, never connectable or runnable.
  function renderUnavailable(list) {
    return el('section', { class: 'unavailable', id: 'unavailable', 'aria-labelledby': 'h-unavailable' },
      el('h2', { id: 'h-unavailable', text: 'Not available on this instance yet' }),
      el('p', { class: 'muted', text: 'The shared registry lists these services, but this instance runs only the reviewed registry it was built with. They arrive with its next update; nothing can connect to them or run here until then.' }),
      el('ul', {}, ...list.map((svc) => el('li', { id: 'unavailable-' + svc.id },
        el('strong', { text: svc.name || svc.id }), ' ',
        el('span', { class: 'muted', text: '(' + svc.id + (svc.host ? ', ' + svc.host : '') + ', ' + svc.ops + ' ops)' }),
        ' — ', el('span', { class: 'state', text: 'not available on this instance yet' }),
        svc.description ? el('div', { class: 'desc', text: svc.description }) : null))));
  }

  let cat = null;
  async function refresh(focusId, message) {
    const conns = await P.connections();
    const acts = await P.activity();
    const root = document.getElementById('services');
    root.textContent = '';
    for (const svc of cat.services) root.append(renderService(svc, conns[svc.id], cat, acts[svc.id]));
    if (cat.unavailable && cat.unavailable.length) root.append(renderUnavailable(cat.unavailable));
    root.setAttribute('aria-busy', 'false');
    skipLinks();
    if (focusId) {
      const node = document.getElementById('status-' + focusId);
      if (node && message) P.status(node, message, 'ok');
      const h = document.getElementById('h-' + focusId);
      if (h) { h.tabIndex = -1; h.focus(); }
    }
  }

  async function main() {
    const frag = takeFragment();
    await P.ready();
    const pageStatus = document.getElementById('page-status');
    try {
      cat = await P.catalog();
    } catch (e) {
      const root = document.getElementById('services');
      root.textContent = '';
      root.setAttribute('aria-busy', 'false');
      P.status(pageStatus, e.message, 'bad');
      return;
    }
    await P.fillBotSelect(document.getElementById('bot'));
    await refresh();
    if (!frag) return;
    if (!(await P.endOAuth(frag.service, frag.flow))) {
      P.status(pageStatus, 'Refused an OAuth result this page did not start (a link from elsewhere?): nothing was connected or changed.', 'bad');
      return;
    }
    if (frag.error) {
      const n = document.getElementById('status-' + frag.service);
      P.status(n || pageStatus, 'The connection was not made: ' + frag.error + '.', 'bad');
      return;
    }
    const n = document.getElementById('status-' + frag.service) || pageStatus;
    P.status(n, 'Verifying…');
    try {
      const c = await P.connect(frag.service, {
        kind: 'oauth', cap: frag.cap, secret: frag.access_token, refresh: frag.refresh_token, token_expires_at: frag.expires_at,
      });
      await refresh(frag.service, 'Connected with OAuth' + (c.account ? ': this is ' + c.account + '.' : '.'));
    } catch (e) {
      P.status(n, 'Not saved: ' + e.message, 'bad');
    }
  }

  main();
})();
