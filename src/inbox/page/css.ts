// The inbox's style sheet: system fonts, no images, readable from a phone to a wide screen.
export const APP_CSS = `
:root {
  --bg: #f5f6f8; --panel: #ffffff; --ink: #1c2330; --muted: #5b6576; --line: #dde1e7;
  --accent: #1f5fbf; --accent-ink: #ffffff; --ok: #17783c; --bad: #b3261e; --warn-bg: #fff4e0;
  --sel: #e8f0fc; --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  color-scheme: light;
}
* { box-sizing: border-box; }
html, body { margin: 0; background: var(--bg); color: var(--ink); font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
code, pre, .mono { font-family: var(--mono); font-size: 13px; }
h1 { font-size: 18px; margin: 0; font-weight: 650; }
h1 span { font-weight: 400; color: var(--muted); }
h2 { font-size: 15px; margin: 0 0 8px; }
h3 { font-size: 13px; margin: 18px 0 6px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 8px; top: 8px; background: var(--panel); padding: 6px 10px; z-index: 2; }
.bar { display: flex; flex-wrap: wrap; gap: 4px 16px; align-items: baseline; justify-content: space-between; padding: 12px 20px; background: var(--panel); border-bottom: 1px solid var(--line); }
.signer { margin: 0; color: var(--muted); font-size: 13px; overflow-wrap: anywhere; }
.logout { font: inherit; font-size: 13px; padding: 2px 10px; }
.layout { display: grid; grid-template-columns: minmax(260px, 340px) 1fr; gap: 16px; padding: 16px 20px; align-items: start; max-width: 1280px; }
.list, .detail { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 14px; min-width: 0; }
.count { display: inline-block; min-width: 1.6em; padding: 0 6px; border-radius: 10px; background: var(--accent); color: var(--accent-ink); font-size: 12px; text-align: center; }
.count:empty { display: none; }
.live { margin: 0; min-height: 0; font-size: 13px; color: var(--muted); }
.requests { list-style: none; margin: 0; padding: 0; }
.requests li + li { margin-top: 6px; }
.requests button { display: block; width: 100%; text-align: left; background: none; border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; font: inherit; color: inherit; cursor: pointer; }
.requests button:hover { border-color: var(--accent); }
.requests button[aria-current="true"] { background: var(--sel); border-color: var(--accent); }
.requests .tool { font-weight: 600; }
.requests .meta, .requests .preview { display: block; font-size: 12px; color: var(--muted); overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.requests .preview { font-family: var(--mono); }
.empty, .placeholder { color: var(--muted); margin: 6px 0; }
.detail:focus { outline: none; }
.detail h2 { font-size: 20px; font-family: var(--mono); overflow-wrap: anywhere; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 14px; margin: 8px 0 0; font-size: 14px; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; overflow-wrap: anywhere; }
table.args { width: 100%; border-collapse: collapse; table-layout: fixed; }
table.args th, table.args td { text-align: left; vertical-align: top; padding: 6px 8px; border-top: 1px solid var(--line); }
table.args th { font-weight: 600; font-family: var(--mono); font-size: 13px; overflow-wrap: anywhere; }
table.args thead th { font-family: inherit; font-size: 12px; color: var(--muted); border-top: none; }
table.args thead th:nth-child(1) { width: 11em; }
table.args thead th:nth-child(3) { width: 13em; }
table.args td.rule { color: var(--muted); font-family: var(--mono); font-size: 12px; overflow-wrap: anywhere; }
pre.value { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 16em; overflow: auto; background: #f7f8fa; border: 1px solid var(--line); border-radius: 4px; padding: 4px 6px; }
.esc { background: var(--warn-bg); color: var(--bad); border-radius: 3px; }
.type { display: inline-block; margin-bottom: 2px; padding: 0 5px; border: 1px solid var(--line); border-radius: 3px; font-size: 11px; color: var(--muted); }
.why { background: var(--warn-bg); border-radius: 6px; padding: 8px 10px; margin: 0; }
.fp { font-family: var(--mono); font-size: 12px; overflow-wrap: anywhere; color: var(--muted); }
.actions { display: flex; flex-wrap: wrap; gap: 10px; margin-top: 18px; align-items: center; }
button.primary, button.danger { font: inherit; font-weight: 600; padding: 8px 18px; border-radius: 6px; cursor: pointer; border: 1px solid transparent; }
button.primary { background: var(--accent); color: var(--accent-ink); }
button.danger { background: var(--panel); color: var(--bad); border-color: var(--bad); }
button:disabled { opacity: .5; cursor: default; }
:focus-visible { outline: 3px solid #f0a500; outline-offset: 2px; }
.result { margin-top: 14px; padding: 8px 10px; border-radius: 6px; }
.result.ok { background: #e6f4ea; color: var(--ok); }
.result.bad { background: #fce8e6; color: var(--bad); }
.foot { padding: 0 20px 20px; font-size: 12px; color: var(--muted); }
.login { max-width: 380px; margin: 12vh auto; background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 22px; }
.login form { display: grid; gap: 8px; margin-top: 16px; }
.login input { font: inherit; padding: 8px; border: 1px solid var(--line); border-radius: 6px; }
.error { color: var(--bad); margin: 0; }
.hint { color: var(--muted); font-size: 13px; }
@media (max-width: 760px) {
  .layout { grid-template-columns: 1fr; padding: 10px; }
  .bar { padding: 10px; }
  table.args, table.args tbody, table.args tr, table.args th, table.args td { display: block; width: auto; }
  table.args thead { display: none; }
  table.args th { border-top: 1px solid var(--line); padding-bottom: 0; }
  table.args td { border-top: none; }
  table.args td.rule { width: auto; padding-top: 0; }
}
`;
