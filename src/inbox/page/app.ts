// The inbox page's script (runs in the browser; served as /app.js). Everything a request holds
// is put into the page with textContent, never as markup, so an argument such as
// `<script>…</script>` shows as the text it is. Characters that could hide or reorder what a
// person reads (controls, bidi overrides, zero-width, tags, variation selectors) are shown
// escaped and marked, in every text that comes from the call, its task and its session.
//
// Every API request carries the session's API token in X-CSRF-Token beside the cookie (ADR 069):
// the cookie is sent by the browser to every port of its host, the token only by this script.

interface ArgRule {
  [k: string]: unknown;
}
interface Rule {
  release: string;
  manifest_digest: string;
  tool: string;
  declaration: { effect?: string; approval?: string; arguments?: Record<string, ArgRule>; [k: string]: unknown };
}
interface Req {
  id: string;
  tool: string;
  /** Null in the list for a long call: fetched when the request is opened. */
  arguments: Record<string, unknown> | null;
  /** The call's length in bytes, as it would be forwarded. */
  call_bytes: number;
  task: string | null;
  label: string;
  fingerprint: string;
  entry: number;
  gate: string | null;
  rule: Rule;
  created_at: string;
  expires_at: string;
}
interface SessionInfo {
  approver: { key_id: string; name: string };
  ttl_ms: number;
}

const $ = (id: string) => document.getElementById(id) as HTMLElement;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...kids: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const k of kids) e.append(typeof k === 'string' ? document.createTextNode(k) : k);
  return e;
}

// JSON for a person, every character a browser draws as nothing (or that moves others) escaped:
// controls, format characters (bidi, zero-width, the tags U+E0000-E007F that spell ASCII no one
// sees), line separators, default-ignorables (variation selectors, fillers). Unescaped, a value
// could carry text the approver never saw, and two different calls could look the same.
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/gu;
const escaped = (c: string) => {
  const hex = c.codePointAt(0)!.toString(16);
  return hex.length <= 4 ? '\\u' + hex.padStart(4, '0') : `\\u{${hex}}`;
};
function shown(v: unknown): string {
  const text = typeof v === 'string' ? v : JSON.stringify(v, null, 2);
  return text.replace(HIDDEN, escaped);
}

/** A value as text nodes, hidden characters shown escaped and marked so they stand out. */
function valueNode(v: unknown): HTMLElement {
  const pre = el('pre', { class: 'value' });
  const text = typeof v === 'string' ? v : JSON.stringify(v, null, 2);
  let last = 0;
  for (const m of text.matchAll(HIDDEN)) {
    const at = m.index ?? 0;
    pre.append(text.slice(last, at), el('span', { class: 'esc', title: 'an invisible or reordering character, shown escaped' }, escaped(m[0])));
    last = at + m[0].length;
  }
  pre.append(text.slice(last));
  return pre;
}

/**
 * A value's cell. A string shows as its text, so any other value says its JSON type where it can
 * be seen (not in a tooltip): else `5` and `"5"`, `true` and `"true"`, `null` and `"null"`, or an
 * object and a string holding its JSON would look the same, and they are different calls.
 */
function valueCell(v: unknown): HTMLElement {
  if (typeof v === 'string') return el('td', {}, valueNode(v));
  return el('td', {}, el('span', { class: 'type' }, `JSON ${Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v}`), valueNode(v));
}

function ago(iso: string): string {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
}

function until(iso: string): string {
  const s = Math.round((Date.parse(iso) - Date.now()) / 1000);
  if (s <= 0) return 'expired';
  if (s < 60) return `in ${s} s`;
  if (s < 3600) return `in ${Math.round(s / 60)} min`;
  return `in ${Math.round(s / 3600)} h`;
}

function ruleText(r: ArgRule | undefined): string {
  if (!r) return 'not declared';
  return Object.entries(r)
    .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(', ');
}

let session: SessionInfo | null = null;
let requests: Req[] = [];
let selected: string | null = null;

// The API token, from the login's answer, kept in localStorage: per origin (scheme, host and
// port), so no server on another port of this host can read it, and shared by this origin's
// tabs, so a reload or a second tab needs no new login. A login in any tab replaces it.
const TOKEN_KEY = 'cloakpipe_inbox_api_token';

function storedToken(): string | null {
  try {
    return localStorage.getItem(TOKEN_KEY);
  } catch {
    return null; // storage refused: the login page says so
  }
}

class LoggedOut extends Error {}

/** Set once this page logs out: what fails after that (the event stream it ended) sends nowhere else. */
let leaving = false;

/** To the login page, saying why; the token that failed is dropped (unless another tab replaced it). */
function relogin(why: 'expired' | 'missing' | 'loggedout', failed?: string): LoggedOut {
  if (leaving && why !== 'loggedout') return new LoggedOut('logged out');
  try {
    if (failed !== undefined && localStorage.getItem(TOKEN_KEY) === failed) localStorage.removeItem(TOKEN_KEY);
  } catch {
    // nothing kept, nothing to drop
  }
  location.assign(`/login?why=${why}`);
  return new LoggedOut('log in');
}

/** A request of the API: the cookie and the API token. 401/403: the session is over, or this token is not its. */
async function send(path: string, init: RequestInit = {}): Promise<Response> {
  for (let retried = false; ; retried = true) {
    const token = storedToken();
    if (token === null) throw relogin('missing');
    const res = await fetch(path, { credentials: 'same-origin', cache: 'no-store', ...init, headers: { 'X-CSRF-Token': token } });
    if (res.status !== 401 && res.status !== 403) return res;
    // Another tab logged in meanwhile (a new cookie, a new token): once more with its token.
    if (!retried && storedToken() !== token) continue;
    throw relogin('expired', token);
  }
}

async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const res = await send(path, init);
  const body = (await res.json().catch(() => ({}))) as T & { error?: string };
  if (!res.ok) throw new Error(body.error ?? `HTTP ${res.status}`);
  return body;
}

function renderList(): void {
  const ul = $('requests');
  const focused = document.activeElement instanceof HTMLElement ? document.activeElement.dataset.id : undefined;
  ul.replaceChildren();
  for (const r of requests) {
    const args = r.arguments;
    const preview =
      args === null
        ? `arguments of ${size(r.call_bytes)}: open to see them`
        : Object.keys(args)
            .slice(0, 2)
            .map((n) => `${shown(n)}=${shown(args[n]).replace(/\s+/g, ' ').slice(0, 60)}`)
            .join('  ');
    const b = el(
      'button',
      { type: 'button', 'data-id': r.id, 'aria-current': String(r.id === selected) },
      el('span', { class: 'tool' }, shown(r.tool)),
      el('span', { class: 'meta' }, `task ${r.task === null ? '(none)' : shown(r.task)} · ${shown(r.label)} · ${ago(r.created_at)}`),
      el('span', { class: 'preview' }, preview || '(no arguments)'),
    );
    b.addEventListener('click', () => select(r.id, true));
    ul.append(el('li', {}, b));
  }
  $('count').textContent = requests.length ? String(requests.length) : '';
  $('empty').hidden = requests.length > 0;
  if (focused) (ul.querySelector(`button[data-id="${CSS.escape(focused)}"]`) as HTMLElement | null)?.focus();
}

/** Requests opened whose arguments the list left out, whole, by id. */
const opened = new Map<string, Req>();

const size = (bytes: number) => (bytes >= 1_048_576 ? `${(bytes / 1_048_576).toFixed(1)} MB` : `${Math.ceil(bytes / 1024)} KB`);

function renderDetail(result?: { ok: boolean; text: string }): void {
  const d = $('detail');
  const listed = requests.find((x) => x.id === selected);
  const r = listed && listed.arguments === null ? opened.get(listed.id) : listed;
  d.replaceChildren();
  if (result) d.append(el('p', { class: `result ${result.ok ? 'ok' : 'bad'}`, role: 'status' }, result.text));
  if (listed && !r) {
    // No Approve before the person can see every argument.
    d.append(el('p', { class: 'placeholder' }, `Reading the arguments (${size(listed.call_bytes)})…`));
    void open(listed.id);
    return;
  }
  if (!r || r.arguments === null) {
    if (!result) d.append(el('p', { class: 'placeholder' }, 'Select a call to see exactly what would be forwarded.'));
    return;
  }
  const args = r.arguments;
  const decl = r.rule.declaration ?? {};
  const facts = el('dl', { class: 'facts' });
  const fact = (k: string, v: string) => facts.append(el('dt', {}, k), el('dd', {}, v));
  fact('Task', r.task === null ? '(no task)' : shown(r.task));
  fact('Session label', shown(r.label));
  fact('Refused', `${ago(r.created_at)} · ledger entry #${r.entry}${r.gate ? ` of gate ${r.gate}` : ''}`);
  fact('Expires', until(r.expires_at));
  const table = el('table', { class: 'args' }, el('thead', {}, el('tr', {}, el('th', {}, 'Argument'), el('th', {}, 'Value'), el('th', {}, 'Manifest rule'))));
  const body = el('tbody');
  const names = Object.keys(args).sort();
  for (const n of names) body.append(el('tr', {}, el('th', { scope: 'row' }, shown(n)), valueCell(args[n]), el('td', { class: 'rule' }, ruleText(decl.arguments?.[n]))));
  if (names.length === 0) body.append(el('tr', {}, el('td', { colspan: '3' }, '(no arguments)')));
  table.append(body);
  const why = el(
    'p',
    { class: 'why' },
    'Manifest ',
    el('code', {}, r.rule.release),
    ' declares ',
    el('code', {}, `tools.${r.rule.tool}`),
    ` with `,
    el('code', {}, `approval: ${decl.approval ?? 'required'}`),
    ` (effect: ${decl.effect ?? '?'}), so a person must approve this exact call.`,
  );
  const approve = el('button', { type: 'button', class: 'primary', id: 'approve' }, 'Approve');
  const deny = el('button', { type: 'button', class: 'danger', id: 'deny' }, 'Deny');
  approve.addEventListener('click', () => void act(r, 'approve'));
  deny.addEventListener('click', () => void act(r, 'deny'));
  d.append(
    el('h2', { id: 'detail-title' }, shown(r.tool)),
    facts,
    el('h3', {}, 'Arguments, as they would be forwarded'),
    table,
    el('h3', {}, 'Why approval is required'),
    why,
    el('p', { class: 'fp' }, `fingerprint ${r.fingerprint} · manifest ${r.rule.manifest_digest}`),
    el(
      'div',
      { class: 'actions' },
      approve,
      deny,
      el('span', { class: 'hint' }, session ? `Receipt valid ${Math.round(session.ttl_ms / 60000) || '<1'} min, once` : ''),
    ),
  );
}

/** A long call's request read whole (once at a time), then shown if it is still the one selected. */
const opening = new Set<string>();
async function open(id: string): Promise<void> {
  if (opening.has(id)) return;
  opening.add(id);
  let r: Req;
  try {
    r = await api<Req>(`/api/requests/${encodeURIComponent(id)}`);
  } catch (e) {
    if (e instanceof LoggedOut) return;
    // Unselected, so the error stays until the person opens it again (no loop of retries).
    if (selected === id) {
      selected = null;
      renderList();
      renderDetail({ ok: false, text: `Cannot read this call: ${(e as Error).message}` });
    }
    return;
  } finally {
    opening.delete(id);
  }
  opened.set(id, r);
  if (selected === id) renderDetail();
}

function select(id: string, focusDetail: boolean): void {
  selected = id;
  renderList();
  renderDetail();
  if (focusDetail) $('detail').focus();
}

async function act(r: Req, action: 'approve' | 'deny'): Promise<void> {
  document.querySelectorAll<HTMLButtonElement>('.actions button').forEach((b) => (b.disabled = true));
  let result: { ok: boolean; text: string };
  try {
    const d = await api<{ receipt?: string; expires_at?: string; entry: number }>(`/api/requests/${encodeURIComponent(r.id)}/${action}`, { method: 'POST' });
    result =
      action === 'approve'
        ? { ok: true, text: `Approved ${r.tool}: receipt ${d.receipt} valid until ${new Date(d.expires_at ?? '').toLocaleTimeString()}. The host's retry of this exact call is allowed once. (ledger entry #${d.entry})` }
        : { ok: true, text: `Denied ${r.tool}. Recorded as ledger entry #${d.entry}.` };
  } catch (e) {
    if (e instanceof LoggedOut) return;
    result = { ok: false, text: `Not done: ${(e as Error).message}` };
  }
  selected = null;
  await refresh();
  renderDetail(result);
  $('live').textContent = result.text;
}

/** `ifChanged`: an event's or a poll's refresh leaves the page as it is when the list is the same, so a click on it is not lost to a re-render. */
async function refresh(ifChanged = false): Promise<void> {
  const { requests: list } = await api<{ requests: Req[] }>('/api/requests');
  if (ifChanged && JSON.stringify(list) === JSON.stringify(requests)) return;
  const arrived = list.filter((r) => !requests.some((o) => o.id === r.id)).length;
  requests = list;
  for (const id of opened.keys()) if (!requests.some((r) => r.id === id)) opened.delete(id);
  if (selected && !requests.some((r) => r.id === selected)) selected = null;
  renderList();
  if (arrived > 0 && document.readyState === 'complete') $('live').textContent = `${arrived} new call${arrived > 1 ? 's' : ''} waiting`;
  if (selected) renderDetail();
  else if (!$('detail').querySelector('.result')) renderDetail();
}

function keys(e: KeyboardEvent): void {
  const buttons = [...document.querySelectorAll<HTMLButtonElement>('#requests button')];
  const i = buttons.indexOf(document.activeElement as HTMLButtonElement);
  if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
    if (buttons.length === 0) return;
    e.preventDefault();
    const next = i < 0 ? 0 : Math.min(buttons.length - 1, Math.max(0, i + (e.key === 'ArrowDown' ? 1 : -1)));
    buttons[next].focus();
  } else if (e.key === 'Escape' && selected) {
    const back = buttons.find((b) => b.dataset.id === selected);
    back?.focus();
  }
}

/** Ends the session at the server (its cookie and API token are refused from then on), then the login page. */
async function logOut(): Promise<void> {
  leaving = true;
  ($('logout') as HTMLButtonElement).disabled = true;
  await send('/logout', { method: 'POST' }).catch(() => undefined);
  throw relogin('loggedout', storedToken() ?? undefined);
}

async function inbox(): Promise<void> {
  $('logout').addEventListener('click', () => void logOut().catch(() => undefined));
  session = await api<SessionInfo>('/api/session');
  $('signer').textContent = `Approvals are signed with ${session.approver.name} (key ${session.approver.key_id.slice(0, 19)}…)`;
  $('signer').title = session.approver.key_id;
  document.addEventListener('keydown', keys);
  await refresh();
  window.setInterval(() => renderList(), 15_000);
  await watch(() => void refresh(true).catch(() => undefined));
}

/**
 * Calls `changed` whenever the pending set changes. The event stream is read with fetch, not
 * EventSource, which cannot send the API token; while it is down, the list is polled.
 */
async function watch(changed: () => void): Promise<void> {
  let polling: number | undefined;
  for (;;) {
    try {
      const res = await send('/api/events');
      if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
      if (polling !== undefined) window.clearInterval(polling);
      polling = undefined;
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffered = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffered += value;
        let end: number;
        while ((end = buffered.indexOf('\n\n')) >= 0) {
          if (/^event: requests$/m.test(buffered.slice(0, end))) changed();
          buffered = buffered.slice(end + 2);
        }
      }
    } catch (e) {
      if (e instanceof LoggedOut) return;
    }
    polling ??= window.setInterval(changed, 3000);
    await new Promise((r) => setTimeout(r, 2000));
  }
}

const WHY: Record<string, string> = {
  signin: 'Log in to see the calls waiting. A login holds for the address it was made at: 127.0.0.1 and localhost are two, each logged in on its own.',
  loggedout: 'Logged out: that session and its API token are over.',
  expired: 'Your session is over (logged out, expired after 12 h, or replaced by another login): log in again.',
  missing:
    'This browser holds no API token for this address. The inbox keeps it per origin (scheme, host and port: 127.0.0.1 and localhost are two), beside its cookie: log in here once, and this address works in every tab.',
};

function login(): void {
  const form = document.querySelector('form') as HTMLFormElement;
  const input = $('token') as HTMLInputElement;
  const why = WHY[new URLSearchParams(location.search).get('why') ?? ''];
  if (why) {
    $('why').textContent = why;
    $('why').hidden = false;
  }
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void logIn(form, input.value);
  });
  // A login link may carry the token in its fragment (never sent to any server): it is posted
  // once, and dropped from the address bar first.
  const m = /^#token=([A-Za-z0-9_\-.~%]+)$/.exec(location.hash);
  if (!m) return;
  history.replaceState(null, '', '/login');
  void logIn(form, decodeURIComponent(m[1]));
}

/** Posts the login token; the answer sets the cookie and holds the API token, kept for this origin. */
async function logIn(form: HTMLFormElement, token: string): Promise<void> {
  const button = form.querySelector('button') as HTMLButtonElement;
  const error = $('error');
  button.disabled = true;
  let text: string;
  try {
    const res = await fetch('/login', { method: 'POST', body: new URLSearchParams({ token }), credentials: 'same-origin', cache: 'no-store' });
    const body = (await res.json().catch(() => ({}))) as { csrf?: string; error?: string };
    if (res.ok && typeof body.csrf === 'string') {
      localStorage.setItem(TOKEN_KEY, body.csrf);
      return location.replace('/');
    }
    text = res.status === 401 ? "That token is not the inbox's login token." : `Not logged in: ${body.error ?? `HTTP ${res.status}`}`;
  } catch (e) {
    text = e instanceof DOMException ? 'This browser does not let the page keep its API token (localStorage): the inbox cannot work without it.' : `Not logged in: ${(e as Error).message}`;
  }
  error.textContent = text;
  error.hidden = false;
  button.disabled = false;
}

if (document.body.dataset.page === 'login') login();
else
  void inbox().catch((e) => {
    if (!(e instanceof LoggedOut)) $('live').textContent = `The inbox could not load: ${(e as Error).message}`;
  });

export {};
