// paratune's HTML views (report/html_page.h): draws the plan, simulation or study whose JSON is in
// <script id="paratune-data">, with Apache ECharts (inlined before this script). Plain ES2017, no
// build step: the file is embedded in the paratune binary as it is (cmake/embed_web.cmake).
//
// Charts use ECharts' SVG renderer, so each data point is an element of the page (the browser tests
// count them); a chart of more than MANY_POINTS points uses the canvas renderer to stay fast. Every
// chart's container carries data-points: how many points it was given.
(function () {
  'use strict';

  var MANY_POINTS = 1500;
  var TABLE_PAGE = 200;
  var STATUS_COLORS = {
    completed: '#2f7d32', running: '#1565c0', pruned: '#8d6e63', 'early-stopped': '#00838f', interrupted: '#9e9e9e',
    failed: '#c62828', oom: '#ad1457', infeasible: '#6a1b9a', timeout: '#ef6c00'
  };
  // The simulator's event colours come with the page (timeline_colors: report/sim_report.h
  // timeline_colours(), the palette of the SVG timeline too), so both pictures agree.
  var UNKNOWN_COLOR = '#999999';

  var charts = [];

  // ---- Small helpers. ----

  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (k === 'text') node.textContent = attrs[k];
        else if (k === 'cls') node.className = attrs[k];
        else node.setAttribute(k, attrs[k]);
      });
    }
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) continue;
      node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return node;
  }

  function num(v, digits) {
    if (v === null || v === undefined || (typeof v === 'number' && !isFinite(v))) return '-';
    if (typeof v !== 'number') return String(v);
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(digits === undefined ? 3 : digits);
    return Number(v.toPrecision(digits === undefined ? 4 : digits)).toString();
  }

  function seconds(s) {
    if (s === null || s === undefined || !isFinite(s)) return '-';
    if (s === 0) return '0 s';
    if (s >= 3600) return (s / 3600).toFixed(2) + ' h';
    if (s >= 60) return (s / 60).toFixed(1) + ' min';
    if (s >= 1) return s.toFixed(2) + ' s';
    if (s >= 1e-3) return (s * 1e3).toFixed(2) + ' ms';
    return (s * 1e6).toFixed(1) + ' \u00b5s';
  }

  function bytes(b) {
    if (b === null || b === undefined || !isFinite(b)) return '-';
    var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    var i = 0;
    while (Math.abs(b) >= 1024 && i < units.length - 1) { b /= 1024; i++; }
    return b.toFixed(i === 0 ? 0 : 1) + ' ' + units[i];
  }

  // ---- Text that becomes HTML. ----
  //
  // ECharts puts what a tooltip formatter returns into the page as HTML, and almost every string a
  // page shows comes from a file someone else may have written: a study's parameter names and values,
  // objective, trial reasons and workers; a model's, cluster's or GPU's name. So nothing in this file
  // builds HTML from data. A tooltip formatter returns plain text (lines separated by '\n'), and
  // chart(), the one place charts are drawn, escapes it with tooltipHtml() before ECharts sees it.
  // All other text reaches the page as textContent (el()) or as ECharts' SVG/canvas text (axis names,
  // labels, legends, titles), which is never parsed as HTML; ECharts' default tooltips escape too.
  var HTML_ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\'': '&#39;' };

  function escapeHtml(text) {
    return String(text).replace(/[&<>"']/g, function (c) { return HTML_ESCAPES[c]; });
  }

  function tooltipHtml(text) {
    return escapeHtml(text === null || text === undefined ? '' : text).replace(/\n/g, '<br>');
  }

  // The tooltips of `option` (the chart's and each series') made safe: a formatter function's text is
  // escaped. A string formatter is refused: ECharts takes such a template itself as HTML, so a string
  // built from data would be markup.
  function escapeTooltips(option) {
    var tooltips = [option.tooltip].concat((option.series || []).map(function (s) { return s.tooltip; }));
    tooltips.forEach(function (t) {
      if (!t || t.formatter === undefined) return;
      if (typeof t.formatter !== 'function') throw new Error('report.js: a tooltip formatter must be a function that returns text');
      var text = t.formatter;
      t.formatter = function () { return tooltipHtml(text.apply(null, arguments)); };
    });
  }

  function paramText(params) {
    if (!params || typeof params !== 'object') return '';
    return Object.keys(params).map(function (k) { return k + '=' + (typeof params[k] === 'number' ? num(params[k]) : params[k]); }).join(' ');
  }

  function section(parent, title, note) {
    var s = el('section', { cls: 'card' }, el('h2', { text: title }));
    if (note) s.appendChild(el('p', { cls: 'note', text: note }));
    parent.appendChild(s);
    return s;
  }

  // A chart in `parent`: created once, redrawn by later calls with the same id (the live view).
  function chart(parent, id, height, option, points) {
    var div = document.getElementById(id);
    if (!div) {
      div = el('div', { id: id, cls: 'chart' });
      div.style.height = height + 'px';
      parent.appendChild(div);
    }
    var instance = echarts.getInstanceByDom(div);
    var renderer = points > MANY_POINTS ? 'canvas' : 'svg';
    if (instance && instance.__paratuneRenderer !== renderer) { instance.dispose(); instance = null; }
    if (!instance) {
      instance = echarts.init(div, null, { renderer: renderer });
      instance.__paratuneRenderer = renderer;
      charts.push(instance);
    }
    option.animation = false;
    escapeTooltips(option);
    instance.setOption(option, true);
    div.setAttribute('data-points', String(points));
    return instance;
  }

  // A sortable table (click a header; again to reverse), TABLE_PAGE rows at a time.
  function table(parent, columns, rows, id) {
    var wrap = id ? document.getElementById(id) : null;
    if (wrap) wrap.innerHTML = '';
    else {
      wrap = el('div', { cls: 'table-wrap' });
      if (id) wrap.id = id;
      parent.appendChild(wrap);
    }
    var state = { key: null, descending: false, shown: TABLE_PAGE };
    var t = el('table', { cls: 'sortable' });
    var head = el('tr');
    columns.forEach(function (c, i) {
      var th = el('th', { text: c.title, title: 'sort by ' + c.title });
      th.addEventListener('click', function () {
        state.descending = state.key === i ? !state.descending : false;
        state.key = i;
        render();
      });
      head.appendChild(th);
    });
    t.appendChild(el('thead', null, head));
    var body = el('tbody');
    t.appendChild(body);
    var more = el('button', { cls: 'more' });
    more.addEventListener('click', function () { state.shown = rows.length; render(); });
    wrap.appendChild(t);
    wrap.appendChild(more);
    function render() {
      var sorted = rows.slice();
      if (state.key !== null) {
        var key = columns[state.key].sort || columns[state.key].value;
        sorted.sort(function (a, b) {
          var x = key(a), y = key(b);
          if (x === y) return 0;
          if (x === null || x === undefined) return 1;
          if (y === null || y === undefined) return -1;
          var r = x < y ? -1 : 1;
          return state.descending ? -r : r;
        });
      }
      body.innerHTML = '';
      sorted.slice(0, state.shown).forEach(function (row) {
        var tr = el('tr');
        columns.forEach(function (c) {
          var v = c.value(row);
          var td = el('td', { text: c.format ? c.format(v, row) : (v === null || v === undefined ? '-' : String(v)) });
          if (c.cls) td.className = c.cls(v, row);
          tr.appendChild(td);
        });
        body.appendChild(tr);
      });
      more.textContent = 'show all ' + rows.length + ' rows';
      more.style.display = sorted.length > state.shown ? '' : 'none';
      Array.prototype.forEach.call(head.children, function (th, i) {
        th.className = state.key === i ? (state.descending ? 'sorted-desc' : 'sorted-asc') : '';
      });
    }
    render();
    return wrap;
  }

  function copyButton(text) {
    var b = el('button', { cls: 'copy', text: 'copy' });
    b.addEventListener('click', function () {
      var done = function () { b.textContent = 'copied'; setTimeout(function () { b.textContent = 'copy'; }, 1500); };
      if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(text).then(done, fallback);
      else fallback();
      function fallback() {
        var area = el('textarea');
        area.value = text;
        document.body.appendChild(area);
        area.select();
        try { document.execCommand('copy'); done(); } catch (e) { b.textContent = 'select and copy'; }
        document.body.removeChild(area);
      }
    });
    return b;
  }

  function predictedBy(p) {
    if (!p) return '';
    return 'Predictions: ' + (p.kind || 'model prediction') + ' of ' + (p.model || 'paratune') +
      (p.calibration ? ', calibration ' + p.calibration : '') + '.';
  }

  // ---- The pipeline timeline (simulator events as a Chrome trace). ----

  function timeline(parent, id, trace, stages, title, colors) {
    if (!trace || !trace.traceEvents) return;
    colors = colors || {};
    var colorOf = function (kind) { return colors[kind] || UNKNOWN_COLOR; };
    var names = {}, lanes = [], laneIndex = {};
    trace.traceEvents.forEach(function (e) {
      if (e.ph === 'M' && e.name === 'process_name') names['p' + e.pid] = e.args.name;
      if (e.ph === 'M' && e.name === 'thread_name') names['t' + e.pid + ':' + e.tid] = e.args.name;
    });
    function lane(pid, tid) {
      var key = pid + ':' + tid;
      if (!(key in laneIndex)) {
        laneIndex[key] = lanes.length;
        lanes.push({ key: key, pid: pid, tid: tid });
      }
      return laneIndex[key];
    }
    var events = trace.traceEvents.filter(function (e) { return e.ph === 'X'; });
    events.forEach(function (e) { lane(e.pid, e.tid); });
    lanes.sort(function (a, b) { return a.pid - b.pid || a.tid - b.tid; });
    lanes.forEach(function (l, i) { laneIndex[l.key] = i; });
    var byKind = {};
    events.forEach(function (e) {
      var kind = e.cat || e.name;
      (byKind[kind] = byKind[kind] || []).push({
        value: [laneIndex[e.pid + ':' + e.tid], e.ts / 1e6, (e.ts + e.dur) / 1e6, e.name],
        itemStyle: { color: colorOf(kind), borderColor: e.args && e.args.critical ? '#000' : undefined,
                     borderWidth: e.args && e.args.critical ? 1 : 0 }
      });
    });
    // Bubbles: each stage's idle intervals, drawn on its compute lane.
    var bubbles = [];
    (stages || []).forEach(function (s) {
      var key = s.stage + ':0';
      if (!(key in laneIndex)) return;
      (s.idle_intervals || []).forEach(function (b) {
        bubbles.push({ value: [laneIndex[key], b.start_s, b.end_s, 'bubble ' + seconds(b.duration_s)],
                       itemStyle: { color: 'rgba(200,200,200,0.35)', borderColor: '#c62828', borderType: 'dashed', borderWidth: 1 } });
      });
    });
    if (bubbles.length) byKind.bubble = bubbles;
    var points = events.length + bubbles.length;
    var renderItem = function (params, api) {
      var y = api.value(0), start = api.coord([api.value(1), y]), end = api.coord([api.value(2), y]);
      var h = api.size([0, 1])[1] * 0.7;
      var rect = echarts.graphic.clipRectByRect({ x: start[0], y: start[1] - h / 2, width: Math.max(end[0] - start[0], 0.5), height: h },
        { x: params.coordSys.x, y: params.coordSys.y, width: params.coordSys.width, height: params.coordSys.height });
      return rect && { type: 'rect', shape: rect, style: api.style() };
    };
    var series = Object.keys(byKind).map(function (kind) {
      return { type: 'custom', name: kind, renderItem: renderItem, encode: { x: [1, 2], y: 0 }, data: byKind[kind],
               itemStyle: { color: colorOf(kind === 'bubble' ? 'idle' : kind) }, z: kind === 'bubble' ? 1 : 2 };
    });
    var labels = lanes.map(function (l) { return (names['p' + l.pid] || 'stage ' + l.pid) + ' \u00b7 ' + (names['t' + l.pid + ':' + l.tid] || l.tid); });
    if (title) parent.appendChild(el('p', { cls: 'chart-title', text: title }));
    chart(parent, id, Math.max(220, 60 + lanes.length * 28), {
      tooltip: { formatter: function (p) { return p.value[3] + '\n' + seconds(p.value[1]) + ' \u2192 ' + seconds(p.value[2]) + ' (' + seconds(p.value[2] - p.value[1]) + ')'; } },
      legend: { top: 0, type: 'scroll' },
      grid: { left: 170, right: 30, top: 36, bottom: 60 },
      dataZoom: [{ type: 'slider', filterMode: 'weakFilter', bottom: 10 }, { type: 'inside', filterMode: 'weakFilter' }],
      xAxis: { type: 'value', name: 's', axisLabel: { formatter: function (v) { return seconds(v); } } },
      yAxis: { type: 'category', data: labels, inverse: true },
      series: series
    }, points);
  }

  // ---- plan --html ----

  function renderPlan(d, app) {
    var plans = d.plans || [];
    var winner = plans[0];
    app.appendChild(el('header', null, el('h1', { text: d.title || 'paratune plan' }),
      el('p', { cls: 'note', text: predictedBy(d.predicted_by) + ' Times and memory are the analytic model\'s, not measurements.' })));
    if (!winner) {
      section(app, 'No plan fits', 'Every candidate was pruned (memory or framework rules); see the search counts below.');
    }
    var search = d.search || {};
    var summary = section(app, 'Search');
    summary.appendChild(el('p', { text: (search.candidates_level1 || 0) + ' candidates, ' + (search.level1_evaluated || 0) +
      ' estimated, ' + (search.pruned_memory || 0) + ' pruned for memory, ' + (search.pruned_time || 0) + ' by time bounds, in ' + seconds(search.elapsed_s) + '.' }));
    if (!winner) return;

    var ranked = section(app, 'Ranked plans', 'Click a column to sort.');
    table(ranked, [
      { title: 'rank', value: function (r) { return r.rank; } },
      { title: 'configuration', value: function (r) { return r.plan.config.text; }, cls: function () { return 'mono'; } },
      { title: 'iteration', value: function (r) { return r.plan.iteration_time_s; }, format: seconds },
      { title: 'tokens/s', value: function (r) { return r.plan.tokens_per_s; }, format: function (v) { return num(v, 6); } },
      { title: 'MFU', value: function (r) { return r.plan.mfu; }, format: function (v) { return (100 * v).toFixed(1) + '%'; } },
      { title: 'peak memory', value: function (r) { return r.plan.peak_memory_bytes; },
        format: function (v, r) { return bytes(v) + ' (' + (100 * v / r.plan.memory_limit_bytes).toFixed(1) + '%)'; } },
      { title: 'bubble', value: function (r) { return r.plan.bubble_fraction; }, format: function (v) { return (100 * v).toFixed(1) + '%'; } },
      { title: 'frameworks', value: function (r) { return (r.plan.frameworks || []).join(', '); } }
    ], plans.map(function (p, i) { return { rank: i + 1, plan: p }; }));

    // Where the winner's time goes, next to the two baselines paratune builds by rule (plan/baselines.cc).
    var BASELINES = { expert: 'expert', three_axis: 'three-axis' };
    var compared = [{ name: 'winner', plan: winner }];
    Object.keys(BASELINES).forEach(function (k) {
      var b = (d.baselines || {})[k];
      if (!b || !b.breakdown_s) return;  // it does not fit
      // The winner's speedup over it: plan's own figure (iteration times), as its text output says.
      var speedup = typeof d['speedup_over_' + k] === 'number' ? d['speedup_over_' + k] : winner.tokens_per_s / b.tokens_per_s;
      compared.push({ name: BASELINES[k] + ' baseline', plan: b, speedup: speedup });
    });
    var parts = Object.keys(winner.breakdown_s).filter(function (k) {
      return compared.some(function (c) { return c.plan.breakdown_s[k] > 0; });
    });
    var breakdown = section(app, 'Time per iteration', 'Stacked: the model\'s exposed time by kind, for the winner and the baselines' +
      (d.speedup_over_expert ? '; the winner is ' + num(d.speedup_over_expert, 3) + 'x as fast as the expert baseline' : '') +
      (d.speedup_over_three_axis ? ' and ' + num(d.speedup_over_three_axis, 3) + 'x as fast as the three-axis one' : '') + '.');
    chart(breakdown, 'plan-breakdown', 100 + compared.length * 45, {
      tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, valueFormatter: seconds },
      legend: { top: 0, type: 'scroll' },
      grid: { left: 140, right: 30, top: 40, bottom: 30 },
      xAxis: { type: 'value', axisLabel: { formatter: seconds } },
      yAxis: { type: 'category', data: compared.map(function (c) { return c.name; }), inverse: true },
      series: parts.map(function (k) {
        return { type: 'bar', stack: 'time', name: k, data: compared.map(function (c) { return c.plan.breakdown_s[k] || 0; }) };
      })
    }, parts.length * compared.length);

    // Each baseline's bar says how many times faster the winner is than it: the same number as the
    // text above and the plan command's output (never the baseline's fraction of the winner).
    var speed = section(app, 'Speedup over the baselines', 'Predicted tokens/s of the winner and of two baselines paratune ' +
      'builds by fixed rules and costs with the same model (they are paratune\'s own rules, not measured or published runs). ' +
      'Each baseline\'s label says how many times as fast as it the winner is.');
    var rules = el('ul', { cls: 'note' });
    compared.slice(1).forEach(function (c) { if (c.plan.rule) rules.appendChild(el('li', { text: c.name + ': ' + c.plan.rule })); });
    if (rules.children.length) speed.appendChild(rules);
    chart(speed, 'plan-speedup', 100 + compared.length * 40, {
      tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, valueFormatter: function (v) { return num(v, 6) + ' tokens/s'; } },
      grid: { left: 140, right: 150, top: 10, bottom: 30 },
      xAxis: { type: 'value', name: 'tokens/s' },
      yAxis: { type: 'category', data: compared.map(function (c) { return c.name; }), inverse: true },
      series: [{ type: 'bar', data: compared.map(function (c) { return c.plan.tokens_per_s; }),
                 label: { show: true, position: 'right', formatter: function (p) {
                   return p.dataIndex === 0 ? 'winner' : 'winner is ' + num(compared[p.dataIndex].speedup, 3) + 'x this';
                 } } }]
    }, compared.length);

    var stagesMem = winner.memory_bytes_per_stage || [];
    var kinds = ['weights', 'grads', 'optimizer', 'activations', 'other'];
    var memory = section(app, 'Memory per stage', 'The winner\'s predicted memory per GPU of each pipeline stage against the usable limit (' + bytes(winner.memory_limit_bytes) + ').');
    chart(memory, 'plan-memory', 260, {
      tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, valueFormatter: bytes },
      legend: { top: 0 },
      grid: { left: 80, right: 30, top: 40, bottom: 30 },
      xAxis: { type: 'category', data: stagesMem.map(function (_, i) { return 'stage ' + i; }) },
      yAxis: { type: 'value', axisLabel: { formatter: bytes },
               max: function (v) { return Math.max(v.max, winner.memory_limit_bytes) * 1.05; } },
      series: kinds.map(function (k, i) {
        var s = { type: 'bar', stack: 'memory', name: k, barMaxWidth: 90, data: stagesMem.map(function (m) { return m[k] || 0; }) };
        if (i === 0) s.markLine = { symbol: 'none', lineStyle: { color: '#c62828', type: 'dashed' }, label: { formatter: 'limit' },
                                    data: [{ yAxis: winner.memory_limit_bytes }] };
        return s;
      })
    }, stagesMem.length * kinds.length);

    if (d.timeline) {
      var sim = d.simulation || {};
      var tl = section(app, 'Pipeline timeline of the winner', 'The simulator\'s replay of one iteration: every lane of every stage, bubbles dashed red, ' +
        'the critical path outlined. Drag the slider or scroll to zoom.');
      timeline(tl, 'plan-timeline', d.timeline, sim.stages, 'iteration ' + seconds(sim.iteration_time_s) + ', bubble ' + (100 * (sim.bubble_fraction || 0)).toFixed(1) + '%',
               d.timeline_colors);
    }
    if (d.launch) {
      var launch = section(app, 'Launch: ' + d.launch.framework);
      launch.appendChild(copyButton(d.launch.text));
      launch.appendChild(el('pre', { cls: 'launch', text: d.launch.text }));
      if (d.launch.cannot_express && d.launch.cannot_express.length) {
        var list = el('ul');
        d.launch.cannot_express.forEach(function (line) { list.appendChild(el('li', { text: line })); });
        launch.appendChild(el('p', { text: 'Not expressible in ' + d.launch.framework + ':' }));
        launch.appendChild(list);
      }
    }
  }

  // ---- simulate --html ----

  function renderSimulate(d, app) {
    app.appendChild(el('header', null, el('h1', { text: d.title || 'paratune simulate' }),
      el('p', { cls: 'note', text: predictedBy(d.predicted_by) })));
    var s = section(app, 'Iteration');
    s.appendChild(el('p', { text: 'iteration ' + seconds(d.iteration_time_s) + ', ' + num(d.tokens_per_s, 6) + ' tokens/s, bubble ' +
      (100 * (d.bubble_fraction || 0)).toFixed(1) + '%, schedule ' + d.schedule + ', gradient sync ' + d.grad_sync + '.' }));
    timeline(section(app, 'Pipeline timeline', 'Bubbles dashed red, the critical path outlined. Drag the slider or scroll to zoom.'),
      'sim-timeline', d.timeline, d.stages, d.config && d.config.text ? d.config.text : '', d.timeline_colors);
    var stages = d.stages || [];
    var st = section(app, 'Stages');
    chart(st, 'sim-stages', 240, {
      tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, valueFormatter: seconds },
      legend: { top: 0 },
      grid: { left: 80, right: 30, top: 40, bottom: 30 },
      xAxis: { type: 'category', data: stages.map(function (x) { return 'stage ' + x.stage; }) },
      yAxis: { type: 'value', axisLabel: { formatter: seconds } },
      series: [['compute_s', 'compute'], ['blocking_comm_s', 'blocking comm'], ['bubble_s', 'bubble']].map(function (k) {
        return { type: 'bar', stack: 't', name: k[1], barMaxWidth: 90, data: stages.map(function (x) { return x[k[0]] || 0; }) };
      })
    }, stages.length * 3);
  }

  // ---- Studies: paratune report, paratune dashboard ----

  function trialTimes(d) {
    var start = Infinity;
    d.trials.forEach(function (t) { if (t.started_unix_s > 0) start = Math.min(start, t.started_unix_s); });
    return isFinite(start) ? start : 0;
  }

  function better(d, a, b) { return d.direction === 'minimize' ? a < b : a > b; }

  // The value a chart plots for a trial: a completed trial's result; for one pruned, stopped early
  // or failed, the last value it reported (its learning curve's last point); null when it has none.
  function lastValue(t) {
    if (typeof t.value === 'number' && isFinite(t.value)) return t.value;
    var last = t.curve && t.curve.length ? t.curve[t.curve.length - 1][1] : null;
    return typeof last === 'number' && isFinite(last) ? last : null;
  }

  // One scatter series per status, in the status' colour (the legend names them): `point(t)` gives
  // each trial's data point.
  function byStatus(trials, point) {
    var groups = {};
    trials.forEach(function (t) { (groups[t.status] = groups[t.status] || []).push(point(t)); });
    return Object.keys(groups).map(function (status) {
      return { type: 'scatter', name: status, data: groups[status], symbolSize: 6, itemStyle: { color: STATUS_COLORS[status] || UNKNOWN_COLOR } };
    });
  }

  // An axis for parameter `k` as the study's space declares it (study_data.h "parameters"): a
  // categorical parameter's choices in order, an integer's whole numbers, a log-scaled one's
  // decades. A parameter the space does not describe: categorical when any value is not a number,
  // integer when every value is whole. Returns {axis, categorical, value(v)}: `value` maps a trial's
  // value to the axis' (a choice's text).
  function parameterAxis(d, trials, k) {
    var spec = (d.parameters || {})[k] || {};
    var seen = [];
    trials.forEach(function (t) {
      var v = t.params ? t.params[k] : undefined;
      if (v !== undefined && v !== null && seen.indexOf(v) < 0) seen.push(v);
    });
    var categorical = spec.type === 'categorical' || seen.some(function (v) { return typeof v !== 'number'; });
    if (categorical) {
      var choices = (Array.isArray(spec.choices) ? spec.choices : []).map(String);
      seen.forEach(function (v) { if (choices.indexOf(String(v)) < 0) choices.push(String(v)); });
      return { categorical: true, axis: { type: 'category', data: choices }, value: function (v) { return String(v); } };
    }
    var integer = spec.type === 'int' || (spec.type === undefined && seen.length > 0 && seen.every(function (v) { return Math.round(v) === v; }));
    var log = spec.log === true && seen.every(function (v) { return v > 0; });
    var axis = log ? { type: 'log', logBase: 10 } : { type: 'value', scale: true };
    if (integer) axis.minInterval = 1;
    return { categorical: false, axis: axis, value: function (v) { return v; } };
  }

  // A study of several objectives (study_data.h "pareto_front"): every completed trial in the first two
  // objectives, the front highlighted and joined in the order of the first objective, and the front
  // as a table with every objective and the hypervolume against its stated reference.
  function renderParetoFront(d, card) {
    var front = d.pareto_front;
    var onFront = {};
    front.trials.forEach(function (t) { onFront[t.number] = true; });
    var valued = (d.trials || []).filter(function (t) { return Array.isArray(t.values); });
    var x = d.objectives[0], y = d.objectives[1];
    var point = function (t) { return [t.values[0], t.values[1], t.number, paramText(t.params)]; };
    var hv = front.hypervolume === null ? '' : ' Hypervolume ' + num(front.hypervolume, 6) + ' against the reference (' +
      front.reference.map(function (v) { return num(v, 6); }).join(', ') + '): ' + front.reference_rule + '.';
    var c = card('card-pareto', 'Pareto front', front.trials.length + ' of ' + front.completed + ' completed trials are on the front: no other ' +
      'completed trial is at least as good in every objective and better in one. Every completed trial in ' + x + ' and ' + y +
      (d.objectives.length > 2 ? ' (the first two of ' + d.objectives.length + ' objectives: a point of the front may look dominated here)' : '') +
      '; the front joined in the order of ' + x + '.' + hv);
    var tip = function (p) {
      return 'trial ' + p.value[2] + (onFront[p.value[2]] ? ' (on the front)' : '') + '\n' + x + ' ' + num(p.value[0], 6) + ', ' + y + ' ' +
        num(p.value[1], 6) + '\n' + p.value[3];
    };
    chart(c, 'chart-pareto', 340, {
      tooltip: { trigger: 'item', formatter: tip },
      legend: { top: 0 },
      grid: { left: 80, right: 30, top: 40, bottom: 50 },
      xAxis: { type: 'value', name: x, nameLocation: 'middle', nameGap: 28, scale: true },
      yAxis: { type: 'value', name: y, scale: true },
      series: [
        { type: 'scatter', name: 'dominated', symbolSize: 6, itemStyle: { color: '#9aa5b1' },
          data: valued.filter(function (t) { return !onFront[t.number]; }).map(point) },
        { type: 'line', name: 'Pareto front', symbolSize: 9, showSymbol: true, itemStyle: { color: '#d62728' },
          data: front.trials.map(function (t) { return [t.values[0], t.values[1], t.number, paramText(t.params)]; }) }
      ]
    }, valued.length);
    var columns = [{ title: 'trial', value: function (t) { return t.number; } }];
    d.objectives.forEach(function (o, i) {
      columns.push({ title: o + ' (' + d.directions[i] + ')', value: function (t) { return t.values[i]; }, format: function (v) { return num(v, 6); } });
    });
    columns.push({ title: 'parameters', value: function (t) { return paramText(t.params); }, cls: function () { return 'mono'; } });
    table(c, columns, front.trials, 'table-pareto');
  }

  function renderStudy(d, app) {
    var trials = d.trials || [];
    var valued = trials.filter(function (t) { return t.status === 'completed' && typeof t.value === 'number' && isFinite(t.value); });
    var t0 = trialTimes(d);
    var head = document.getElementById('study-header');
    if (!head) { head = el('header', { id: 'study-header' }); app.appendChild(head); }
    head.innerHTML = '';
    head.appendChild(el('h1', { text: 'Study \u2018' + d.study + '\u2019' }));
    var counts = Object.keys(d.status_counts || {}).map(function (k) { return d.status_counts[k] + ' ' + k; }).join(', ');
    var objectives = d.pareto_front
      ? 'Objectives: ' + d.objectives.map(function (o, i) { return o + ' (' + d.directions[i] + ')'; }).join(', ')
      : 'Objective: ' + d.objective + ' (' + d.direction + ')';
    head.appendChild(el('p', { id: 'study-counts', text: trials.length + ' trials' + (counts ? ': ' + counts : '') + '. ' + objectives + '.' }));
    if (d.best) head.appendChild(el('p', { cls: 'best', text: 'Best: trial ' + d.best.number + ' (' + paramText(d.best.params) + '), ' +
      d.objective + ' ' + num(d.best.objective !== undefined ? d.best.objective : d.best.throughput, 6) }));
    if (d.live) {
      var live = document.getElementById('live-status') || el('p', { id: 'live-status', cls: 'live' });
      head.appendChild(live);
    }
    if (!trials.length) {
      var empty = document.getElementById('study-empty') || el('section', { id: 'study-empty', cls: 'card' }, el('p'));
      empty.firstChild.textContent = d.waiting ? d.waiting : 'No trials yet.';
      app.appendChild(empty);
      return;
    }
    var emptyNote = document.getElementById('study-empty');
    if (emptyNote) emptyNote.parentNode.removeChild(emptyNote);

    function card(id, title, note) {
      var s = document.getElementById(id);
      if (!s) { s = section(app, title, note); s.id = id; }
      return s;
    }

    // Several objectives: the front first, the view of such a study.
    if (d.pareto_front) renderParetoFront(d, card);

    // Optimization history: every trial with a value, coloured by status (pruned, stopped or failed
    // trials at the last value they reported), and the best completed trial so far (one objective: a
    // study of several has a front, not a best).
    var plotted = trials.filter(function (t) { return lastValue(t) !== null; });
    var byNumber = valued.slice().sort(function (a, b) { return a.number - b.number; });
    var best = null, bestLine = [], bestTime = [];
    byNumber.forEach(function (t) { if (best === null || better(d, t.value, best)) best = t.value; bestLine.push([t.number, best]); });
    var byEnd = valued.slice().sort(function (a, b) { return a.ended_unix_s - b.ended_unix_s; });
    best = null;
    byEnd.forEach(function (t) { if (best === null || better(d, t.value, best)) best = t.value; bestTime.push([t.ended_unix_s - t0, best]); });
    var history = card('card-history', 'Optimization history', 'Each trial\'s ' + d.objective + ' by trial number and by time since the first trial started, ' +
      'coloured by status: a completed trial\'s result, a pruned, stopped or failed trial\'s last reported value' +
      (d.pareto_front ? ' (the first objective).' : '; the line is the best completed trial so far.'));
    var historyOption = function (x, line, xName, xFormat) {
      var series = byStatus(plotted.filter(function (t) { return x(t) !== null; }), function (t) { return [x(t), lastValue(t)]; });
      if (!d.pareto_front) series.push({ type: 'line', name: 'best so far', step: 'end', data: line, showSymbol: false, itemStyle: { color: '#333' } });
      return {
        tooltip: { trigger: 'item' }, legend: { top: 0 },
        grid: { left: 70, right: 30, top: 40, bottom: 40 },
        xAxis: { type: 'value', name: xName, minInterval: xFormat ? 0 : 1, axisLabel: xFormat ? { formatter: xFormat } : {} },
        yAxis: { type: 'value', name: d.objective, scale: true },
        series: series
      };
    };
    chart(history, 'chart-history', 280, historyOption(function (t) { return t.number; }, bestLine, 'trial'), plotted.length);
    chart(history, 'chart-history-time', 280, historyOption(function (t) { return t.ended_unix_s > 0 ? t.ended_unix_s - t0 : null; }, bestTime, 'time', seconds),
          plotted.length);

    // Each trial on a timeline, one row per worker and slot (lanes packed where the store has no slot).
    var rows = [], rowIndex = {}, laneEnds = {};
    var placed = trials.filter(function (t) { return t.started_unix_s > 0; }).sort(function (a, b) { return a.started_unix_s - b.started_unix_s; });
    var now = Date.now() / 1000;
    var bars = placed.map(function (t) {
      var end = t.ended_unix_s > 0 ? t.ended_unix_s : (t.status === 'running' ? now : t.started_unix_s);
      var owner = (t.worker || '') + (t.location && t.location !== 'local' ? ' ' + t.location : '');
      var slot = t.hpo && t.hpo.slots && t.hpo.slots.length ? t.hpo.slots.join('+') : null;
      var key;
      if (slot !== null) key = owner + ' slot ' + slot;
      else {
        var ends = laneEnds[owner] = laneEnds[owner] || [];
        var lane = 0;
        while (lane < ends.length && ends[lane] > t.started_unix_s) lane++;
        ends[lane] = end;
        key = owner + ' lane ' + lane;
      }
      if (!(key in rowIndex)) { rowIndex[key] = rows.length; rows.push(key.trim()); }
      return { status: t.status, value: [rowIndex[key], t.started_unix_s - t0, end - t0, 'trial ' + t.number + ' ' + t.status + ' ' + paramText(t.params)] };
    });
    var barsByStatus = {};
    bars.forEach(function (b) { (barsByStatus[b.status] = barsByStatus[b.status] || []).push({ value: b.value }); });
    var tl = card('card-timeline', 'Trials over time', 'Each trial from start to end, coloured by status, one row per slot (or per lane of overlapping trials).');
    chart(tl, 'chart-timeline', Math.max(220, 100 + rows.length * 22), {
      tooltip: { formatter: function (p) { return p.value[3] + '\n' + seconds(p.value[2] - p.value[1]); } },
      grid: { left: 140, right: 30, top: 36, bottom: 60 },
      dataZoom: [{ type: 'slider', filterMode: 'weakFilter', bottom: 10 }, { type: 'inside', filterMode: 'weakFilter' }],
      xAxis: { type: 'value', axisLabel: { formatter: seconds } },
      yAxis: { type: 'category', data: rows, inverse: true },
      legend: { top: 0 },
      series: Object.keys(barsByStatus).map(function (status) {
        return { type: 'custom', name: status, data: barsByStatus[status], encode: { x: [1, 2], y: 0 },
                 itemStyle: { color: STATUS_COLORS[status] || UNKNOWN_COLOR }, renderItem: function (params, api) {
          var y = api.value(0), a = api.coord([api.value(1), y]), b = api.coord([api.value(2), y]), h = api.size([0, 1])[1] * 0.6;
          return { type: 'rect', shape: { x: a[0], y: a[1] - h / 2, width: Math.max(b[0] - a[0], 1), height: h }, style: api.style() };
        } };
      })
    }, bars.length);

    // Parameters: parallel coordinates and one slice plot each.
    var names = [];
    trials.forEach(function (t) { Object.keys(t.params || {}).forEach(function (k) { if (names.indexOf(k) < 0) names.push(k); }); });
    var paramAxes = {};
    names.forEach(function (k) { paramAxes[k] = parameterAxis(d, trials, k); });
    var axes = names.map(function (k, i) {
      var a = { dim: i, name: k };
      Object.keys(paramAxes[k].axis).forEach(function (key) { a[key] = paramAxes[k].axis[key]; });
      return a;
    });
    axes.push({ dim: names.length, name: d.objective, scale: true });
    var lines = valued.map(function (t) {
      return names.map(function (k) { var v = t.params[k]; return v === undefined ? null : paramAxes[k].value(v); }).concat([t.value]);
    });
    var pc = card('card-parallel', 'Parallel coordinates', 'Completed trials: each line one trial through its parameters to its ' + d.objective + ' (colour).');
    var values = valued.map(function (t) { return t.value; });
    var low = values.length ? Math.min.apply(null, values) : 0, high = values.length ? Math.max.apply(null, values) : 1;
    if (!(high > low)) high = low + 1;
    chart(pc, 'chart-parallel', 320, {
      parallelAxis: axes,
      parallel: { left: 60, right: 80, top: 40, bottom: 30 },
      visualMap: { show: true, dimension: names.length, min: low, max: high,
                   inRange: { color: d.direction === 'minimize' ? ['#1a9850', '#fee08b', '#d73027'] : ['#d73027', '#fee08b', '#1a9850'] },
                   right: 0, top: 'middle', calculable: true },
      series: [{ type: 'parallel', data: lines, lineStyle: { width: 1, opacity: 0.6 } }]
    }, lines.length);

    var slices = card('card-slices', 'Slice plots', 'The ' + d.objective + ' of each trial against one parameter at a time, coloured by status ' +
      '(pruned, stopped or failed trials at their last reported value).');
    slices.classList.add('grid-2');
    names.forEach(function (k, i) {
      var withValue = plotted.filter(function (t) { return t.params && t.params[k] !== undefined && t.params[k] !== null; });
      chart(slices, 'chart-slice-' + i, 240, {
        title: { text: k, left: 'center', textStyle: { fontSize: 12 } },
        tooltip: { formatter: function (p) { return 'trial ' + p.value[2] + ' (' + p.seriesName + '): ' + k + '=' + p.value[0] + ', ' + num(p.value[1], 6); } },
        legend: { bottom: 0, itemWidth: 10, itemHeight: 10, textStyle: { fontSize: 11 } },
        grid: { left: 70, right: 20, top: 30, bottom: 50 },
        xAxis: Object.assign({ axisLine: { onZero: false } }, paramAxes[k].axis),
        yAxis: { type: 'value', scale: true, axisLine: { onZero: false } },
        series: byStatus(withValue, function (t) { return [paramAxes[k].value(t.params[k]), lastValue(t), t.number]; })
      }, withValue.length);
    });

    if (d.importance && d.importance.length) {
      var imp = card('card-importance', 'Parameter importance', 'The share of the ' + d.objective + '\'s variance each parameter\'s main effect explains on its own, ' +
        'over ' + (d.importance[0].trials || valued.length) + ' completed trials (epsilon squared: corrected for the number of values or bins, so noise scores about 0). ' +
        'Effects of parameters sampled together overlap and interactions are left out: the shares are not parts of a whole and need not sum to 100%.');
      var sorted = d.importance.slice().sort(function (a, b) { return a.share - b.share; });
      chart(imp, 'chart-importance', 80 + 30 * sorted.length, {
        grid: { left: 140, right: 60, top: 10, bottom: 30 },
        xAxis: { type: 'value', max: 1, axisLabel: { formatter: function (v) { return (100 * v) + '%'; } } },
        yAxis: { type: 'category', data: sorted.map(function (i) { return i.parameter; }) },
        series: [{ type: 'bar', data: sorted.map(function (i) { return i.share; }), label: { show: true, position: 'right', formatter: function (p) { return (100 * p.value).toFixed(1) + '%'; } } }]
      }, sorted.length);
    }

    // Hydro's last step (--retrain, --retrain-top): the search's best configurations trained again
    // (a surrogate study's at the target's width), the best of them there chosen.
    var retrains = (d.reevaluations && d.reevaluations.runs) || [];
    if (retrains.length) {
      var rc = card('card-retrains', 'Retrained best configurations', 'The search\'s best configurations trained again for the full budget (a surrogate ' +
        'study\'s at the target\'s width), each a study of its own; the ' + d.objective + ' in the search and at the retrain\'s end. Chosen: the best retrained.');
      table(rc, [
        { title: 'trial', value: function (r) { return r.of_trial; } },
        { title: 'parameters', value: function (r) { return paramText(r.trial.params || {}); }, cls: function () { return 'mono'; } },
        { title: d.objective + ' (search)', value: function (r) { return r.search_objective; }, format: function (v) { return v === null ? '-' : num(v, 6); } },
        { title: d.objective + ' (retrained)', value: function (r) { return r.objective; }, format: function (v) { return v === null ? '-' : num(v, 6); } },
        { title: 'steps', value: function (r) { return r.trial.steps; } },
        { title: 'status', value: function (r) { return r.trial.status + (r.trial.reason ? ': ' + r.trial.reason : ''); } },
        { title: 'chosen', value: function (r) { return r.of_trial === d.reevaluations.chosen ? 'chosen' : ''; } },
        { title: 'study', value: function (r) { return r.study; }, cls: function () { return 'mono'; } }
      ], retrains, 'table-retrains');
    }

    // What only paratune knows: the cost model's prediction next to each trial's measurement.
    var predicted = trials.filter(function (t) {
      return t.prediction && typeof t.throughput === 'number' &&
        (typeof t.prediction.predicted_throughput === 'number' || typeof t.prediction.prior_throughput === 'number');
    }).map(function (t) {
      var p = typeof t.prediction.predicted_throughput === 'number' ? t.prediction.predicted_throughput : t.prediction.prior_throughput;
      return [t.throughput, p, t.number];
    });
    if (predicted.length) {
      var pv = card('card-predicted', 'Predicted vs measured', 'Throughput (steps/s) the search predicted for each trial (its model, or the cost model\'s prior) against what the trial measured; the diagonal is a perfect prediction.');
      var hi = Math.max.apply(null, predicted.map(function (p) { return Math.max(p[0], p[1]); }));
      chart(pv, 'chart-predicted', 300, {
        tooltip: { formatter: function (p) { return p.value[2] === undefined ? '' : 'trial ' + p.value[2] + ': measured ' + num(p.value[0]) + ', predicted ' + num(p.value[1]); } },
        grid: { left: 70, right: 30, top: 20, bottom: 40 },
        xAxis: { type: 'value', name: 'measured', min: 0 },
        yAxis: { type: 'value', name: 'predicted', min: 0 },
        series: [{ type: 'scatter', data: predicted, symbolSize: 7 },
                 { type: 'line', data: [[0, 0], [hi, hi]], showSymbol: false, lineStyle: { type: 'dashed', color: '#999' }, tooltip: { show: false } }]
      }, predicted.length);
    }

    // Learning curves (metric objectives) with the pruner's rungs.
    var curved = trials.filter(function (t) { return t.curve && t.curve.length; });
    if (curved.length) {
      var rungs = [];
      var pruner = d.config && d.config.pruner;
      if (pruner && pruner.brackets && pruner.brackets.length && Array.isArray(pruner.brackets[0])) rungs = pruner.brackets[0];
      var lc = card('card-curves', 'Learning curves', 'The ' + d.objective + ' each trial reported at each step, coloured by how it ended' + (rungs.length ? '; dashed: the first bracket\'s rungs' : '') + '.');
      var seen = {};
      var total = 0;
      var series = curved.map(function (t) {
        total += t.curve.length;
        var s = { type: 'line', name: t.status, data: t.curve, showSymbol: false, lineStyle: { width: 1, color: STATUS_COLORS[t.status] || '#999' },
                  itemStyle: { color: STATUS_COLORS[t.status] || '#999' }, emphasis: { focus: 'series' }, tooltip: { formatter: function () { return 'trial ' + t.number + ' ' + t.status; } } };
        seen[t.status] = true;
        return s;
      });
      if (rungs.length) series.push({ type: 'line', data: [], markLine: { symbol: 'none', lineStyle: { type: 'dashed', color: '#555' },
        data: rungs.map(function (r) { return { xAxis: r - 1, label: { formatter: 'rung ' + r } }; }) } });
      chart(lc, 'chart-curves', 320, {
        tooltip: { trigger: 'item' },
        legend: { top: 0, data: Object.keys(seen) },
        grid: { left: 70, right: 30, top: 40, bottom: 40 },
        xAxis: { type: 'value', name: 'step' },
        yAxis: { type: 'value', name: d.objective, scale: true },
        series: series
      }, total);
    }

    var tableCard = card('card-trials', 'Trials', 'Every trial; click a column to sort.');
    var columns = [
      { title: '#', value: function (t) { return t.number; } },
      { title: 'status', value: function (t) { return t.status; }, cls: function (v) { return 'status status-' + v; } },
      { title: d.objective, value: function (t) { return t.value; }, format: function (v) { return num(v, 6); } }
    ];
    names.forEach(function (k) { columns.push({ title: k, value: function (t) { return t.params ? t.params[k] : null; }, format: function (v) { return typeof v === 'number' ? num(v) : (v === undefined || v === null ? '-' : String(v)); } }); });
    // What only paratune knows: the search's prediction for the trial, next to its measurement.
    var predictionOf = function (t) {
      if (!t.prediction) return null;
      if (typeof t.prediction.predicted_throughput === 'number') return t.prediction.predicted_throughput;
      return typeof t.prediction.prior_throughput === 'number' ? t.prediction.prior_throughput : null;
    };
    if (trials.some(function (t) { return predictionOf(t) !== null; }))
      columns.push({ title: 'predicted steps/s', value: predictionOf, format: function (v) { return num(v, 4); } });
    columns.push({ title: 'steps', value: function (t) { return t.steps; } });
    if (trials.some(function (t) { return t.rung !== null && t.rung !== undefined; })) columns.push({ title: 'rung', value: function (t) { return t.rung; } });
    columns.push({ title: 'duration', value: function (t) { return t.ended_unix_s > 0 ? t.ended_unix_s - t.started_unix_s : null; }, format: seconds });
    columns.push({ title: 'peak memory', value: function (t) { return t.peak_memory_bytes; }, format: bytes });
    columns.push({ title: 'worker', value: function (t) { return t.worker; } });
    columns.push({ title: 'reason', value: function (t) { return t.reason; }, cls: function () { return 'reason'; } });
    table(tableCard, columns, trials, 'table-trials');
  }

  // ---- The live dashboard: the same study view, polled. ----

  function poll(d, app) {
    var status = document.getElementById('live-status');
    var last = JSON.stringify(d.trials.map(function (t) { return [t.number, t.status, t.steps, t.ended_unix_s]; }));
    var fetchOnce = function () {
      fetch(d.live.url, { cache: 'no-store' }).then(function (r) {
        if (!r.ok) return r.text().then(function (text) { throw new Error(text || r.statusText); });
        return r.json();
      }).then(function (next) {
        next.live = d.live;
        var key = JSON.stringify((next.trials || []).map(function (t) { return [t.number, t.status, t.steps, t.ended_unix_s]; }));
        if (key !== last) { last = key; d = next; renderStudy(next, app); }
        status = document.getElementById('live-status');
        if (status) { status.textContent = 'live: updated ' + new Date().toLocaleTimeString() + ', ' + (next.trials || []).length + ' trials'; status.className = 'live'; }
      }).catch(function (e) {
        status = document.getElementById('live-status');
        if (status) { status.textContent = 'live: ' + e.message + ' (retrying)'; status.className = 'live error'; }
      }).then(function () { setTimeout(fetchOnce, d.live.poll_ms || 2000); });
    };
    fetchOnce();
  }

  function main() {
    var d = JSON.parse(document.getElementById('paratune-data').textContent);
    var app = document.getElementById('app');
    app.innerHTML = '';
    if (d.view === 'plan') renderPlan(d, app);
    else if (d.view === 'simulate') renderSimulate(d, app);
    else if (d.view === 'study') {
      renderStudy(d, app);
      if (d.live) poll(d, app);
    } else app.appendChild(el('p', { text: 'Unknown view ' + d.view }));
    window.addEventListener('resize', function () { charts.forEach(function (c) { c.resize(); }); });
    window.addEventListener('beforeprint', function () { charts.forEach(function (c) { c.resize(); }); });
    document.body.setAttribute('data-rendered', d.view);
  }

  main();
})();
