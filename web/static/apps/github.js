// apps/github.js: the GitHub companion app. Gated on a GitHub connection;
// the member's repositories (every page), a repository's open issues and
// pull requests, and "open an issue", whose form shows the confirm sentence
// from /v1/consent: submitting it is the consent (a one-shot write grant
// bound to exactly those args).
//
// Fetched results fold into the app's state as typed events kept in
// IndexedDB, so a reload shows the last state at once:
//   repos.listed   {repos, pages, paged_by}  replaces the repository list
//   repo.selected  {repo}             the repository on screen
//   issues.listed  {repo, items}      replaces that repository's issues
//   issue.created  {repo, issue}      adds the new issue on top
(function () {
  'use strict';
  const P = window.pinned;
  const el = P.el;
  const APP = 'github';
  const PER_PAGE = 100;
  const MAX_PAGES = 50;

  // fold is the app's reducer: state from events, oldest first.
  function fold(events) {
    const st = { repos: null, pages: 0, fetchedAt: '', repo: '', issues: {} };
    for (const ev of events) {
      switch (ev.type) {
        case 'repos.listed': st.repos = ev.repos; st.pages = ev.pages; st.pagedBy = ev.paged_by; st.fetchedAt = ev.at; break;
        case 'repo.selected': st.repo = ev.repo; break;
        case 'issues.listed': st.issues[ev.repo] = ev.items; break;
        case 'issue.created':
          st.issues[ev.repo] = [ev.issue].concat((st.issues[ev.repo] || []).filter((i) => i.number !== ev.issue.number));
          break;
      }
    }
    return st;
  }

  let state = fold([]);
  let conn = null;
  let webHosts = []; // the manifest's web_hosts: the only hosts an issue link may point to
  let svc = null; // the catalog's GitHub entry
  async function emit(ev, supersedes) {
    await P.appendEvent(APP, ev, supersedes);
    state = fold(await P.events(APP));
    render();
  }

  const $ = (id) => document.getElementById(id);

  // renderRepos lists the repositories the filter matches. The list is one
  // Tab stop (a roving tabindex): the selected repository, or the first,
  // takes Tab; arrow keys, Home and End move within the list.
  function renderRepos() {
    const list = $('repos');
    const keepFocus = list.contains(document.activeElement);
    // A re-render (a refreshed listing, another tab's event) keeps the
    // repository the keyboard is on, not the selected one.
    const focused = keepFocus ? document.activeElement.dataset.repo : undefined;
    list.textContent = '';
    // What the grant cannot reach is not shown (the sidecar filters the
    // listing too; this hides what an older listing still holds).
    const limit = conn && conn.resources && conn.resources.repository;
    const repos = (state.repos || []).filter((r) => !limit || limit.includes(r.full_name));
    const q = $('repo-filter').value.trim().toLowerCase();
    const shown = q ? repos.filter((r) => r.full_name.toLowerCase().includes(q)) : repos;
    $('repo-count').textContent = state.repos ? '(' + (q ? shown.length + ' of ' : '') + repos.length + ')' : '';
    let stop = focused ? shown.findIndex((r) => r.full_name === focused) : -1;
    if (stop < 0) stop = shown.findIndex((r) => r.full_name === state.repo);
    if (stop < 0) stop = 0;
    shown.forEach((r, i) => {
      list.append(el('li', {}, el('button', {
        type: 'button', class: 'repo', 'data-repo': r.full_name, 'aria-pressed': r.full_name === state.repo ? 'true' : 'false',
        tabindex: i === stop ? '0' : '-1', onclick: () => select(r.full_name),
      }, r.full_name + (r.private ? ' (private)' : ''))));
    });
    if (state.repos && !shown.length) list.append(el('li', { class: 'muted', text: 'No repository matches the filter.' }));
    if (keepFocus) { const b = list.querySelector('button[tabindex="0"]'); if (b) b.focus(); }
  }

  function onRepoKey(ev) {
    const buttons = [...$('repos').querySelectorAll('button.repo')];
    const i = buttons.indexOf(document.activeElement);
    if (i < 0) return;
    let j = i;
    switch (ev.key) {
      case 'ArrowDown': j = Math.min(buttons.length - 1, i + 1); break;
      case 'ArrowUp': j = Math.max(0, i - 1); break;
      case 'Home': j = 0; break;
      case 'End': j = buttons.length - 1; break;
      default: return;
    }
    ev.preventDefault();
    buttons[i].tabIndex = -1;
    buttons[j].tabIndex = 0;
    buttons[j].focus();
  }

  function render() {
    $('fetched').textContent = state.fetchedAt ? 'fetched ' + new Date(state.fetchedAt).toLocaleString() + ' in ' + state.pages + ' pages' : '';
    $('fetched').dataset.pagedBy = state.pagedBy || '';
    renderRepos();
    const panel = $('repo-panel');
    panel.hidden = !state.repo;
    $('skip-issue').parentElement.hidden = !state.repo;
    if (!state.repo) return;
    $('repo-h').textContent = state.repo;
    const issues = $('issues');
    issues.textContent = '';
    const items = state.issues[state.repo];
    if (!items) {
      issues.append(el('li', { class: 'muted', text: 'Loading…' }));
    } else if (!items.length) {
      issues.append(el('li', { class: 'muted', text: 'No open issues or pull requests.' }));
    }
    for (const i of items || []) {
      const pr = i.pull_request && i.pull_request.html_url;
      issues.append(el('li', { class: 'issue', 'data-number': String(i.number) },
        el('span', { class: 'tag ' + (pr ? 'write' : 'read'), text: pr ? 'PR' : 'issue' }), ' ',
        el('a', { href: P.safeHref(i.html_url, webHosts), rel: 'noopener noreferrer', target: '_blank' }, '#' + i.number + ' ' + i.title),
        i.user && i.user.login ? el('span', { class: 'muted', text: ' by ' + i.user.login }) : null));
    }
  }

  // listRepos reads every page of /user/repos, then folds one
  // repos.listed event. It follows the answer's `next` (the next page's
  // args) where the sidecar gives one; a sidecar that does not page gets
  // page=1,2,… with per_page=100 until a short page.
  async function listRepos() {
    const status = $('page-status');
    P.status(status, 'Fetching repositories…');
    try {
      const all = [];
      let args = { per_page: PER_PAGE, page: 1 };
      let pages = 0;
      let sawNext = false;
      while (pages < MAX_PAGES) {
        const answer = await P.runOp('github', 'list_repos', args, { full: true });
        pages++;
        const got = Array.isArray(answer.data) ? answer.data : [];
        all.push(...got);
        if (answer.next && typeof answer.next === 'object') {
          sawNext = true;
          args = answer.next;
          continue;
        }
        if (sawNext || got.length < PER_PAGE) break;
        args = { per_page: PER_PAGE, page: args.page + 1 };
      }
      await emit({ type: 'repos.listed', repos: all, pages: pages, paged_by: sawNext ? 'next' : 'page' }, (old) => old.type === 'repos.listed');
      P.status(status, all.length + ' repositories.', 'ok');
    } catch (e) {
      P.status(status, 'Repositories could not be fetched: ' + e.message, 'bad');
    }
  }

  async function listIssues(full) {
    const [owner, repo] = full.split('/');
    try {
      const data = await P.runOp('github', 'list_issues', { owner: owner, repo: repo, state: 'open', per_page: 100 });
      await emit({ type: 'issues.listed', repo: full, items: Array.isArray(data) ? data : [] },
        (old) => (old.type === 'issues.listed' || old.type === 'issue.created') && old.repo === full);
    } catch (e) {
      P.status($('page-status'), 'Issues could not be fetched: ' + e.message, 'bad');
    }
  }

  async function select(full) {
    pendingConsent = null;
    $('confirm').textContent = '';
    P.status($('issue-status'), '');
    await emit({ type: 'repo.selected', repo: full }, (old) => old.type === 'repo.selected');
    await listIssues(full);
  }

  // ---- open an issue ---------------------------------------------------------

  let pendingConsent = null; // {key, args_sha256, confirm}
  function issueArgs() {
    const [owner, repo] = state.repo.split('/');
    const args = { owner: owner, repo: repo, title: $('issue-title').value };
    const body = $('issue-body').value;
    if (body) args.body = body;
    return args;
  }
  const keyOf = (args) => JSON.stringify(args);
  const readOnlyMessage = 'This GitHub connection is read-only: opening an issue needs read & write. Change its access in Integrations.';
  const notConnectedMessage = 'GitHub is not connected on this device any more (disconnected in another tab?): nothing was sent. Connect it again in Integrations.';

  // writeRefusal re-reads the stored connection (another tab may have
  // changed or removed it) and says why a write cannot run, or '' when it
  // can.
  async function writeRefusal() {
    conn = await P.getConnection('github');
    if (!conn) return notConnectedMessage;
    if (!P.capAllows(conn.cap, 'write')) return readOnlyMessage;
    return '';
  }

  // showConsent asks the bot's sidecar to validate the args and render the
  // confirm sentence; nothing is sent to GitHub.
  async function showConsent() {
    if (!state.repo) return null;
    const args = issueArgs();
    if (!args.title.trim()) { $('confirm').textContent = ''; pendingConsent = null; return null; }
    const refusal = await writeRefusal();
    if (refusal) { $('confirm').textContent = ''; pendingConsent = null; P.status($('issue-status'), refusal, 'bad'); return null; }
    const key = keyOf(args);
    try {
      const c = await P.consent('github', 'create_issue', args);
      if (keyOf(issueArgs()) !== key) return null; // typed on meanwhile
      pendingConsent = { key: key, args_sha256: c.args_sha256, confirm: c.confirm };
      P.renderConsent($('confirm'), c);
      const limit = P.limitText(svc, conn);
      if (limit) $('confirm').append(el('p', { class: 'confirm-limit', text: 'Limited to chosen ' + limit }));
      P.status($('issue-status'), '');
      return pendingConsent;
    } catch (e) {
      pendingConsent = null;
      $('confirm').textContent = '';
      P.status($('issue-status'), e.message, 'bad');
      return null;
    }
  }

  let typingTimer = null;
  function onType() {
    pendingConsent = null;
    clearTimeout(typingTimer);
    typingTimer = setTimeout(showConsent, 250);
  }

  async function submitIssue(ev) {
    ev.preventDefault();
    const st = $('issue-status');
    const refusal = await writeRefusal();
    if (refusal) { P.status(st, refusal, 'bad'); return; }
    const args = issueArgs();
    if (!args.title.trim()) { P.status(st, 'Give the issue a title.', 'bad'); return; }
    if (!pendingConsent || pendingConsent.key !== keyOf(args)) {
      // The member has not seen the sentence for these args yet.
      if (await showConsent()) P.status(st, 'Read the sentence above; submitting again opens the issue.');
      return;
    }
    const bound = pendingConsent;
    pendingConsent = null;
    $('issue-submit').disabled = true;
    P.status(st, 'Opening…');
    try {
      const issue = await P.runOp('github', 'create_issue', args, { argsSha256: bound.args_sha256 });
      await emit({ type: 'issue.created', repo: state.repo, issue: issue });
      $('issue-title').value = '';
      $('issue-body').value = '';
      $('confirm').textContent = '';
      P.status(st, 'Opened #' + issue.number + '.', 'ok');
    } catch (e) {
      P.status(st, 'Not opened: ' + e.message, 'bad');
    } finally {
      $('issue-submit').disabled = false;
    }
  }

  async function main() {
    await P.ready();
    svc = (await P.catalog()).byId.github;
    webHosts = svc.web_hosts || [];
    await P.fillBotSelect($('bot'));
    conn = await P.getConnection('github');
    P.wireSkipLinks();
    if (!conn) {
      $('gate').hidden = false;
      document.querySelector('nav.skip').hidden = true;
      await P.clearEvents(APP);
      return;
    }
    $('app').hidden = false;
    $('account').textContent = 'Connected as ' + (conn.account || 'GitHub') + ' · ' + (conn.cap === 'write' ? 'read & write' : 'read-only') +
      (conn.resources ? ' · limited to ' + P.limitText(svc, conn) : '');
    state = fold(await P.events(APP)); // the last state, at once
    render();
    $('refresh').addEventListener('click', listRepos);
    $('repo-filter').addEventListener('input', renderRepos);
    $('repos').addEventListener('keydown', onRepoKey);
    $('issue-title').addEventListener('input', onType);
    $('issue-body').addEventListener('input', onType);
    $('new-issue').addEventListener('submit', submitIssue);
    await listRepos();
    if (state.repo) await listIssues(state.repo);
    $('app').dataset.loaded = 'true'; // every fetch of the page load is done
  }

  main();
})();
