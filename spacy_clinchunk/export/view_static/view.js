// The view's behaviour: a detail panel for the chunk under the pointer, in focus or selected;
// a filter by status and a search box. Plain DOM, no network, no libraries.
(function () {
  "use strict";
  var chunks = Array.prototype.slice.call(document.querySelectorAll(".chunk"));
  var panel = document.getElementById("detail");
  var search = document.getElementById("search");
  var count = document.getElementById("match-count");
  var boxes = Array.prototype.slice.call(document.querySelectorAll(".filter input[type=checkbox]"));
  var statusText = JSON.parse(document.getElementById("status-text").textContent);
  var selected = null;

  function row(list, name, value) {
    var dt = document.createElement("dt");
    var dd = document.createElement("dd");
    dt.textContent = name;
    dd.textContent = value;
    list.appendChild(dt);
    list.appendChild(dd);
  }

  function show(chunk) {
    panel.textContent = "";
    var heading = document.createElement("h2");
    if (!chunk) {
      heading.textContent = "Details";
      var hint = document.createElement("p");
      hint.className = "hint";
      hint.textContent = "Point at, tab to or select a chunk (Enter or Space) to see its offsets, section, status and cues. Esc clears.";
      panel.appendChild(heading);
      panel.appendChild(hint);
      return;
    }
    var d = chunk.dataset;
    heading.textContent = d.noun.charAt(0).toUpperCase() + d.noun.slice(1) + " " + d.index + (chunk === selected ? " (selected)" : "");
    var list = document.createElement("dl");
    row(list, "Offsets", d.start + "\u2013" + d.end + " (" + (d.end - d.start) + " characters)");
    row(list, "Status", d.assertion + ": " + (statusText[d.assertion] || ""));
    if (d.kind === "header") row(list, "Kind", "header: " + statusText.header);
    row(list, "Section", d.section || "none");
    row(list, "Cues", d.cues || "none");
    if (d.focus) row(list, "Focus", d.focus);
    if (d.context) row(list, "Context", d.context);
    row(list, "Text", chunk.textContent);
    panel.appendChild(heading);
    panel.appendChild(list);
  }

  function select(chunk) {
    if (selected) {
      selected.classList.remove("selected");
      selected.setAttribute("aria-pressed", "false");
    }
    selected = chunk;
    if (chunk) {
      chunk.classList.add("selected");
      chunk.setAttribute("aria-pressed", "true");
    }
    show(chunk);
  }

  function apply() {
    var wanted = {};
    boxes.forEach(function (box) { wanted[box.value] = box.checked; });
    var query = search.value.trim().toLowerCase();
    var shown = 0;
    chunks.forEach(function (chunk) {
      var d = chunk.dataset;
      var kept = wanted[d.kind] !== false;
      var haystack = [chunk.textContent, d.section || "", d.cues || "", d.context || "", d.focus || ""].join(" ").toLowerCase();
      var hit = kept && (!query || haystack.indexOf(query) >= 0);
      chunk.classList.toggle("filtered", !kept);
      chunk.classList.toggle("dim", kept && !hit);
      chunk.classList.toggle("match", Boolean(query) && hit);
      chunk.tabIndex = kept ? 0 : -1;
      if (hit) shown += 1;
    });
    count.textContent = shown + " of " + chunks.length + " shown";
    if (selected && selected.classList.contains("filtered")) select(null);
  }

  chunks.forEach(function (chunk) {
    chunk.addEventListener("mouseenter", function () { if (!selected) show(chunk); });
    chunk.addEventListener("mouseleave", function () { if (!selected) show(null); });
    chunk.addEventListener("focus", function () { if (!selected) show(chunk); });
    chunk.addEventListener("click", function () {
      if (!chunk.classList.contains("filtered")) select(selected === chunk ? null : chunk);
    });
    chunk.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        select(selected === chunk ? null : chunk);
      }
    });
  });
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    if (document.activeElement === search && search.value) {
      search.value = "";
      apply();
    }
    select(null);
  });
  boxes.forEach(function (box) { box.addEventListener("change", apply); });
  search.addEventListener("input", apply);
  document.getElementById("clear").addEventListener("click", function () {
    search.value = "";
    boxes.forEach(function (box) { box.checked = true; });
    apply();
    select(null);
  });
  show(null);
  apply();
})();
