// The inbox's two pages. Static text only: what a request holds reaches the page as JSON and is
// put into it by app.js as text nodes, never as markup.

export const INDEX_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Approval inbox · cloakpipe</title>
<link rel="stylesheet" href="/app.css">
<script type="module" src="/app.js"></script>
</head>
<body data-page="inbox">
<a class="skip" href="#detail">Skip to the selected call</a>
<header class="bar">
  <h1>cloakpipe <span>approval inbox</span></h1>
  <p id="signer" class="signer">Loading…</p>
  <button id="logout" type="button" class="logout">Log out</button>
</header>
<main class="layout">
  <section class="list" aria-labelledby="list-title">
    <h2 id="list-title">Waiting for approval <span id="count" class="count"></span></h2>
    <p id="live" class="live" role="status" aria-live="polite"></p>
    <ul id="requests" class="requests"></ul>
    <p id="empty" class="empty" hidden>No call is waiting for approval. New ones appear here by themselves.</p>
  </section>
  <section id="detail" class="detail" tabindex="-1" aria-live="polite">
    <p class="placeholder">Select a call to see exactly what would be forwarded.</p>
  </section>
</main>
<footer class="foot">Arrow keys move through the list · Enter opens a call · Approve signs a receipt for that exact call, usable once</footer>
</body>
</html>
`;

// The login form is posted by app.js (fetch), which keeps the API token the answer holds; it
// posts to /login even without the script, so a token typed in is never put in a URL.
export const LOGIN_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Log in · cloakpipe approval inbox</title>
<link rel="stylesheet" href="/app.css">
<script type="module" src="/app.js"></script>
</head>
<body data-page="login">
<main class="login">
  <h1>cloakpipe <span>approval inbox</span></h1>
  <p id="why" class="hint" role="status" hidden></p>
  <form method="post" action="/login">
    <label for="token">Login token</label>
    <input id="token" name="token" type="password" autocomplete="off" required autofocus>
    <p id="error" class="error" role="alert" hidden></p>
    <button type="submit" class="primary">Log in</button>
  </form>
  <p class="hint">The token is printed by <code>cloakpipe inbox serve</code>, or is the one in its <code>--auth-token-file</code>.</p>
</main>
</body>
</html>
`;
