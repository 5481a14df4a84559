// "Try it" on the scenario editor: send the preview's request to the real fake endpoint and show the answer as the
// stream arrives. No library: fetch with a ReadableStream reader, and a small SSE parser for both protocols.
(function () {
  "use strict";

  const RETRYABLE = new Set([408, 409, 429, 500, 502, 503, 504]);
  const MAX_ATTEMPTS = 6;

  // crypto.randomUUID needs a secure context; the dashboard may be served over plain http on a LAN address.
  function uuid4() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    const b = crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }

  function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text; // text only: answers are never parsed as HTML
    return node;
  }

  // What the client was told to wait before retrying, as the SDKs read it.
  function retryDelay(response) {
    const ms = Number(response.headers.get("retry-after-ms"));
    if (ms >= 0 && response.headers.has("retry-after-ms")) return ms;
    const seconds = Number(response.headers.get("retry-after"));
    if (seconds > 0) return seconds * 1000;
    return 500;
  }

  class View {
    constructor(box) {
      this.out = box.querySelector(".try-output");
      this.meta = this.out.querySelector(".try-meta");
      this.attempts = this.out.querySelector(".try-attempts");
      this.reasoningBox = this.out.querySelector(".try-reasoning");
      this.reasoning = this.reasoningBox.querySelector("pre");
      this.text = this.out.querySelector(".try-text");
      this.toolsBox = this.out.querySelector(".try-tools");
      this.calls = new Map();
    }
    reset(runId) {
      this.out.hidden = false;
      this.meta.replaceChildren("Run ", Object.assign(el("a", "mono", runId), { href: `/runs/${runId}/` }));
      this.attempts.replaceChildren();
      this.clearAnswer();
    }
    clearAnswer() {
      this.reasoning.textContent = "";
      this.reasoningBox.hidden = true;
      this.text.textContent = "";
      this.toolsBox.querySelectorAll(".call").forEach((n) => n.remove());
      this.toolsBox.hidden = true;
      this.calls.clear();
    }
    attempt(message, bad) {
      const item = el("li", bad ? "bad" : "", message);
      this.attempts.append(item);
      return item;
    }
    appendText(delta) {
      this.text.append(delta);
    }
    appendReasoning(delta) {
      this.reasoningBox.hidden = false;
      this.reasoning.append(delta);
    }
    call(key, name) {
      if (!this.calls.has(key)) {
        const line = el("div", "call");
        const args = el("span", "args");
        line.append(el("strong", "", name || "tool"), "(", args, ")");
        this.toolsBox.append(line);
        this.toolsBox.hidden = false;
        this.calls.set(key, args);
      }
      return this.calls.get(key);
    }
  }

  // One parsed SSE event → the view. OpenAI sends chat.completion.chunk objects; Anthropic named events.
  function apply(view, protocol, eventName, data) {
    if (data === "[DONE]") return;
    let payload;
    try {
      payload = JSON.parse(data);
    } catch (err) {
      throw new Error(`unparseable stream data: ${data.slice(0, 80)}`);
    }
    if (payload.error) throw new Error(payload.error.message || JSON.stringify(payload.error));
    if (protocol === "openai") {
      for (const choice of payload.choices || []) {
        const delta = choice.delta || {};
        if (delta.reasoning) view.appendReasoning(delta.reasoning);
        if (delta.content) view.appendText(delta.content);
        for (const call of delta.tool_calls || []) {
          const args = view.call(`${choice.index}:${call.index}`, call.function && call.function.name);
          if (call.function && call.function.arguments) args.append(call.function.arguments);
        }
      }
      return;
    }
    const type = payload.type || eventName;
    if (type === "content_block_start" && payload.content_block.type === "tool_use") {
      view.call(payload.index, payload.content_block.name);
    } else if (type === "content_block_delta") {
      const delta = payload.delta;
      if (delta.type === "text_delta") view.appendText(delta.text);
      else if (delta.type === "thinking_delta") view.appendReasoning(delta.thinking);
      else if (delta.type === "input_json_delta") view.call(payload.index).append(delta.partial_json);
    }
  }

  async function readStream(view, protocol, response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let eventName = "";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) eventName = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (data.length) apply(view, protocol, eventName, data.join("\n"));
      }
    }
    if (buffer.trim()) throw new Error("the stream ended in the middle of an event");
  }

  async function tryIt(box, button) {
    const protocol = box.dataset.protocol;
    const body = JSON.parse(box.querySelector("script[type='application/json']").textContent);
    const runId = uuid4();
    const headers = {
      "Content-Type": "application/json",
      "X-Harness-Scenario": box.dataset.scenario,
      "X-Harness-Run": runId,
    };
    if (protocol === "anthropic") headers["anthropic-version"] = "2023-06-01";
    const view = new View(box);
    view.reset(runId);
    button.disabled = true;
    try {
      // Retry as an SDK would, with the same run id, so simulated failures count down and the run shows them.
      for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
        view.clearAnswer();
        const started = performance.now();
        const line = view.attempt(`attempt ${attempt}: sending…`);
        let response;
        try {
          response = await fetch(box.dataset.path, { method: "POST", headers, body: JSON.stringify(body) });
        } catch (err) {
          line.textContent = `attempt ${attempt}: connection failed (${err.message})`;
          line.className = "bad";
          await sleep(500);
          continue;
        }
        if (!response.ok) {
          const text = await response.text();
          const wait = retryDelay(response);
          line.textContent = `attempt ${attempt}: HTTP ${response.status} ${text.slice(0, 160)}`;
          line.className = "bad";
          if (!RETRYABLE.has(response.status) || response.headers.get("x-should-retry") === "false") return;
          view.attempt(`waiting ${wait} ms as told`);
          await sleep(wait);
          continue;
        }
        line.textContent = `attempt ${attempt}: HTTP ${response.status}, streaming…`;
        view.text.classList.add("streaming");
        try {
          await readStream(view, protocol, response);
        } catch (err) {
          line.textContent = `attempt ${attempt}: ${err.message}`;
          line.className = "bad";
          await sleep(500);
          continue;
        } finally {
          view.text.classList.remove("streaming");
        }
        line.textContent = `attempt ${attempt}: done in ${Math.round(performance.now() - started)} ms`;
        return;
      }
      view.attempt(`gave up after ${MAX_ATTEMPTS} attempts`, true);
    } finally {
      button.disabled = false;
    }
  }

  // Textareas grow with their content (up to a limit), so a turn's text reads without inner scrolling.
  function fit(area) {
    area.style.height = "auto";
    area.style.height = `${Math.min(area.scrollHeight + 2, 420)}px`;
  }
  function fitAll(root) {
    root.querySelectorAll("#scenario-form textarea:not([name=raw])").forEach(fit);
  }
  document.addEventListener("input", (event) => {
    if (event.target.matches("#scenario-form textarea:not([name=raw])")) fit(event.target);
  });

  // A turn operation (or a tab switch) answers with the whole panel, rendered from the form as it was when the
  // button was clicked. Whatever was typed while that answer was on its way would be swapped away with it, and the
  // status line would show the answer made before the edit (the validation queued behind the operation then
  // confirms the reverted form). So when the form changed in the meantime, the answer is dropped and the same
  // operation is sent again with the form as it is now. The server is stateless: sending an operation twice is safe.
  const RESENT_PATHS = ["/editor/turns/", "/editor/panel/"];
  function formEntries(form) {
    return Array.from(new FormData(form)).filter(([name, value]) => typeof value === "string");
  }
  // Whether a request was sent with the form as it is now (its fields; what htmx adds, such as hx-vals, aside).
  function sentAsFormIs(form, requestConfig) {
    const now = formEntries(form);
    const names = new Set(now.map(([name]) => name));
    const sent = Array.from(requestConfig.formData).filter(([name]) => names.has(name));
    return JSON.stringify(sent) === JSON.stringify(now);
  }
  document.addEventListener("htmx:beforeSwap", (event) => {
    const detail = event.detail;
    const form = document.getElementById("scenario-form");
    if (!form || detail.target.id !== "editor-panel" || !detail.requestConfig) return;
    const button = detail.requestConfig.elt; // the clicked button (detail.elt is the swap's target)
    if (!RESENT_PATHS.some((path) => detail.pathInfo.requestPath.endsWith(path))) return;
    if (!button || !button.isConnected || !form.contains(button)) return;
    if (sentAsFormIs(form, detail.requestConfig)) return;
    detail.shouldSwap = false;
    // Once this request's hold on the form is released (htmx frees it right after this swap step).
    setTimeout(() => {
      if (!button.isConnected) return;
      button.dataset.resend = "true"; // asked and confirmed already: no second "Remove turn?"
      button.click();
    }, 0);
  });
  document.addEventListener("htmx:confirm", (event) => {
    const button = event.detail.elt;
    if (!button || !button.dataset || !button.dataset.resend) return;
    delete button.dataset.resend;
    event.preventDefault();
    event.detail.issueRequest(true);
  });

  // A panel swap replaces every field while the author may be in the middle of typing into one. htmx gives the
  // focus back to the field with the same id, but its selection only when it starts past the first character: an
  // author who had selected a whole value to type over it (a double click, Ctrl+A, a test's fill) when a turn
  // operation's answer arrived typed in front of the old text instead ("burst-fixedbad id", a problem nobody typed).
  // So the focus and the selection go back exactly, to the field that holds the same value: the same id, or the one
  // field of the same kind that holds it now when a move renumbered the cards.
  let selection = null;
  const turnPrefix = /^turns-\d+-/;
  document.addEventListener("htmx:beforeSwap", (event) => {
    selection = null;
    const active = document.activeElement;
    if (event.detail.target.id !== "editor-panel" || !event.detail.shouldSwap) return;
    if (!active || !active.id || !active.name || !event.detail.target.contains(active)) return;
    if (typeof active.selectionStart !== "number") return; // selects, checkboxes: nothing to keep
    selection = {
      id: active.id,
      kind: active.name.replace(turnPrefix, ""),
      value: active.value,
      start: active.selectionStart,
      end: active.selectionEnd,
      direction: active.selectionDirection || "none",
    };
  });
  document.addEventListener("htmx:afterSwap", () => {
    const kept = selection;
    const panel = document.getElementById("editor-panel");
    selection = null;
    if (!kept || !panel) return;
    let field = document.getElementById(kept.id);
    if (!field || field.value !== kept.value) {
      const holders = Array.from(panel.querySelectorAll("input[name], textarea[name]")).filter(
        (f) => f.name.replace(turnPrefix, "") === kept.kind && f.value === kept.value,
      );
      field = holders.length === 1 ? holders[0] : null;
    }
    if (!field || typeof field.setSelectionRange !== "function") return;
    field.focus({ preventScroll: true });
    field.setSelectionRange(kept.start, kept.end, kept.direction);
  });

  // A turn edit re-renders the whole form: keep the sections the author had opened (or closed) as they were.
  let openSections = null;
  document.addEventListener("htmx:beforeSwap", (event) => {
    if (event.detail.target.id !== "editor-panel") return;
    openSections = new Map();
    event.detail.target.querySelectorAll("details[data-key]").forEach((d) => openSections.set(d.dataset.key, d.open));
  });
  document.addEventListener("htmx:afterSettle", () => {
    const panel = document.getElementById("editor-panel");
    if (!panel || !openSections) return;
    // Only ever reopen: a section the server opens (it holds values) stays open.
    panel.querySelectorAll("details[data-key]").forEach((d) => {
      if (openSections.get(d.dataset.key)) d.open = true;
    });
    openSections = null;
    fitAll(panel);
  });
  document.addEventListener("DOMContentLoaded", () => fitAll(document));

  // Unsaved work. The page asks before it is left with changes nobody saved: changed as soon as the author types or
  // edits a turn (the validation answers 400 ms later), unchanged again when the editor's own validation says the
  // form holds the stored scenario (the status line's data-unsaved) or once a save succeeded. Ctrl+S (⌘S on a Mac)
  // saves instead of opening the browser's dialog; Save itself is rendered disabled while the validation finds
  // problems (save_button.html), so neither a click nor Enter submits an invalid form.
  const VALIDATION_DELAY_MS = 500; // the form's hx-trigger waits 400 ms after the last keystroke
  const EDITOR_PATHS = ["/editor/validate/", "/editor/panel/", "/editor/turns/", "/editor/save/"];
  let dirty = false;
  let saved = false; // a save succeeded: the page is on its way to the saved scenario
  let answerFitsForm = null; // the last editor answer was made from the form as it still is
  let saveWhenValidUntil = 0; // Ctrl+S pressed right after typing: Save waits for that typing's validation
  let typedAt = -Infinity;
  const editorPath = (detail) =>
    detail.pathInfo && EDITOR_PATHS.some((path) => detail.pathInfo.requestPath.endsWith(path));
  // Typing, a select or a checkbox (all fire input; change also fires when a field merely loses the focus).
  document.addEventListener("input", (event) => {
    const form = document.getElementById("scenario-form");
    if (!form || !(event.target instanceof Node) || !form.contains(event.target)) return;
    dirty = true;
    typedAt = performance.now();
  });
  document.addEventListener("htmx:beforeRequest", (event) => {
    if (editorPath(event.detail) && event.detail.pathInfo.requestPath.endsWith("/editor/turns/")) dirty = true;
  });
  document.addEventListener("htmx:beforeSwap", (event) => {
    const detail = event.detail;
    const form = document.getElementById("scenario-form");
    if (!form || !editorPath(detail) || !detail.requestConfig || !detail.requestConfig.formData) return;
    answerFitsForm = sentAsFormIs(form, detail.requestConfig);
  });
  document.addEventListener("htmx:beforeOnLoad", (event) => {
    // Before htmx follows the saved scenario's HX-Redirect: that navigation loses nothing.
    const xhr = event.detail.xhr;
    if (editorPath(event.detail) && event.detail.pathInfo.requestPath.endsWith("/editor/save/")) {
      if (xhr && xhr.status === 200 && xhr.getResponseHeader("HX-Redirect")) {
        saved = true;
        dirty = false;
      }
    }
  });
  document.addEventListener("htmx:afterRequest", (event) => {
    if (!editorPath(event.detail) || saved) return;
    const status = document.getElementById("validation");
    if (answerFitsForm && status) dirty = status.dataset.unsaved !== "false";
    answerFitsForm = null;
    const button = document.getElementById("save-button");
    const waiting = performance.now() < saveWhenValidUntil;
    saveWhenValidUntil = 0;
    if (waiting && button && !button.disabled && event.detail.pathInfo.requestPath.endsWith("/editor/validate/")) {
      button.click();
    }
  });
  document.addEventListener("submit", (event) => {
    if (event.target.id === "scenario-form" && !event.defaultPrevented) saved = true; // a save without htmx
  });
  window.addEventListener("beforeunload", (event) => {
    if (!dirty || saved || !document.getElementById("scenario-form")) return;
    event.preventDefault();
    event.returnValue = ""; // older browsers ask only when a value is set
  });
  document.addEventListener("keydown", (event) => {
    if (!(event.ctrlKey || event.metaKey) || event.altKey || event.shiftKey) return;
    if (event.key.toLowerCase() !== "s") return;
    const button = document.getElementById("save-button");
    if (!button) return; // not the editor: the browser's own Save
    event.preventDefault();
    if (!button.disabled) {
      button.click();
    } else if (performance.now() - typedAt < VALIDATION_DELAY_MS) {
      // The author may have just fixed the last problem: save if the validation on its way finds none.
      saveWhenValidUntil = performance.now() + 2000;
    }
  });

  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-try-it]");
    if (!button) return;
    const box = button.closest("[data-try]");
    if (box) tryIt(box, button);
  });
})();
