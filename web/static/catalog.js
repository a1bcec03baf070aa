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
      el('thead', {}, el('tr', {}, el('th', { scope: 'col', text: 'Op' }), el('th', { scope: 'col', text: 'Access' }), el('th', { scope: 'col', text: 'Reads or writes' }))),
      el('tbody', {}, ...rows));
  }

  function renderService(svc, conn, cat) {
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
          ' · ', conn.kind === 'oauth' ? 'OAuth' : 'pasted token'),
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
            await P.disconnect(id);
            await refresh(id, 'Disconnected; the connection is gone from this device.');
          } }, 'Disconnect ' + svc.name)),
        id === 'github' ? el('p', {}, el('a', { href: '/apps/github', id: 'open-github' }, 'Open the GitHub app')) : null,
        tryPanel(svc, statusNode)].filter(Boolean));
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
      el('thead', {}, el('tr', {}, ...op.fields.map((f) => el('th', { scope: 'col', text: f })))),
      el('tbody', {}, ...rows.map((r) => el('tr', {}, ...op.fields.map((f) => el('td', { text: path(r, f) }))))));
  }

  // tryPanel runs a read op that needs no args and shows what came back:
  // exactly the fields the manifest's pick lets through.
  function tryPanel(svc, statusNode) {
    const ops = svc.ops.filter((op) => op.access === 'read' && !Object.values(op.args).some((a) => a.required));
    if (!ops.length) return null;
    const sid = 'try-' + svc.id;
    const select = el('select', { id: sid }, ...ops.map((op) => el('option', { value: op.name, text: op.summary })));
    const out = el('div', { id: 'out-' + svc.id, class: 'out' });
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
    const root = document.getElementById('services');
    root.textContent = '';
    for (const svc of cat.services) root.append(renderService(svc, conns[svc.id], cat));
    if (cat.unavailable && cat.unavailable.length) root.append(renderUnavailable(cat.unavailable));
    root.setAttribute('aria-busy', 'false');
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
