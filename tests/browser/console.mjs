// tests/browser/console.mjs - the console in a real headless Chromium
// (Debian's, driven by playwright-core), against a real worker that
// check_console.c started and filled. Prints "ok NAME" per check and
// "FAIL NAME: why" for each that failed; exits 1 if any did.
//
// Environment: DLQ_CONSOLE_URL (http://127.0.0.1:PORT), DLQ_OP_TOKEN,
// DLQ_VIEWER_TOKEN, DLQ_QUEUE (a queue with dead letters), DLQ_OTHER_QUEUE,
// DLQ_MARKER (a text every payload holds), DLQ_EVIL_ID (the record with
// markup in its payload, headers and error), DLQ_REPLAY_IDS (three ids,
// newest first, of which the middle one is not eligible), DLQ_UNRESOLVED,
// DLQ_SHOTS (where screenshots go), DLQ_PLAYWRIGHT (playwright-core's
// directory), DLQ_CHROMIUM (the browser).
import path from 'node:path';

const env = (k) => {
  if (!process.env[k]) { console.log(`FAIL setup: ${k} is not set`); process.exit(2); }
  return process.env[k];
};
const base = env('DLQ_CONSOLE_URL');
const { chromium } = await import(path.join(env('DLQ_PLAYWRIGHT'), 'index.mjs'));
let failed = 0;
const check = (name, ok, why = '') => {
  if (ok) console.log(`ok ${name}`);
  else { failed++; console.log(`FAIL ${name}: ${why}`); }
};

const browser = await chromium.launch({
  executablePath: env('DLQ_CHROMIUM'),
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});

// A signed-in page: every request and every sign of script that should
// not have run is watched.
async function signIn(token, viewport) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const watch = { foreign: [], dialogs: [], csp: [], errors: [] };
  page.on('request', (r) => { if (!r.url().startsWith(base) && !r.url().startsWith('data:')) watch.foreign.push(r.url()); });
  page.on('dialog', (d) => { watch.dialogs.push(d.message()); d.dismiss(); });
  page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) watch.csp.push(m.text()); });
  page.on('pageerror', (e) => watch.errors.push(String(e)));
  await page.goto(base + '/ops/dlq');
  check(`${viewport.width}px: an anonymous visit goes to the login form`, page.url().endsWith('/login'), page.url());
  await page.fill('#token', token);
  await Promise.all([page.waitForURL(base + '/ops/dlq'), page.click('button[type=submit]')]);
  await page.waitForSelector('body[data-ready=true]');
  return { context, page, watch };
}

const rowIds = (page) => page.$$eval('#table tbody tr td:nth-child(2)', (tds) => tds.map((t) => Number(t.textContent)));
const queues = (page) => page.$$eval('#table tbody tr td:nth-child(4)', (tds) => tds.map((t) => t.textContent));

// the operator, at 1280 px
{
  const { context, page, watch } = await signIn(env('DLQ_OP_TOKEN'), { width: 1280, height: 900 });
  const cards = await page.$$eval('#overview .card h2', (hs) => hs.map((h) => h.textContent));
  check('the overview shows its cards', ['Unresolved', 'By queue', 'By class', 'Top causes', 'Oldest unresolved', 'Overdue escalations'].every((c) => cards.includes(c)), cards.join(', '));
  const preview = await page.textContent('#table tbody tr:first-child td.preview');
  check('an operator\'s table previews each payload', preview.includes(env('DLQ_MARKER')), preview);
  const unresolved = await page.textContent('#overview .card:first-child .big');
  check('the overview counts the unresolved', unresolved === env('DLQ_UNRESOLVED'), `${unresolved} != ${env('DLQ_UNRESOLVED')}`);
  await page.screenshot({ path: path.join(env('DLQ_SHOTS'), 'console-overview.png'), fullPage: true });

  // filter by queue: the URL keeps it, and the link reproduces the view
  await page.fill('#filters [name=queue]', env('DLQ_OTHER_QUEUE'));
  await page.click('#filters button[type=submit]');
  await page.waitForFunction((q) => location.search.includes('queue=' + q), env('DLQ_OTHER_QUEUE'));
  await page.waitForFunction((q) => [...document.querySelectorAll('#table tbody tr td:nth-child(4)')].every((t) => t.textContent === q) && document.querySelectorAll('#table tbody tr').length > 0, env('DLQ_OTHER_QUEUE'));
  const filtered = await queues(page);
  const url = page.url();
  const again = await context.newPage();
  await again.goto(url);
  await again.waitForSelector('body[data-ready=true]');
  check('a filter is kept in the URL and a link reproduces the view', JSON.stringify(await queues(again)) === JSON.stringify(filtered) && filtered.length > 0, `${filtered} vs ${await queues(again)}`);
  await again.close();

  // the record with markup everywhere: shown as text, nothing runs
  await page.goto(base + '/ops/dlq');
  await page.waitForSelector('body[data-ready=true]');
  await page.click(`button[aria-label="Open dead letter ${env('DLQ_EVIL_ID')}"]`);
  await page.waitForSelector('#record[open] .payload');
  const payload = await page.textContent('#record .payload');
  check('the dialog pretty-prints the payload as text', payload.includes('<script>') && payload.includes('\n  "'), payload.slice(0, 200));
  check('markup in a record makes no element', await page.$$eval('#record img, #record script, #table img, #table script, #record a[href^=javascript]', (e) => e.length) === 0, 'an element was made');
  const headers = await page.textContent('#record-body');
  check('bidi overrides are shown, not obeyed', headers.includes('\\u{202e}') && !headers.includes('\u202e'), 'a raw U+202E in the dialog');
  check('the dialog gives the how-to-fix hint', (await page.textContent('#record .hint')).length > 10, 'no hint');
  await page.screenshot({ path: path.join(env('DLQ_SHOTS'), 'console-dialog.png') });
  await page.keyboard.press('Escape');

  // bulk replay: three selected by a shift-click range, one not eligible
  const ids = env('DLQ_REPLAY_IDS').split(',').map(Number);
  await page.fill('#filters [name=queue]', env('DLQ_QUEUE'));
  await page.click('#filters button[type=submit]');
  await page.waitForFunction((id) => !!document.querySelector(`input[aria-label="Select dead letter ${id}"]`), ids[2]);
  await page.click(`input[aria-label="Select dead letter ${ids[0]}"]`);
  await page.click(`input[aria-label="Select dead letter ${ids[2]}"]`, { modifiers: ['Shift'] });
  const count = await page.textContent('#selcount');
  check('a shift-click selects the range', count === '3 selected', count);
  await page.click('#do-replay');
  await page.waitForSelector('#eligible');
  const elig = await page.textContent('#eligible');
  check('the replay preview shows eligible / selected', elig === '2 / 3 eligible', elig);
  await page.fill('#f-reason', 'fixed upstream (browser test)');
  await page.click('#action-go');
  await page.waitForFunction(() => /: (done|failed|stopped|canary_failed);/.test(document.querySelector('#action-result').textContent));
  const result = await page.textContent('#action-result');
  check('the replay reports its result', /done; published 2, failed 0, unknown 0, refused 0/.test(result), result);
  await page.click('#action-close');

  check('1280px: no request left the console origin', watch.foreign.length === 0, watch.foreign.join(' '));
  check('1280px: no script ran from a record', watch.dialogs.length === 0 && !(await page.evaluate(() => window.__pwned)), watch.dialogs.join(' '));
  check('1280px: no CSP violation and no page error', watch.csp.length === 0 && watch.errors.length === 0, watch.csp.concat(watch.errors).join(' '));
  await context.close();
}

// the viewer, on a phone
{
  const { context, page, watch } = await signIn(env('DLQ_VIEWER_TOKEN'), { width: 390, height: 844 });
  check('a viewer sees no replay, drop or assign', await page.$$eval('.op', (b) => b.every((x) => x.hidden)), 'an action button is shown');
  await page.click(`button[aria-label="Open dead letter ${env('DLQ_EVIL_ID')}"]`);
  await page.waitForSelector('#record[open] .hint');
  check('a viewer\'s dialog has no payload', await page.$$eval('#record .payload', (e) => e.length) === 0, 'payload shown');
  const html = await page.content();
  check('a viewer\'s page holds no payload bytes', !html.includes(env('DLQ_MARKER')), 'marker found');
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  check('390px: the page fits the phone', wide <= 390, `${wide}px wide`);
  check('390px: no request left the console origin', watch.foreign.length === 0, watch.foreign.join(' '));
  check('390px: no script ran, no CSP violation', watch.dialogs.length === 0 && watch.csp.length === 0 && watch.errors.length === 0, watch.dialogs.concat(watch.csp, watch.errors).join(' '));
  await context.close();
}

await browser.close();
process.exit(failed ? 1 : 0);
