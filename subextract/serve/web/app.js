// The proofreading page: submit a job, watch its cues stream in, then correct them beside the
// video (weakest first), save, undo and export. Plain JavaScript, no build step; everything the
// page changes goes through the same API an integrator uses (docs/service.md).
//
// Saving: text and time edits stay in the page until Save (Ctrl+S); a save is all or nothing
// (PATCH /v1/jobs/ID/cues), and a refused cue is marked on its row with the server's reason while
// the others stay pending. Delete, merge, split and insert are stored at once (after the pending
// edits are saved); Undo takes back the last edit not yet saved, else the last stored change.
"use strict";

const $ = (selector, root = document) => root.querySelector(selector);
const keyInput = $("#api-key");
keyInput.value = localStorage.getItem("subextract-key") || "";
keyInput.addEventListener("change", () => { localStorage.setItem("subextract-key", keyInput.value); refreshJobs(); });

const state = {
  job: null,            // the open job's record
  cues: new Map(),      // seq -> the cue's record as stored
  pending: new Map(),   // seq -> {start, end, text}: what the page shows, where it differs from the record
  refused: new Map(),   // seq -> the reason the last save refused this cue
  localUndo: [],        // edits not yet saved, newest last: [{seq, field, before}]
  editable: false,
  streamAbort: null,
  pollTimer: null,
  playUntil: null,
};

// -- the API -----------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, message, body) { super(message); this.status = status; this.body = body; }
}

async function api(path, options = {}) {
  const headers = { ...(options.headers || {}) };
  if (keyInput.value) headers["Authorization"] = "Bearer " + keyInput.value;
  if (options.json !== undefined) {
    headers["Content-Type"] = "application/json";
    options = { ...options, body: JSON.stringify(options.json) };
  }
  const response = await fetch(path, { ...options, headers, signal: options.signal });
  if (!response.ok) {
    let body = null;
    try { body = await response.json(); } catch (_) { /* not JSON */ }
    throw new ApiError(response.status, (body && body.error) || `${response.status} ${response.statusText}`, body);
  }
  return response;
}

// -- times -------------------------------------------------------------------------------------

function formatTime(seconds) {
  const ms = Math.round(seconds * 1000);
  const h = Math.floor(ms / 3600000), m = Math.floor(ms / 60000) % 60, s = Math.floor(ms / 1000) % 60;
  return `${h}:${String(m).padStart(2, "0")}:${String(s).padStart(2, "0")}.${String(ms % 1000).padStart(3, "0")}`;
}

function parseTime(text) {
  const parts = text.trim().replace(",", ".").split(":");
  if (!parts.length || parts.length > 3 || parts.some((p) => !/^\d+(\.\d+)?$/.test(p))) return null;
  return parts.map(Number).reduce((total, part) => total * 60 + part, 0);
}

// -- submitting and listing jobs ---------------------------------------------------------------

$("#job-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const message = $("#submit-message");
  message.textContent = "";
  const file = $("#file").files[0];
  const url = $("#url").value.trim();
  const options = { lang: $("#lang").value.trim(), config: $("#config").value, region: $("#region").value,
                    start: $("#start").value.trim(), end: $("#end").value.trim(), watchlist: $("#watchlist").value };
  for (const name of Object.keys(options)) if (!options[name]) delete options[name];
  let request;
  if (file) {
    const form = new FormData();
    for (const [name, value] of Object.entries(options)) form.append(name, value);
    form.append("file", file);
    request = { method: "POST", body: form };
  } else if (url) {
    request = { method: "POST", json: { url, ...options } };
  } else {
    message.textContent = "choose a video file or give a URL";
    return;
  }
  if (!(await leaveAllowed("start a new job"))) return;
  $("#submit").disabled = true;
  try {
    const job = await (await api("/v1/jobs", request)).json();
    $("#file").value = "";
    openJob(job.id);
  } catch (error) {
    message.textContent = error.message;
  } finally {
    $("#submit").disabled = false;
    refreshJobs();
  }
});

async function refreshJobs() {
  try {
    const { jobs } = await (await api("/v1/jobs?limit=20")).json();
    $("#jobs").replaceChildren(...jobs.map((job) => {
      const item = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.dataset.id = job.id;
      if (state.job && state.job.id === job.id) button.setAttribute("aria-current", "true");
      const name = Object.assign(document.createElement("span"), { className: "job-name", textContent: job.name });
      const progress = job.status === "running" ? ` ${Math.round(job.progress * 100)} %` : "";
      const flag = job.complete === false || (job.warnings && job.warnings.length) ? " ⚠" : "";
      const status = Object.assign(document.createElement("span"),
                                   { className: "job-state", textContent: job.status + progress + flag });
      button.append(name, status);
      button.addEventListener("click", async () => { if (await leaveAllowed("open another job")) openJob(job.id); });
      item.append(button);
      return item;
    }));
  } catch (error) {
    $("#submit-message").textContent = error.message;
  }
}

// -- one job: status, banner, live cues --------------------------------------------------------

function openJob(id) {
  if (state.streamAbort) state.streamAbort.abort();
  clearTimeout(state.pollTimer);
  Object.assign(state, { job: { id }, cues: new Map(), pending: new Map(), refused: new Map(), localUndo: [],
                         editable: false, streamAbort: null });
  history.replaceState(null, "", `#job=${encodeURIComponent(id)}`);  // a link to this job, kept on reload
  $("#job").hidden = false;
  $("#cues").replaceChildren();
  $("#player").removeAttribute("src");
  $("#player").hidden = true;
  $("#no-video").hidden = true;
  updateSaveState();
  poll(true);
}

async function poll(first = false) {
  const id = state.job.id;
  let job;
  try {
    job = await (await api(`/v1/jobs/${id}`)).json();
  } catch (error) {
    $("#status").textContent = error.message;
    return;
  }
  if (!state.job || state.job.id !== id) return;
  const wasActive = state.job.status === "queued" || state.job.status === "running";
  state.job = job;
  showJob(job);
  const active = job.status === "queued" || job.status === "running";
  if (active) {
    if (!state.streamAbort) streamCues(id);
    state.pollTimer = setTimeout(() => poll(), 1000);
  } else if (job.status === "done" && (first || wasActive || !state.editable)) {
    await loadCues(id);
  }
  if (first || wasActive !== active) refreshJobs();
}

function showJob(job) {
  $("#job-title").textContent = job.name;
  const running = job.status === "running" && job.stage ? ` (${job.stage})` : "";
  const percent = job.status === "running" ? ` ${Math.round(job.progress * 100)} %` : "";
  $("#status").textContent = `Status: ${job.status}${running}${percent}`;
  $("#status").dataset.status = job.status;
  $("#progress").value = job.status === "done" ? 1 : Number(job.progress) || 0;
  $("#progress").hidden = job.status !== "running" && job.status !== "queued";
  $("#cancel").hidden = !(job.status === "queued" || job.status === "running");
  $("#undo").disabled = !(state.localUndo.length || (state.editable && job.last_change));
  showBanner(job);
  const player = $("#player");
  if (job.video && !player.getAttribute("src")) {
    player.src = job.video;
    player.hidden = false;
  }
  $("#no-video").hidden = !!job.video;
}

function showBanner(job) {
  const banner = $("#banner");
  const parts = [];
  const incomplete = job.complete === false;
  if (job.error) parts.push(["Error", [job.error]]);
  if (job.expired) parts.push(["Removed", ["The retention rule removed this job's video, pictures and cues on " +
                                           new Date(job.expired * 1000).toLocaleString() + "."]]);
  if (incomplete) parts.push(["Incomplete run", ["The cues cover only part of the video: read the warnings below."]]);
  if (job.warnings && job.warnings.length) parts.push(["Warnings", job.warnings]);
  const spans = job.damaged || [];
  if (spans.length) {
    parts.push(["Damaged spans (cues inside them may be wrong)", spans.map((span) => span)]);
  }
  banner.hidden = !parts.length;
  banner.className = "banner" + (job.status === "failed" ? " failed" : "");
  banner.replaceChildren(...parts.map(([title, items]) => {
    const block = document.createElement("div");
    block.append(Object.assign(document.createElement("h3"), { textContent: "⚠ " + title }));
    const list = document.createElement("ul");
    for (const item of items) {
      const entry = document.createElement("li");
      if (typeof item === "string") {
        entry.textContent = item;
      } else {
        const seek = Object.assign(document.createElement("button"), { type: "button",
          textContent: `${formatTime(item.start)} – ${formatTime(item.end)}` });
        seek.addEventListener("click", () => seekTo(item.start, false));
        entry.append(seek, ` ${item.errors} decode error${item.errors === 1 ? "" : "s"}` +
                     (item.missing_frames ? `, ${item.missing_frames} frames missing` : "") +
                     (item.first_error ? `: ${item.first_error}` : ""));
      }
      list.append(entry);
    }
    block.append(list);
    return block;
  }));
}

async function streamCues(id) {
  // The same stream as SSE, as JSON lines over fetch: an EventSource cannot send the API key.
  const controller = new AbortController();
  state.streamAbort = controller;
  let after = -1;
  try {
    for (let attempt = 0; attempt < 20 && state.job && state.job.id === id; attempt++) {
      const response = await api(`/v1/jobs/${id}/cues?format=jsonl&after=${after}`, { signal: controller.signal });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        const lines = buffer.split("\n");
        buffer = lines.pop();
        for (const line of lines.filter(Boolean)) {
          const cue = JSON.parse(line);
          after = Math.max(after, cue.seq);
          state.cues.set(cue.seq, cue);
          appendLiveCue(cue);
        }
      }
      break;  // the stream ends with the job
    }
  } catch (error) {
    if (error.name !== "AbortError") $("#cue-count").textContent = "the live stream stopped: " + error.message;
  }
}

function appendLiveCue(cue) {
  if (state.editable) return;
  const list = $("#cues");
  list.append(cueItem(cue));
  $("#cue-count").textContent = `${state.cues.size} cues so far — editing opens when the job is done`;
}

async function loadCues(id) {
  const text = await (await api(`/v1/jobs/${id}/cues?format=jsonl&follow=false`)).text();
  if (!state.job || state.job.id !== id) return;
  state.cues = new Map(text.split("\n").filter(Boolean).map((line) => JSON.parse(line)).map((c) => [c.seq, c]));
  state.editable = true;
  renderCues();
  showJob(state.job);
}

// -- the list ----------------------------------------------------------------------------------

function threshold() {
  const value = Number($("#threshold").value);
  return Number.isFinite(value) ? value : 0.8;
}

function inDamagedSpan(cue) {
  return (state.job.damaged || []).some((span) => cue.start < span.end && cue.end > span.start);
}

function shownCues() {
  const weak = threshold();
  let cues = [...state.cues.values()];
  if ($("#only-weak").checked) cues = cues.filter((cue) => cue.confidence < weak);
  if ($("#only-flagged").checked) cues = cues.filter((cue) => cue.flags && cue.flags.length);
  if ($("#only-damaged").checked) cues = cues.filter(inDamagedSpan);
  const byTime = (a, b) => a.start - b.start || a.end - b.end || a.seq - b.seq;
  cues.sort($("#order").value === "time" ? byTime : (a, b) => a.confidence - b.confidence || byTime(a, b));
  return cues;
}

let pictureObserver = null;

function renderCues() {
  if (pictureObserver) pictureObserver.disconnect();
  pictureObserver = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      pictureObserver.unobserve(entry.target);
      loadPicture(entry.target);
    }
  }, { rootMargin: "400px" });
  const cues = shownCues();
  $("#cues").replaceChildren(...cues.map((cue) => cueItem(cue)));
  $("#cue-count").textContent = `${cues.length} of ${state.cues.size} cues shown`;
  updateSaveState();
}

function timeOrder() {
  return [...state.cues.values()].sort((a, b) => a.start - b.start || a.end - b.end || a.seq - b.seq);
}

function cueNumber(cue) {
  return timeOrder().findIndex((c) => c.seq === cue.seq) + 1;
}

function badge(kind, text) {
  return Object.assign(document.createElement("span"), { className: `badge ${kind}`, textContent: text });
}

function cueItem(cue) {
  const item = document.createElement("li");
  item.className = "cue";
  item.dataset.seq = cue.seq;
  const number = state.editable ? cueNumber(cue) : cue.seq + 1;
  const weak = cue.confidence < threshold();
  const flagged = cue.flags && cue.flags.length;
  const damaged = inDamagedSpan(cue);
  item.classList.toggle("weak", weak);
  item.classList.toggle("flagged", !!flagged);
  item.classList.toggle("damaged", damaged);
  item.setAttribute("aria-label", `Cue ${number}`);

  const head = document.createElement("div");
  head.className = "cue-head";
  const play = Object.assign(document.createElement("button"), { type: "button", className: "play",
    textContent: `▶ ${number}  ${formatTime(cue.start)}` });
  play.setAttribute("aria-label", `Play cue ${number} from ${formatTime(cue.start)}`);
  play.addEventListener("click", () => playCue(cue.seq));
  head.append(play);
  head.append(weak ? badge("weak", `⚠ weak reading ${cue.confidence.toFixed(2)}`)
                   : badge("confidence", `confidence ${cue.confidence.toFixed(2)}`));
  if (flagged) head.append(badge("flag", `⚑ flagged: ${cue.flags.join(", ")}`));
  if (damaged) head.append(badge("damaged", "▲ in a damaged span"));
  if (cue.edited) head.append(badge("state", "✎ edited"));
  const unsaved = badge("state unsaved", "● unsaved");
  unsaved.hidden = true;
  head.append(unsaved);
  item.append(head);

  const picture = document.createElement("button");
  picture.type = "button";
  picture.className = "picture";
  picture.setAttribute("aria-label", `Enlarge the picture of cue ${number}`);
  const image = document.createElement("img");
  image.alt = `The text lines of cue ${number} as the video shows them`;
  image.dataset.seq = cue.seq;
  picture.append(image);
  picture.addEventListener("click", () => openZoom(cue.seq));
  item.append(picture);
  if (pictureObserver && state.editable) pictureObserver.observe(image); else loadPicture(image);

  const fields = document.createElement("div");
  fields.className = "fields";
  const shown = state.pending.get(cue.seq) || { start: formatTime(cue.start), end: formatTime(cue.end), text: cue.text };
  const start = field("Start", "input", "time start", shown.start);
  const end = field("End", "input", "time end", shown.end);
  const text = field("Text", "textarea", "text", shown.text);
  text.control.rows = Math.max(1, shown.text.split("\n").length);
  text.control.dir = "auto";
  if (cue.language && cue.language !== "und") text.control.lang = cue.language;
  text.label.classList.add("text-label");
  fields.append(start.label, end.label, text.label);
  item.append(fields);
  for (const [name, { control }] of Object.entries({ start, end, text })) {
    control.readOnly = !state.editable;
    control.addEventListener("focus", () => { control.dataset.before = control.value; if (state.editable) seekTo(cue.start, false); });
    control.addEventListener("input", () => markPending(cue.seq));
    control.addEventListener("change", () => {
      if (control.dataset.before !== control.value) {
        state.localUndo.push({ seq: cue.seq, field: name, before: control.dataset.before });
        control.dataset.before = control.value;
        updateSaveState();
      }
    });
  }

  if (state.editable) {
    const actions = document.createElement("div");
    actions.className = "actions";
    const action = (label, handler, title) => {
      const button = Object.assign(document.createElement("button"), { type: "button", textContent: label });
      button.setAttribute("aria-label", `${title || label} (cue ${number})`);
      button.addEventListener("click", handler);
      actions.append(button);
    };
    action("Split at caret", () => splitCue(cue.seq, text.control));
    action("Merge with next", () => mergeWithNext(cue.seq));
    action("Insert after", () => insertAfter(cue.seq));
    action("Delete", () => deleteCue(cue.seq));
    item.append(actions);
  } else {
    item.append(Object.assign(document.createElement("p"), { className: "readonly-note",
      textContent: "Arrived live; editing opens when the job is done." }));
  }
  const refusal = document.createElement("p");
  refusal.className = "refusal";
  refusal.setAttribute("role", "alert");
  refusal.hidden = true;
  item.append(refusal);
  showRowState(item);
  return item;
}

function field(labelText, tag, className, value) {
  const label = document.createElement("label");
  label.append(labelText);
  const control = document.createElement(tag);
  control.className = className;
  control.value = value;
  if (tag === "input") control.autocomplete = "off";
  label.append(control);
  return { label, control };
}

function rowOf(seq) {
  return $(`#cues li[data-seq="${seq}"]`);
}

function rowValues(item) {
  return { start: $(".start", item).value, end: $(".end", item).value, text: $(".text", item).value };
}

function markPending(seq) {
  const item = rowOf(seq);
  const cue = state.cues.get(seq);
  if (!item || !cue) return;
  const values = rowValues(item);
  const same = values.text === cue.text && parseTime(values.start) === Math.round(cue.start * 1000) / 1000
    && parseTime(values.end) === Math.round(cue.end * 1000) / 1000;
  if (same) state.pending.delete(seq); else state.pending.set(seq, values);
  showRowState(item);
  updateSaveState();
}

function showRowState(item) {
  const seq = Number(item.dataset.seq);
  const reason = state.refused.get(seq);
  item.classList.toggle("dirty", state.pending.has(seq));
  item.classList.toggle("refused", !!reason);
  $(".unsaved", item).hidden = !state.pending.has(seq);
  const refusal = $(".refusal", item);
  refusal.hidden = !reason;
  refusal.replaceChildren();
  for (const control of item.querySelectorAll("input, textarea")) control.removeAttribute("aria-invalid");
  if (reason) {
    refusal.append(`Not saved: ${reason}`);
    const discard = Object.assign(document.createElement("button"), { type: "button", textContent: "Discard my change" });
    discard.addEventListener("click", () => discardRow(seq));
    refusal.append(discard);
    const culprit = /start|end|time/i.test(reason) && !/text/i.test(reason) ? ".time" : ".text";
    for (const control of item.querySelectorAll(culprit)) control.setAttribute("aria-invalid", "true");
  }
}

async function discardRow(seq) {
  state.pending.delete(seq);
  state.refused.delete(seq);
  state.localUndo = state.localUndo.filter((entry) => entry.seq !== seq);
  await reloadCues();
}

async function reloadCues() {
  const text = await (await api(`/v1/jobs/${state.job.id}/cues?format=jsonl&follow=false`)).text();
  state.cues = new Map(text.split("\n").filter(Boolean).map((line) => JSON.parse(line)).map((c) => [c.seq, c]));
  for (const seq of [...state.pending.keys()]) if (!state.cues.has(seq)) state.pending.delete(seq);
  renderCues();
}

async function loadPicture(image) {
  const seq = image.dataset.seq;
  try {
    const blob = await (await api(`/v1/jobs/${state.job.id}/cues/${seq}/lines.png`)).blob();
    image.src = URL.createObjectURL(blob);
  } catch (error) {
    image.closest(".picture").classList.add("missing");
    image.replaceWith(document.createTextNode(`no picture (${error.message})`));
  }
}

// -- saving ------------------------------------------------------------------------------------

function updateSaveState() {
  const count = state.pending.size;
  const refused = state.refused.size;
  const save = $("#save");
  save.disabled = !count || !state.editable;
  save.textContent = count ? `Save ${count} change${count === 1 ? "" : "s"}` : "Save";
  const status = $("#save-status");
  status.classList.toggle("refused", refused > 0);
  status.textContent = refused ? `Not saved: ${refused} cue${refused === 1 ? "" : "s"} refused (marked below); nothing was stored`
    : count ? `${count} unsaved change${count === 1 ? "" : "s"}` : state.editable ? "All changes saved" : "";
  $("#undo").disabled = !(state.localUndo.length || (state.editable && state.job && state.job.last_change));
}

async function save() {
  if (!state.pending.size) return true;
  state.refused.clear();
  const edits = [];
  for (const [seq, values] of state.pending) {
    const cue = state.cues.get(seq);
    const start = parseTime(values.start), end = parseTime(values.end);
    if (start === null || end === null) {
      state.refused.set(seq, `${start === null ? "start" : "end"} is not a time like 0:01:02.500`);
      continue;
    }
    const edit = { seq, version: cue.version };
    if (values.text !== cue.text) edit.text = values.text;
    if (start !== Math.round(cue.start * 1000) / 1000) edit.start = start;
    if (end !== Math.round(cue.end * 1000) / 1000) edit.end = end;
    edits.push(edit);
  }
  if (!state.refused.size) {
    try {
      const change = await (await api(`/v1/jobs/${state.job.id}/cues`, { method: "PATCH", json: { edits } })).json();
      for (const cue of change.cues) { state.cues.set(cue.seq, cue); state.pending.delete(cue.seq); }
      state.localUndo = [];
      state.job = await (await api(`/v1/jobs/${state.job.id}`)).json();
      renderCues();
      return true;
    } catch (error) {
      const refusals = (error.body && error.body.refused) || [];
      for (const refusal of refusals) state.refused.set(refusal.seq, refusal.error);
      if (!refusals.length) $("#save-status").textContent = `Not saved: ${error.message}`;
    }
  }
  for (const item of document.querySelectorAll("#cues li")) showRowState(item);
  updateSaveState();
  const first = [...state.refused.keys()].map(rowOf).find(Boolean);
  if (first) first.scrollIntoView({ block: "center" });
  return false;
}

$("#save").addEventListener("click", save);

// Asks before something would drop unsaved edits; true when it may go on.
const unsavedDialog = $("#unsaved");
function leaveAllowed(what) {
  if (!state.pending.size) return Promise.resolve(true);
  $("#unsaved-text").textContent = `${state.pending.size} cue${state.pending.size === 1 ? " has" : "s have"} ` +
    `unsaved changes. Save before you ${what}?`;
  unsavedDialog.showModal();
  return new Promise((resolve) => {
    const finish = async (choice) => {
      unsavedDialog.close();
      if (choice === "save") resolve(await save());
      else if (choice === "discard") { state.pending.clear(); state.refused.clear(); resolve(true); }
      else resolve(false);
    };
    $("#unsaved-save").onclick = () => finish("save");
    $("#unsaved-discard").onclick = () => finish("discard");
    $("#unsaved-cancel").onclick = () => finish("cancel");
    unsavedDialog.oncancel = () => finish("cancel");
  });
}

window.addEventListener("beforeunload", (event) => {
  if (state.pending.size) {
    event.preventDefault();
    event.returnValue = "";
  }
});

// -- changes stored at once --------------------------------------------------------------------

async function change(path, options) {
  if (!(await save())) return;
  try {
    const result = await (await api(`/v1/jobs/${state.job.id}/${path}`, options)).json();
    for (const seq of result.removed) { state.cues.delete(seq); state.pending.delete(seq); }
    for (const cue of result.cues) state.cues.set(cue.seq, cue);
    state.job = await (await api(`/v1/jobs/${state.job.id}`)).json();
    renderCues();
    return result;
  } catch (error) {
    $("#save-status").textContent = `Not done: ${error.message}`;
    if (error.status === 409 || error.status === 404) await reloadCues();
    return null;
  }
}

function deleteCue(seq) {
  return change(`cues/${seq}?version=${state.cues.get(seq).version}`, { method: "DELETE" });
}

function mergeWithNext(seq) {
  const order = timeOrder();
  const index = order.findIndex((cue) => cue.seq === seq);
  const next = order[index + 1];
  if (!next) { $("#save-status").textContent = "Not done: the last cue has no next one to merge with"; return null; }
  return change("cues/merge", { method: "POST", json: { cues: [{ seq, version: state.cues.get(seq).version },
                                                                { seq: next.seq, version: next.version }] } });
}

function splitCue(seq, textarea) {
  const cue = state.cues.get(seq);
  const text = textarea.value;
  const caret = textarea.selectionStart;
  const before = text.slice(0, caret).trim(), after = text.slice(caret).trim();
  if (!before || !after) {
    $("#save-status").textContent = "Not done: put the caret in the text where the cue should split";
    textarea.focus();
    return null;
  }
  // At the player's position when it is inside the cue, else where the caret falls in the text.
  const now = $("#player").currentTime;
  const at = now > cue.start + 0.05 && now < cue.end - 0.05 ? now
    : cue.start + (cue.end - cue.start) * (caret / text.length);
  return change(`cues/${seq}/split`, { method: "POST", json: { at: Math.round(at * 1000) / 1000, version: cue.version,
                                                                texts: [before, after] } });
}

function insertAfter(seq) {
  const order = timeOrder();
  const index = order.findIndex((cue) => cue.seq === seq);
  const cue = order[index], next = order[index + 1];
  const start = cue.end;
  const end = next ? Math.max(Math.min(next.start, start + 2), start + 0.1) : start + 2;
  return change("cues", { method: "POST", json: { start, end: Math.round(end * 1000) / 1000, text: "…" } });
}

async function undo() {
  const local = state.localUndo.pop();
  if (local) {
    const item = rowOf(local.seq);
    if (item) {
      $(`.${local.field}`, item).value = local.before;
      markPending(local.seq);
    }
    updateSaveState();
    return;
  }
  if (!state.job.last_change) return;
  await change("undo", { method: "POST", json: { change: state.job.last_change.change } });
}

$("#undo").addEventListener("click", undo);

// -- the player --------------------------------------------------------------------------------

const player = $("#player");

function seekTo(seconds, play) {
  if (player.hidden) return;
  player.currentTime = seconds + 0.001;
  if (play) player.play().catch(() => {});
}

function playCue(seq) {
  const cue = state.cues.get(seq);
  if (!cue) return;
  state.playUntil = cue.end;
  seekTo(cue.start, true);
}

player.addEventListener("timeupdate", () => {
  const now = player.currentTime;
  if (state.playUntil !== null && now >= state.playUntil) {
    player.pause();
    state.playUntil = null;
  }
  const current = [...state.cues.values()].find((cue) => now >= cue.start && now < cue.end);
  for (const item of document.querySelectorAll("#cues li.current")) {
    if (!current || Number(item.dataset.seq) !== current.seq) { item.classList.remove("current"); item.removeAttribute("aria-current"); }
  }
  if (!current) return;
  const item = rowOf(current.seq);
  if (item && !item.classList.contains("current")) {
    item.classList.add("current");
    item.setAttribute("aria-current", "true");
    if ($("#follow").checked && !item.contains(document.activeElement)) item.scrollIntoView({ block: "nearest" });
  }
});
player.addEventListener("pause", () => { state.playUntil = null; });

// -- pictures ----------------------------------------------------------------------------------

const zoom = $("#zoom");
async function openZoom(seq) {
  const image = $("#zoom-image");
  image.removeAttribute("src");
  image.alt = `The text lines of the cue, enlarged`;
  zoom.dataset.seq = seq;
  $("#zoom-band").hidden = false;
  zoom.showModal();
  await zoomPicture("lines.png");
}

async function zoomPicture(name) {
  const image = $("#zoom-image");
  try {
    const blob = await (await api(`/v1/jobs/${state.job.id}/cues/${zoom.dataset.seq}/${name}`)).blob();
    image.onload = () => { image.width = image.naturalWidth * (name === "lines.png" ? 2 : 1); };
    image.src = URL.createObjectURL(blob);
  } catch (error) {
    image.alt = error.message;
  }
}

$("#zoom-band").addEventListener("click", () => {
  $("#zoom-band").hidden = true;
  $("#zoom-image").alt = "The whole subtitle band the cue was read from";
  zoomPicture("crop.png");
});
$("#zoom-close").addEventListener("click", () => zoom.close());

// -- order, filters, find and replace ----------------------------------------------------------

for (const id of ["#order", "#threshold", "#only-weak", "#only-flagged", "#only-damaged"]) {
  $(id).addEventListener("change", () => { if (state.editable) renderCues(); });
}

function findNext() {
  const needle = $("#find").value;
  if (!needle) return;
  const textareas = [...document.querySelectorAll("#cues textarea.text")];
  const from = textareas.indexOf(document.activeElement);
  const ordered = [...textareas.slice(from + 1), ...textareas.slice(0, from + 1)];
  const found = ordered.find((area) => area.value.includes(needle));
  $("#find-status").textContent = found ? "" : `“${needle}” is in none of the shown cues`;
  if (!found) return;
  const at = found.value.indexOf(needle);
  found.focus();
  found.setSelectionRange(at, at + needle.length);
  found.closest("li").scrollIntoView({ block: "center" });
}

function replaceAll() {
  const needle = $("#find").value;
  if (!needle || !state.editable) return;
  let count = 0;
  for (const area of document.querySelectorAll("#cues textarea.text")) {
    if (!area.value.includes(needle)) continue;
    const seq = Number(area.closest("li").dataset.seq);
    state.localUndo.push({ seq, field: "text", before: area.value });
    area.value = area.value.split(needle).join($("#replace").value);
    markPending(seq);
    count += 1;
  }
  $("#find-status").textContent = `replaced in ${count} cue${count === 1 ? "" : "s"} (not saved yet)`;
  updateSaveState();
}

$("#find-next").addEventListener("click", findNext);
$("#replace-all").addEventListener("click", replaceAll);

// -- keys --------------------------------------------------------------------------------------

function focusedSeq() {
  const item = document.activeElement && document.activeElement.closest && document.activeElement.closest("#cues li");
  return item ? Number(item.dataset.seq) : null;
}

function gotoWeak(step) {
  const items = [...document.querySelectorAll("#cues li.weak")];
  if (!items.length) return;
  const current = focusedSeq();
  const all = [...document.querySelectorAll("#cues li")];
  const here = current === null ? (step > 0 ? -1 : all.length) : all.findIndex((item) => Number(item.dataset.seq) === current);
  const candidates = step > 0 ? all.slice(here + 1) : all.slice(0, Math.max(here, 0)).reverse();
  const target = candidates.find((item) => item.classList.contains("weak")) || (step > 0 ? items[0] : items[items.length - 1]);
  $(".text", target).focus();
  target.scrollIntoView({ block: "center" });
}

function inTextField(target) {
  return target && (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && target.type !== "checkbox"));
}

document.addEventListener("keydown", (event) => {
  const ctrl = event.ctrlKey || event.metaKey;
  if (ctrl && event.key.toLowerCase() === "s") { event.preventDefault(); save(); return; }
  if (ctrl && event.key === "Enter") {
    event.preventDefault();
    const seq = focusedSeq();
    if (seq !== null) playCue(seq);
    return;
  }
  if (event.altKey && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
    event.preventDefault();
    gotoWeak(event.key === "ArrowDown" ? 1 : -1);
    return;
  }
  if (inTextField(event.target)) return;
  if (ctrl && event.key.toLowerCase() === "z") { event.preventDefault(); undo(); return; }
  if (event.key === "?") { event.preventDefault(); $("#help").showModal(); }
});

$("#help-open").addEventListener("click", () => $("#help").showModal());
$("#help-close").addEventListener("click", () => $("#help").close());

// -- cancel and export -------------------------------------------------------------------------

$("#cancel").addEventListener("click", async () => {
  try {
    await api(`/v1/jobs/${state.job.id}`, { method: "DELETE" });
  } catch (error) {
    $("#status").textContent = error.message;
  }
  clearTimeout(state.pollTimer);
  poll();
});

for (const format of ["srt", "vtt", "ass"]) {
  $(`#export-${format}`).addEventListener("click", async () => {
    if (!(await leaveAllowed(`export ${format.toUpperCase()}`))) return;
    try {
      const response = await api(`/v1/jobs/${state.job.id}/subtitles.${format}`);
      const disposition = response.headers.get("Content-Disposition") || "";
      const name = (disposition.match(/filename="([^"]+)"/) || [])[1] || `subtitles.${format}`;
      const link = Object.assign(document.createElement("a"),
                                 { href: URL.createObjectURL(await response.blob()), download: name });
      document.body.append(link);
      link.click();
      link.remove();
    } catch (error) {
      $("#save-status").textContent = error.message;
    }
  });
}

refreshJobs();
const linked = location.hash.match(/^#job=([A-Za-z0-9._-]+)$/);
if (linked) openJob(linked[1]);
