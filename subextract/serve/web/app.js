// The proofreading page: submit a job, watch it, then correct its cues (weakest first) and export.
"use strict";

const $ = (selector) => document.querySelector(selector);
const keyInput = $("#api-key");
keyInput.value = localStorage.getItem("subextract-key") || "";
keyInput.addEventListener("change", () => { localStorage.setItem("subextract-key", keyInput.value); refreshJobs(); });

let currentJob = null;
let pollTimer = null;
let cuesShownFor = null;

async function api(path, options = {}) {
  const headers = { ...(options.headers || {}) };
  if (keyInput.value) headers["Authorization"] = "Bearer " + keyInput.value;
  const response = await fetch(path, { ...options, headers });
  if (!response.ok) {
    let message = response.status + " " + response.statusText;
    try { message = (await response.json()).error || message; } catch (_) { /* not JSON */ }
    throw new Error(message);
  }
  return response;
}

function formatTime(seconds) {
  const ms = Math.round(seconds * 1000);
  const h = Math.floor(ms / 3600000), m = Math.floor(ms / 60000) % 60, s = Math.floor(ms / 1000) % 60;
  return `${h}:${String(m).padStart(2, "0")}:${String(s).padStart(2, "0")}.${String(ms % 1000).padStart(3, "0")}`;
}

function parseTime(text) {
  const parts = text.trim().split(":").map(Number);
  if (!parts.length || parts.some((p) => !Number.isFinite(p) || p < 0) || parts.length > 3) return null;
  return parts.reduce((total, part) => total * 60 + part, 0);
}

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
    request = { method: "POST", body: JSON.stringify({ url, ...options }), headers: { "Content-Type": "application/json" } };
  } else {
    message.textContent = "choose a video file or give a URL";
    return;
  }
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
    const body = $("#jobs tbody");
    body.replaceChildren(...jobs.map((job) => {
      const row = document.createElement("tr");
      row.dataset.id = job.id;
      for (const text of [job.name, job.status, Math.round(job.progress * 100) + " %"]) {
        const cell = document.createElement("td");
        cell.textContent = text;
        row.append(cell);
      }
      row.addEventListener("click", () => openJob(job.id));
      return row;
    }));
  } catch (error) {
    $("#submit-message").textContent = error.message;
  }
}

function openJob(id) {
  currentJob = id;
  cuesShownFor = null;
  $("#job").hidden = false;
  $("#proofread").hidden = true;
  clearTimeout(pollTimer);
  poll();
}

async function poll() {
  const id = currentJob;
  try {
    const job = await (await api(`/v1/jobs/${id}`)).json();
    if (id !== currentJob) return;
    $("#job-title").textContent = job.name;
    $("#status").textContent = job.status + (job.stage && job.status === "running" ? ` (${job.stage})` : "");
    $("#status").dataset.status = job.status;
    $("#progress").value = job.progress;
    $("#job-error").textContent = job.error || "";
    $("#cancel").hidden = !(job.status === "queued" || job.status === "running");
    if (job.status === "done") {
      if (cuesShownFor !== id) await showCues(id);
      refreshJobs();
      return;
    }
    if (job.status === "queued" || job.status === "running") pollTimer = setTimeout(poll, 1000);
    else refreshJobs();
  } catch (error) {
    $("#job-error").textContent = error.message;
  }
}

async function showCues(id) {
  const text = await (await api(`/v1/jobs/${id}/cues?format=jsonl&follow=false`)).text();
  const cues = text.split("\n").filter(Boolean).map((line) => JSON.parse(line));
  cues.sort((a, b) => a.confidence - b.confidence || a.start - b.start);
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      observer.unobserve(entry.target);
      loadCrop(id, entry.target);
    }
  });
  $("#cues tbody").replaceChildren(...cues.map((cue) => cueRow(cue, observer)));
  cuesShownFor = id;
  $("#proofread").hidden = false;
  $("#save").disabled = true;
}

function cueRow(cue, observer) {
  const row = document.createElement("tr");
  row.dataset.seq = cue.seq;
  if (cue.flags && cue.flags.length) row.classList.add("flagged");
  const picture = document.createElement("img");
  picture.alt = "subtitle picture";
  picture.dataset.seq = cue.seq;
  observer.observe(picture);
  const confidence = document.createElement("span");
  confidence.className = "confidence" + (cue.confidence < 0.8 ? " low" : "");
  confidence.textContent = cue.confidence.toFixed(3);
  const start = Object.assign(document.createElement("input"), { className: "time start", value: formatTime(cue.start) });
  const end = Object.assign(document.createElement("input"), { className: "time end", value: formatTime(cue.end) });
  const text = Object.assign(document.createElement("textarea"), { className: "text", rows: cue.lines.length || 1,
                                                                    value: cue.text });
  for (const input of [start, end, text]) {
    input.addEventListener("input", () => { row.classList.add("dirty"); $("#save").disabled = false; $("#saved").textContent = ""; });
  }
  for (const element of [picture, confidence, start, end, text]) {
    const cell = document.createElement("td");
    cell.append(element);
    row.append(cell);
  }
  return row;
}

async function loadCrop(id, image) {
  try {
    const blob = await (await api(`/v1/jobs/${id}/cues/${image.dataset.seq}/crop.png`)).blob();
    image.src = URL.createObjectURL(blob);
  } catch (error) {
    image.alt = error.message;
  }
}

$("#save").addEventListener("click", async () => {
  const saved = $("#saved");
  saved.textContent = "";
  const rows = [...document.querySelectorAll("#cues tr.dirty")];
  let count = 0;
  for (const row of rows) {
    const start = parseTime(row.querySelector(".start").value);
    const end = parseTime(row.querySelector(".end").value);
    if (start === null || end === null) {
      saved.textContent = "a time is not H:MM:SS.mmm";
      return;
    }
    try {
      await api(`/v1/jobs/${currentJob}/cues/${row.dataset.seq}`, {
        method: "PATCH", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ text: row.querySelector(".text").value, start, end }) });
      row.classList.remove("dirty");
      count += 1;
    } catch (error) {
      saved.textContent = error.message;
      return;
    }
  }
  $("#save").disabled = true;
  saved.textContent = `saved ${count} cue${count === 1 ? "" : "s"}`;
});

$("#cancel").addEventListener("click", async () => {
  try {
    await api(`/v1/jobs/${currentJob}`, { method: "DELETE" });
  } catch (error) {
    $("#job-error").textContent = error.message;
  }
  clearTimeout(pollTimer);
  poll();
});

for (const format of ["srt", "vtt", "ass"]) {
  $(`#export-${format}`).addEventListener("click", async () => {
    try {
      const response = await api(`/v1/jobs/${currentJob}/subtitles.${format}`);
      const disposition = response.headers.get("Content-Disposition") || "";
      const name = (disposition.match(/filename="([^"]+)"/) || [])[1] || `subtitles.${format}`;
      const link = Object.assign(document.createElement("a"),
                                 { href: URL.createObjectURL(await response.blob()), download: name });
      document.body.append(link);
      link.click();
      link.remove();
    } catch (error) {
      $("#saved").textContent = error.message;
    }
  });
}

refreshJobs();
