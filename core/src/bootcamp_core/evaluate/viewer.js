// The report's trajectory viewer. Data is only ever written with textContent / createTextNode, never as markup.
(function () {
  "use strict";
  var COL = {id: 0, source: 1, generator: 2, score: 3, solved: 4, success: 5, finish: 6, errorKind: 7,
             turnLimit: 8, turns: 9, calls: 10, chunk: 11, line: 12};
  var PAGE = 200;
  var CUT = "[cut by the report: ";
  var status = document.getElementById("viewer-status");
  var list = document.getElementById("episode-list");
  var view = document.getElementById("episode-view");
  var rows = [], order = [], shown = [], position = [], chunkStart = [], byId = new Map();
  var chunkElements = document.querySelectorAll("script.episode-chunk");
  var cache = new Map(), searchMatches = null, searchRun = 0, limit = PAGE;

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) if (arguments[i]) parent.appendChild(arguments[i]);
    return parent;
  }
  function fmt(value) {
    if (value === null || value === undefined) return "";
    if (typeof value === "number") return String(value);  // shortest exact text: an answer is shown as it is
    if (typeof value === "string") return value;
    return JSON.stringify(value);
  }
  function scoreText(score) {
    // never rounds a failing 0.99999997 onto a passing "1"
    if (score === null || score === undefined) return "–";
    var text = String(Number(score.toPrecision(4)));
    for (var digits = 5; digits <= 17 && score !== 0 && score !== 1 && (text === "0" || text === "1"); digits++) {
      text = String(Number(score.toPrecision(digits)));
    }
    return text;
  }
  function textBlock(text, cls) {
    var pre = el("pre", cls);
    text = fmt(text);
    var at = text.indexOf(CUT);
    if (at < 0) { pre.textContent = text; return pre; }
    pre.appendChild(document.createTextNode(text.slice(0, at)));
    pre.appendChild(el("span", "cut", text.slice(at)));
    return pre;
  }
  function badge(text, cls) { return el("span", "badge " + (cls || ""), text); }

  async function inflate(element) {
    var binary = atob(element.textContent.trim());
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return await new Response(stream).text();
  }
  async function chunkLines(number) {
    if (cache.has(number)) return cache.get(number);
    var lines = (await inflate(chunkElements[number])).split("\n");
    if (cache.size >= 4) cache.delete(cache.keys().next().value);
    cache.set(number, lines);
    return lines;
  }

  // ------------------------------------------------------------------------------------------------ list
  function fill(id, values) {
    var select = document.getElementById(id);
    Array.from(new Set(values)).sort().forEach(function (value) {
      var option = el("option", null, value === "" ? "(none)" : value);
      option.value = value === "" ? "\u0000" : value;
      select.appendChild(option);
    });
  }
  function value(id) { return document.getElementById(id).value; }
  function matches(row) {
    var pick = function (id, got) { var want = value(id); return want === "" || (want === "\u0000" ? got === "" : got === want); };
    if (!pick("f-source", row[COL.source]) || !pick("f-generator", row[COL.generator])) return false;
    if (!pick("f-finish", row[COL.finish]) || !pick("f-error", row[COL.errorKind])) return false;
    var limitHit = value("f-limit"), solved = value("f-solved");
    if (limitHit && (limitHit === "yes") !== row[COL.turnLimit]) return false;
    if (solved && (solved === "yes") !== row[COL.solved]) return false;
    var low = parseFloat(value("f-min")), high = parseFloat(value("f-max")), score = row[COL.score];
    if (!isNaN(low) && !(score !== null && score >= low)) return false;
    if (!isNaN(high) && !(score !== null && score <= high)) return false;
    return true;
  }
  function refresh() {
    shown = order.filter(function (i) { return matches(rows[i]) && (searchMatches === null || searchMatches.has(i)); });
    renderList();
  }
  function link(row) {
    var anchor = el("a", "episode-link", row[COL.id]);
    anchor.setAttribute("href", "#episode=" + encodeURIComponent(row[COL.id]));
    return anchor;
  }
  function renderList() {
    list.textContent = "";
    var count = el("p", "muted", shown.length + " of " + rows.length + " episodes" +
                   (shown.length > limit ? " (the first " + limit + " listed)" : ""));
    count.id = "episode-count";
    var table = el("table", "episodes");
    var head = el("tr");
    ["", "score", "data source", "generator", "finish reason", "error kind", "turns", "tool calls", "episode"]
      .forEach(function (name) { add(head, el("th", "l", name)); });
    add(table, head);
    shown.slice(0, limit).forEach(function (i) {
      var row = rows[i], tr = el("tr", "episode-row");
      tr.dataset.episode = row[COL.id];
      add(tr, add(el("td", "l"), badge(row[COL.solved] ? "solved" : (row[COL.success] ? "not solved" : "infra error"),
                                        row[COL.solved] ? "good" : "bad")),
          el("td", null, scoreText(row[COL.score])), el("td", "l", row[COL.source]), el("td", "l", row[COL.generator]),
          el("td", "l", row[COL.finish] + (row[COL.turnLimit] ? " (turn limit)" : "")), el("td", "l", row[COL.errorKind]),
          el("td", null, fmt(row[COL.turns])), el("td", null, fmt(row[COL.calls])), add(el("td", "l"), link(row)));
      add(table, tr);
    });
    add(list, count, table);
    if (shown.length > limit) {
      var more = el("button", null, "show " + Math.min(PAGE, shown.length - limit) + " more");
      more.addEventListener("click", function () { limit += PAGE; renderList(); });
      add(list, more);
    }
  }
  async function search() {
    var run = ++searchRun, query = value("f-search").trim().toLowerCase();
    if (!query) { searchMatches = null; refresh(); return; }
    var escaped = JSON.stringify(query).slice(1, -1), found = new Set();
    for (var c = 0; c < chunkElements.length; c++) {
      status.textContent = "searching… " + c + " of " + chunkElements.length + " parts";
      var text = cache.has(c) ? cache.get(c).join("\n") : await inflate(chunkElements[c]);
      if (run !== searchRun) return;
      text.toLowerCase().split("\n").forEach(function (line, j) {
        if (line.indexOf(query) >= 0 || line.indexOf(escaped) >= 0) found.add(chunkStart[c] + j);
      });
    }
    searchMatches = found;
    status.textContent = "";
    limit = PAGE;
    refresh();
  }

  // --------------------------------------------------------------------------------------------- episode
  function table(pairs, cls) {
    var body = el("table", cls || "facts");
    pairs.forEach(function (pair) {
      if (pair[1] === undefined || pair[1] === null || pair[1] === "") return;
      var tr = el("tr");
      add(tr, el("th", "l", pair[0]), add(el("td", "l"), pair[1] instanceof Node ? pair[1] : el("span", null, fmt(pair[1]))));
      add(body, tr);
    });
    return body;
  }
  function object(value) { return value && typeof value === "object" && !Array.isArray(value) ? value : {}; }
  function contentBlock(content) {
    if (Array.isArray(content)) {
      var box = el("div", "parts");
      content.forEach(function (part) {
        part = object(part);
        if (part.type === "text") add(box, textBlock(part.text));
        else if (part.type === "image_url") add(box, el("p", "muted", "[image]"));
        else add(box, textBlock(JSON.stringify(part)));
      });
      return box;
    }
    if (content === null || content === undefined || content === "") return null;
    return textBlock(content);
  }
  function argumentsText(args) {
    if (typeof args === "string") {
      try { return JSON.stringify(JSON.parse(args), null, 2); } catch (error) { return args; }
    }
    return JSON.stringify(args, null, 2);
  }
  function message(role, cls, title) {
    var box = el("div", "message " + cls);
    add(box, el("div", "role", title || role));
    return box;
  }
  function renderEpisode(ep, row) {
    view.textContent = "";
    var messages = Array.isArray(ep.messages) ? ep.messages : [];
    var records = Array.isArray(ep.tool_calls) ? ep.tool_calls : [];
    var turnScores = Array.isArray(ep.turn_scores) ? ep.turn_scores : [];
    var outputs = new Map(), recordsById = new Map(), usedOutputs = new Set();
    messages.forEach(function (m, i) { m = object(m); if (m.role === "tool" && m.tool_call_id != null) outputs.set(String(m.tool_call_id), i); });
    records.forEach(function (r) { r = object(r); if (r.id != null) recordsById.set(String(r.id), r); });
    var head = el("h3", null, "Episode " + fmt(ep.id === undefined ? row[COL.id] : ep.id));
    var solved = row[COL.solved];
    add(view, head, add(el("p"), link(row)));
    var error = ep.error ? el("span", "bad", fmt(ep.error)) : null;
    add(view, table([
      ["score", add(el("span", solved ? "good" : "bad"), document.createTextNode(scoreText(row[COL.score]) + (solved ? " · solved" : " · not solved")))],
      ["data source", ep.data_source], ["generator", ep.generator], ["generator name", ep.generator_name],
      ["repeat", ep.repeat], ["success", ep.success], ["finish reason", ep.finish_reason],
      ["hit a turn limit", ep.reached_max_turns ? "yes" : null], ["error type", ep.error_type],
      ["error kind", ep.error_kind], ["error", error], ["results line", row[COL.line]]]));

    // the answer next to the truth
    add(view, el("h4", null, "Answer and ground truth"));
    var answer = ep.extracted_output !== undefined ? ep.extracted_output : ep.answer;
    var pair = el("div", "answer-truth");
    var left = add(el("div", "answer"), el("div", "role", "extracted answer"),
                   textBlock(answer === undefined || answer === null ? "(none)" : fmt(answer)));
    var right = add(el("div", "truth"), el("div", "role", "ground truth"));
    var truth = ep.ground_truth, hidden = new Set(Array.isArray(ep.hidden_fields) ? ep.hidden_fields : []);
    if (truth && typeof truth === "object" && !Array.isArray(truth)) {
      var body = el("table", "facts truth-fields");
      Object.keys(truth).forEach(function (key) {
        var name = add(el("th", "l"), document.createTextNode(key));
        if (hidden.has(key)) add(name, document.createTextNode(" "), badge("hidden", "hidden"));
        add(body, add(el("tr", hidden.has(key) ? "hidden-field" : null), name, add(el("td", "l"), textBlock(fmt(truth[key])))));
      });
      add(right, body);
    } else {
      add(right, textBlock(truth === undefined || truth === null ? "(not in this line)" : fmt(truth)));
    }
    add(view, add(pair, left, right));

    // the conversation
    add(view, el("h4", null, "Conversation"));
    var conversation = el("div", "conversation"), users = 0, feedback = 0, callNumber = 0;
    messages.forEach(function (m, i) {
      m = object(m);
      var role = String(m.role || "?");
      if (role === "tool") {
        if (usedOutputs.has(i)) return;
        var lone = message(role, "tool", "tool output" + (m.name ? " · " + m.name : ""));
        add(conversation, add(lone, contentBlock(m.content)));
        return;
      }
      var box;
      if (role === "user") {
        users += 1;
        if (users === 1) box = message(role, "user", "user · prompt");
        else {
          feedback += 1;
          var score = turnScores[feedback - 1];
          box = message(role, "user feedback", "feedback " + feedback + (score !== undefined ? " · turn score " + fmt(score) : ""));
        }
      } else if (role === "system") box = message(role, "system", "system prompt");
      else box = message(role, role === "assistant" ? "assistant" : "other", role);
      if (m.reasoning_content) {
        var details = add(el("details", "reasoning"), el("summary", null, "reasoning"), textBlock(m.reasoning_content));
        add(box, details);
      }
      add(box, contentBlock(m.content));
      (Array.isArray(m.tool_calls) ? m.tool_calls : []).forEach(function (call) {
        call = object(call);
        var fn = object(call.function), id = call.id != null ? String(call.id) : null;
        var record = (id !== null && recordsById.get(id)) || object(records[callNumber]);
        callNumber += 1;
        var name = fn.name || record.name || "?";
        var tool = add(el("div", "tool-call"), el("div", "role", "tool call · " + name + (id ? " · " + id : "")),
                       el("div", "muted", "arguments"), textBlock(argumentsText(fn.arguments !== undefined ? fn.arguments : record.arguments), "arguments"));
        var at = id !== null ? outputs.get(id) : undefined, output;
        if (at !== undefined) { usedOutputs.add(at); output = object(messages[at]).content; } else output = record.output;
        var facts = [];
        if (record.step_reward !== undefined && record.step_reward !== null) facts.push("step reward " + fmt(record.step_reward));
        if (record.duration_s !== undefined && record.duration_s !== null) facts.push(fmt(record.duration_s) + " s");
        add(tool, el("div", "muted", "output" + (facts.length ? " · " + facts.join(" · ") : "")));
        add(tool, contentBlock(output) || el("p", "muted", "(no output)"));
        if (record.error) add(tool, add(el("p", "bad tool-error"), badge("error", "bad"), document.createTextNode(" " + fmt(record.error))));
        if (record.error) tool.classList.add("failed");
        add(box, tool);
      });
      add(conversation, box);
    });
    add(view, conversation);

    // scores, tokens, timings
    add(view, el("h4", null, "Rewards, tokens and timings"));
    var stepRewards = records.map(function (r) { return object(r).step_reward; }).filter(function (r) { return r !== undefined && r !== null; });
    add(view, table([["step rewards", stepRewards.length ? stepRewards.map(fmt).join(", ") : null],
                     ["turn scores", turnScores.length ? turnScores.map(fmt).join(", ") : null],
                     ["tool rewards", Array.isArray(ep.tool_rewards) && ep.tool_rewards.length ? ep.tool_rewards.map(fmt).join(", ") : null],
                     ["tool scores", ep.tool_scores && Object.keys(object(ep.tool_scores)).length ? ep.tool_scores : null]]));
    var usage = object(ep.token_usage), timings = object(ep.timings), turns = object(ep.turn_record);
    add(view, add(el("div", "side-by-side"),
                  table(Object.keys(usage).map(function (k) { return ["tokens · " + k, usage[k]]; })),
                  table(Object.keys(timings).map(function (k) { return ["timing · " + k, timings[k]]; })),
                  table(Object.keys(turns).map(function (k) { return [k, turns[k]]; }))));
    add(view, add(el("details", "raw"), el("summary", null, "every field of this line (texts over 20 kB cut)"),
                  textBlock(JSON.stringify(ep, null, 2))));
  }
  async function openFromHash() {
    var hash = location.hash.replace(/^#/, "");
    if (hash.indexOf("episode=") !== 0) return;
    var id;
    try { id = decodeURIComponent(hash.slice("episode=".length)); } catch (error) { id = hash.slice("episode=".length); }
    var i = byId.get(id);
    if (i === undefined) { view.textContent = ""; add(view, el("p", "bad", "No episode " + id + " in this report.")); return; }
    var row = rows[i], lines = await chunkLines(row[COL.chunk]);
    renderEpisode(JSON.parse(lines[position[i]]), row);
    view.scrollIntoView();
  }

  async function start() {
    if (typeof DecompressionStream === "undefined") {
      status.textContent = "This browser cannot decompress the episodes (no DecompressionStream); use a current browser.";
      return;
    }
    rows = JSON.parse(await inflate(document.getElementById("episode-index")));
    var inChunk = {};
    rows.forEach(function (row, i) {
      var c = row[COL.chunk];
      if (!(c in inChunk)) { inChunk[c] = 0; chunkStart[c] = i; }
      position[i] = inChunk[c]++;
      if (!byId.has(row[COL.id])) byId.set(row[COL.id], i);
    });
    // failures first: unsolved before solved, lower scores first, then file order
    order = rows.map(function (_, i) { return i; }).sort(function (a, b) {
      var ra = rows[a], rb = rows[b];
      if (ra[COL.solved] !== rb[COL.solved]) return ra[COL.solved] ? 1 : -1;
      var sa = ra[COL.score] === null ? -1 : ra[COL.score], sb = rb[COL.score] === null ? -1 : rb[COL.score];
      return sa !== sb ? sa - sb : a - b;
    });
    fill("f-source", rows.map(function (r) { return r[COL.source]; }));
    fill("f-generator", rows.map(function (r) { return r[COL.generator]; }));
    fill("f-finish", rows.map(function (r) { return r[COL.finish]; }));
    fill("f-error", rows.map(function (r) { return r[COL.errorKind]; }));
    ["f-source", "f-generator", "f-finish", "f-error", "f-limit", "f-solved", "f-min", "f-max"].forEach(function (id) {
      var again = function () { limit = PAGE; refresh(); };
      document.getElementById(id).addEventListener("input", again);
      document.getElementById(id).addEventListener("change", again);
    });
    var timer = null;
    document.getElementById("f-search").addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(search, 250);
    });
    status.textContent = "";
    refresh();
    window.addEventListener("hashchange", openFromHash);
    await openFromHash();
    document.body.dataset.readyAfterMs = String(Math.round(performance.now()));  // for the benchmark
    document.body.dataset.viewer = "ready";
  }
  start().catch(function (error) { status.textContent = "The viewer failed: " + error; });
})();
