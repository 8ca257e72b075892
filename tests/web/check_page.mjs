// Loads a paratune HTML view in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core from web/node_modules) as a person would, and checks it:
//   - the page renders (body[data-rendered] set by report.js) without console errors or page errors;
//   - every chart container has a drawn chart: data-points > 0 and, with the SVG renderer, that many
//     drawn elements at least (--min-charts N: at least N such charts);
//   - --expect-text T: the text T appears (repeatable);
//   - --wait-text T: waits up to --wait-s seconds for T to appear (the live dashboard: a trial that
//     finished after the page was opened); --initial-not-text T: T must not be there when the page
//     first renders (so what appears later came through the live updates); --ready-file F: F is
//     written once the page has first rendered (a test starts the study only then);
//   - --hostile: the page draws strings a test planted with markup (each planted element has class
//     "pwn" and an event handler that would set the page's title): shows the tooltip of each data
//     point of each chart (the first MAX_TIPS of each series), then fails if planted markup became an
//     element (class pwn, or any on* attribute), or the title changed. It also counts the tooltips
//     that showed a planted string as text ("payload_tips"), so a test can check the strings were there;
//   - --width W: the window's width in CSS pixels (default 1366); --fits-width: nothing is wider than
//     the window, and no table needs its horizontal scroll bar;
//   - --screenshot FILE: a screenshot of the first screen (JPEG when FILE ends in .jpg: small enough
//     to keep in docs/), or of the whole page with --full-page.
// Prints one JSON line: {url, charts: [{id, points, drawn, series, x_axes, texts}], load_ms, errors,
// hostile}; exits 1 on a failed
// check, 2 on bad arguments.
import { chromium } from '../../web/node_modules/playwright-core/index.mjs';
import { pathToFileURL } from 'node:url';
import { existsSync, writeFileSync } from 'node:fs';

const args = process.argv.slice(2);
const opts = { expect: [], wait: [], minCharts: 0, waitS: 60, width: 1366, height: 900 };
for (let i = 0; i < args.length; i++) {
  const a = args[i], v = args[i + 1];
  if (a === '--page') { opts.page = v; i++; }
  else if (a === '--screenshot') { opts.screenshot = v; i++; }
  else if (a === '--min-charts') { opts.minCharts = Number(v); i++; }
  else if (a === '--expect-text') { opts.expect.push(v); i++; }
  else if (a === '--wait-text') { opts.wait.push(v); i++; }
  else if (a === '--initial-not-text') { opts.notInitially = v; i++; }
  else if (a === '--ready-file') { opts.readyFile = v; i++; }
  else if (a === '--wait-s') { opts.waitS = Number(v); i++; }
  else if (a === '--full-page') { opts.fullPage = true; }
  else if (a === '--hostile') { opts.hostile = true; }
  else if (a === '--width') { opts.width = Number(v); i++; }
  else if (a === '--fits-width') { opts.fitsWidth = true; }
  else { console.error(`check_page: unknown argument ${a}`); process.exit(2); }
}
if (!opts.page) { console.error('check_page: --page FILE|URL is required'); process.exit(2); }
const url = /^https?:/.test(opts.page) ? opts.page : pathToFileURL(opts.page).href;
const executablePath = process.env.PARATUNE_CHROMIUM || '/usr/bin/chromium';
if (!existsSync(executablePath)) { console.error(`check_page: no Chromium at ${executablePath}`); process.exit(2); }

const MAX_TIPS = 200;

// In the page: every chart's tooltip for each data point (ECharts' showTip, as a hover does), then
// what planted markup became. Checked after every tooltip (the next one replaces it) and at the end.
async function hoverEveryChart(page) {
  return page.evaluate(async (maxTips) => {
    const injected = [];
    const look = (where) => {
      document.querySelectorAll('.pwn').forEach((e) => injected.push(`${where}: ${e.outerHTML.slice(0, 160)}`));
      document.querySelectorAll('*').forEach((e) => {
        for (const a of e.attributes) if (/^on/i.test(a.name)) injected.push(`${where}: <${e.tagName.toLowerCase()} ${a.name}=...>`);
      });
    };
    let tips = 0, payloadTips = 0;
    for (const div of document.querySelectorAll('.chart')) {
      const chart = echarts.getInstanceByDom(div);
      if (!chart) continue;
      const series = chart.getOption().series || [];
      for (let s = 0; s < series.length; s++) {
        const count = Math.min((series[s].data || []).length, maxTips);
        for (let i = 0; i < count; i++) {
          chart.dispatchAction({ type: 'showTip', seriesIndex: s, dataIndex: i });
          // ECharts' tooltip is the chart container's child that holds no drawing.
          const tip = Array.from(div.children).find((c) => !c.querySelector('svg, canvas') && c.innerHTML !== '');
          if (tip && tip.style.display !== 'none') {
            tips++;
            if (tip.textContent.includes("document.title='pwned'")) payloadTips++;
          }
          if (div.querySelector('.pwn, [onerror], [onload]')) look(`${div.id} series ${s} point ${i}`);
        }
      }
      chart.dispatchAction({ type: 'hideTip' });
    }
    // An image's error, a frame's load: handlers that would run a moment later.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    look('after every tooltip');
    return { tips, payload_tips: payloadTips, injected: Array.from(new Set(injected)).slice(0, 20) };
  }, MAX_TIPS);
}

const browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-gpu'] });
const failures = [];
const errors = [];
try {
  const page = await browser.newPage({ viewport: { width: opts.width, height: opts.height } });
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  const start = Date.now();
  await page.goto(url, { waitUntil: 'load', timeout: 120000 });
  await page.waitForSelector('body[data-rendered]', { timeout: 120000 });
  const loadMs = Date.now() - start;
  const title = await page.title();
  if (opts.notInitially !== undefined && (await page.evaluate(() => document.body.innerText)).includes(opts.notInitially))
    failures.push(`"${opts.notInitially}" was there when the page first rendered`);
  if (opts.readyFile) writeFileSync(opts.readyFile, `${loadMs}\n`);
  for (const text of opts.wait) {
    try {
      await page.waitForFunction((t) => document.body.innerText.includes(t), text, { timeout: opts.waitS * 1000, polling: 250 });
    } catch (e) {
      failures.push(`"${text}" did not appear within ${opts.waitS} s`);
    }
  }
  const charts = await page.$$eval('.chart', (divs) => divs.map((d) => ({
    id: d.id,
    points: Number(d.getAttribute('data-points') || 0),
    svg: !!d.querySelector('svg'),
    // Drawn marks: SVG shapes of the chart (axes and labels included; a chart with data has more).
    drawn: d.querySelectorAll('svg path, svg rect, svg circle, svg polyline').length,
    canvas: !!d.querySelector('canvas'),
    // How it was drawn, for tests of the views: its series' names (what its legend shows), its x
    // axes' types and minimum intervals, and its SVG text (labels and axis ticks; the first 100).
    ...((chart) => {
      if (!chart) return {};
      const option = chart.getOption();
      return {
        series: (option.series || []).map((s) => s.name || ''),
        x_axes: (option.xAxis || []).map((a) => ({ type: a.type, min_interval: a.minInterval || 0 })),
        texts: Array.from(d.querySelectorAll('svg text')).slice(0, 100).map((t) => t.textContent),
      };
    })(window.echarts && echarts.getInstanceByDom(d)),
  })));
  const withData = charts.filter((c) => c.points > 0 && ((c.svg && c.drawn >= Math.min(c.points, 50)) || c.canvas));
  if (withData.length < opts.minCharts)
    failures.push(`${withData.length} charts with drawn data points, expected at least ${opts.minCharts}: ${JSON.stringify(charts)}`);
  if (opts.fitsWidth) {
    const wide = await page.evaluate(() => {
      const out = [];
      if (document.documentElement.scrollWidth > window.innerWidth)
        out.push(`the page is ${document.documentElement.scrollWidth} px wide in a ${window.innerWidth} px window`);
      document.querySelectorAll('.table-wrap').forEach((w) => {
        if (w.scrollWidth > w.clientWidth + 1) out.push(`a table is ${w.scrollWidth} px wide in its ${w.clientWidth} px`);
      });
      return out;
    });
    for (const w of wide) failures.push(w);
  }
  let hostile;
  if (opts.hostile) {
    hostile = await hoverEveryChart(page);
    hostile.title_before = title;
    hostile.title_after = await page.title();
    for (const i of hostile.injected) failures.push(`planted markup became an element: ${i}`);
    if (hostile.title_after !== title) failures.push(`the page's title changed from "${title}" to "${hostile.title_after}"`);
    if (hostile.tips === 0) failures.push('no chart showed a tooltip');
  }
  const body = await page.evaluate(() => document.body.innerText);
  for (const text of opts.expect) if (!body.includes(text)) failures.push(`"${text}" not on the page`);
  if (opts.screenshot) {
    const jpeg = /\.jpe?g$/i.test(opts.screenshot);
    await page.screenshot({ path: opts.screenshot, fullPage: !!opts.fullPage, type: jpeg ? 'jpeg' : 'png', quality: jpeg ? 70 : undefined });
  }
  for (const e of errors) failures.push(e);
  console.log(JSON.stringify({ url, load_ms: loadMs, charts, errors, hostile }));
} catch (e) {
  failures.push(String(e && e.message ? e.message : e));
} finally {
  await browser.close();
}
if (failures.length) {
  for (const f of failures) console.error(`check_page: ${f}`);
  process.exit(1);
}
