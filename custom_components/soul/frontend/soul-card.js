// The Lovelace card "Soul emotion" (type: custom:soul-emotion-card) and its editor.
//
// Soul loads this module on every dashboard (frontend.add_extra_js_url, see
// panel.py): no second HACS repository. The card shows one soul's emotion
// form, mood and willingness to act, live; without ``soul_id`` the first
// soul the user sees. Options: soul_id, name (a title), show_gauge.
//
// When the elements are defined matters. Home Assistant's app, as it starts,
// replaces ``window.customElements`` with a scoped-registry polyfill: an
// element defined before that is in the browser's registry, which Lovelace
// never asks, so the card stays "Configuration error" until a reload (this
// module, loaded beside the app, can run first: a busy machine, a slow app).
// So the elements are defined once Home Assistant's own root element is, in
// the registry of that moment. Until then Lovelace shows its error card
// hidden and rebuilds the card when it is defined.
//
// The card's parts (soul-common.js, emotion-form.js, shared with the panel)
// come through ``import()``, after that: a part that stalls or fails is asked
// for again under a fresh URL (a failed module stays failed at its URL) while
// the card shows an empty, busy frame.

const CARD = "soul-emotion-card";
const EDITOR = "soul-emotion-card-editor";
const PARTS = ["./soul-common.js", "./emotion-form.js"];
// A try that has not finished after STALL_MS × 2^n gets a fresh one beside it.
const STALL_MS = 4000;
const RETRY_MS = 1000;
const TRIES = 6;

let partsPromise = null;
let common = null; // soul-common.js's exports, once loaded

/** The URL of ``part`` for try ``n`` (the first one is the panel's URL). */
function partUrl(part, n) {
  const url = new URL(part, import.meta.url);
  if (n) url.searchParams.set("try", String(n));
  return url.href;
}

/** Resolve with soul-common.js's exports once every part has loaded. */
function loadParts() {
  partsPromise ??= new Promise((resolve, reject) => {
    let started = 0;
    let failed = 0;
    let settled = false;
    const start = () => {
      if (settled || started >= TRIES) return;
      const n = started++;
      let followed = false;
      const follow = (delay) => {
        if (followed) return;
        followed = true;
        setTimeout(start, delay);
      };
      Promise.all(PARTS.map((part) => import(partUrl(part, n)))).then(
        ([exports]) => {
          if (settled) return;
          settled = true;
          common = exports;
          resolve(exports);
        },
        (err) => {
          failed += 1;
          if (!settled && failed >= TRIES) {
            settled = true;
            reject(err);
          }
          follow(RETRY_MS);
        },
      );
      setTimeout(() => {
        // The last try stalled too: say so rather than stay busy for ever.
        if (!settled && n === TRIES - 1) {
          settled = true;
          reject(new Error("the card's parts did not load"));
        }
        follow(0);
      }, STALL_MS * 2 ** n);
    };
    start();
  });
  return partsPromise;
}

const STYLE = () => `${common.BASE_CSS}
  :host { display: block; }
  .wrap { display: flex; gap: 16px; align-items: center; padding: 16px; }
  .wrap.narrow { flex-direction: column; text-align: center; }
  .facts { flex: 1; min-width: 0; display: flex; flex-direction: column; gap: 10px; width: 100%; }
  h2 { margin: 0; font-size: 1.25em; font-weight: 500; }
  .mood { font-size: 1.4em; text-transform: capitalize; }
  .row { display: flex; justify-content: space-between; gap: 8px; margin-bottom: 4px; flex-wrap: wrap; font-size: 0.9em; }
  .empty { padding: 16px; color: var(--secondary-text-color); }
`;
// The frame, drawn before the parts are there too.
const FRAME_CSS = `
  :host { display: block; }
  .fallback { background: var(--ha-card-background, var(--card-background-color, #fff)); border-radius: var(--ha-card-border-radius, 12px);
    border: var(--ha-card-border-width, 1px) solid var(--ha-card-border-color, var(--divider-color, #e0e0e0)); display: block; }
  .content[aria-busy="true"] { min-height: 120px; }
  .failed { padding: 16px; color: var(--error-color, #db4437); }
`;

class SoulEmotionCard extends HTMLElement {
  constructor() {
    super();
    this.attachShadow({ mode: "open" });
    this._config = {};
    this._soul = null;
    this._souls = [];
    this._stop = null;
    this._failed = null;
  }

  static getConfigElement() {
    return document.createElement(EDITOR);
  }

  static getStubConfig() {
    return { soul_id: "" };
  }

  setConfig(config) {
    if (!config || typeof config !== "object") throw new Error("Invalid configuration");
    this._config = { show_gauge: true, ...config };
    this._render();
  }

  set hass(hass) {
    const first = !this._hass;
    this._hass = hass;
    if (first && this.isConnected) this._watch();
  }

  connectedCallback() {
    if (!common) {
      loadParts().then(
        () => {
          if (this.isConnected && this._hass && !this._stop) this._watch();
          this._render();
        },
        (err) => {
          this._failed = err;
          this._render();
          console.error("soul-emotion-card: its parts did not load", err);
        },
      );
    }
    if (this._hass && !this._stop) this._watch();
    this._render();
  }

  disconnectedCallback() {
    if (this._stop) this._stop();
    this._stop = null;
  }

  getCardSize() {
    return 3;
  }

  getGridOptions() {
    return { columns: 12, rows: 3, min_columns: 6, min_rows: 3 };
  }

  _watch() {
    if (!common || this._stop) return; // loadParts() watches once the parts are there
    this._stop = common.watchSouls(this._hass, (souls, error) => {
      this._souls = souls;
      this._error = error;
      this._render();
    });
  }

  /** The card's frame; ``ready``: with the parts' style. */
  _frame(ready) {
    const root = this.shadowRoot;
    const state = ready ? "ready" : "frame";
    if (root.firstElementChild?.dataset.state !== state) {
      const Card = customElements.get("ha-card") ? "ha-card" : "div";
      const style = ready ? `${FRAME_CSS}${STYLE()}` : FRAME_CSS;
      root.innerHTML = `<style data-state="${state}">${style}</style><${Card} class="${Card === "div" ? "fallback" : ""}"><div class="content"></div></${Card}>`;
    }
    return root.querySelector(".content");
  }

  _render() {
    if (!common) {
      const content = this._frame(false);
      if (this._failed) {
        content.removeAttribute("aria-busy");
        content.innerHTML = `<div class="failed" role="alert">Soul: the card did not load. Reload the page.</div>`;
      } else content.setAttribute("aria-busy", "true");
      return;
    }
    const { esc, gaugeHtml, num, t } = common;
    const content = this._frame(true);
    const hass = this._hass;
    const wanted = this._config.soul_id;
    const soul = this._souls.find((s) => s.soul_id === wanted) || (!wanted ? this._souls[0] : null);
    if (!hass) return;
    if (!soul) {
      const text = this._error ? this._error.message || t(hass, "not_ready") : this._souls.length || wanted ? t(hass, "no_souls") : t(hass, "loading");
      content.innerHTML = `<div class="empty" role="status">${esc(text)}</div>`;
      return;
    }
    const e = soul.emotion;
    const mood = e ? t(hass, `mood.${e.mood}`) : "–";
    if (!content.querySelector("soul-emotion-form") || content.dataset.soul !== soul.soul_id) {
      content.dataset.soul = soul.soul_id;
      content.innerHTML = `<div class="wrap"><soul-emotion-form></soul-emotion-form>
        <div class="facts"><h2></h2><div><div class="muted">${esc(t(hass, "mood"))}</div><div class="mood" aria-live="polite"></div>
        <div class="muted pad"></div></div><div class="gauge-slot"></div></div></div>`;
    }
    const width = this.getBoundingClientRect().width;
    content.querySelector(".wrap").classList.toggle("narrow", width > 0 && width < 300);
    content.querySelector("h2").textContent = this._config.name || soul.name;
    const form = content.querySelector("soul-emotion-form");
    form.label = e ? `${t(hass, "feels", { name: soul.name, mood })}; ${t(hass, "pad", { p: num(e.p), a: num(e.a), d: num(e.d) })}` : soul.name;
    form.emotion = e;
    content.querySelector(".mood").textContent = mood;
    content.querySelector(".pad").textContent = e ? t(hass, "pad", { p: num(e.p), a: num(e.a), d: num(e.d) }) : "";
    content.querySelector(".gauge-slot").innerHTML = this._config.show_gauge === false ? "" : gaugeHtml(hass, e);
  }
}

class SoulEmotionCardEditor extends HTMLElement {
  constructor() {
    super();
    this.attachShadow({ mode: "open" });
    this._config = {};
    this._souls = [];
  }

  setConfig(config) {
    this._config = { ...config };
    this._render();
  }

  set hass(hass) {
    const first = !this._hass;
    this._hass = hass;
    if (first) {
      loadParts().then(
        () => this._watch(),
        () => {
          this.shadowRoot.innerHTML = `<div role="alert">Soul: the editor did not load. Reload the page.</div>`;
        },
      );
    }
  }

  connectedCallback() {
    if (common) this._watch();
  }

  _watch() {
    // Not while closed: a subscription made then would never end.
    if (this._stop || !this._hass || !this.isConnected) return;
    this._stop = common.watchSouls(this._hass, (souls) => {
      this._souls = souls;
      this._render();
    });
    this._render();
  }

  disconnectedCallback() {
    if (this._stop) this._stop();
    this._stop = null;
  }

  _changed(patch) {
    this._config = { ...this._config, ...patch };
    for (const [key, value] of Object.entries(patch)) if (value === "" || value === undefined) delete this._config[key];
    this.dispatchEvent(new CustomEvent("config-changed", { detail: { config: this._config }, bubbles: true, composed: true }));
  }

  _render() {
    const hass = this._hass;
    if (!hass || !common) return;
    const { BASE_CSS, esc, t } = common;
    const c = this._config;
    const focused = this.shadowRoot.activeElement?.id;
    this.shadowRoot.innerHTML = `<style>${BASE_CSS}
        .form { display: flex; flex-direction: column; gap: 12px; padding: 8px 0; }
        label { display: flex; flex-direction: column; gap: 4px; font-size: 0.9em; color: var(--secondary-text-color); }
        label.check { flex-direction: row; align-items: center; gap: 8px; color: var(--primary-text-color); }
        select, input[type=text] { background: var(--input-fill-color, var(--secondary-background-color)); border: 1px solid var(--divider-color);
          border-radius: 8px; padding: 8px; color: var(--primary-text-color); }</style>
      <div class="form">
        <label>${esc(t(hass, "card_soul"))}<select id="soul"><option value="">–</option>
          ${this._souls.map((s) => `<option value="${esc(s.soul_id)}" ${s.soul_id === c.soul_id ? "selected" : ""}>${esc(s.name)}</option>`).join("")}</select></label>
        <label>${esc(t(hass, "card_name"))}<input id="name" type="text" maxlength="64" value="${esc(c.name || "")}"></label>
        <label class="check"><input id="gauge" type="checkbox" ${c.show_gauge === false ? "" : "checked"}>${esc(t(hass, "card_gauge"))}</label>
      </div>`;
    const root = this.shadowRoot;
    root.getElementById("soul").addEventListener("change", (ev) => this._changed({ soul_id: ev.target.value }));
    root.getElementById("name").addEventListener("change", (ev) => this._changed({ name: ev.target.value.trim() }));
    root.getElementById("gauge").addEventListener("change", (ev) => this._changed({ show_gauge: ev.target.checked }));
    if (focused) root.getElementById(focused)?.focus();
  }
}

// ``customElements`` is looked up at each call: the registry of that moment.
function define() {
  if (!customElements.get(CARD)) customElements.define(CARD, SoulEmotionCard);
  if (!customElements.get(EDITOR)) customElements.define(EDITOR, SoulEmotionCardEditor);
}

if (customElements.get("home-assistant")) define();
else customElements.whenDefined("home-assistant").then(define);

window.customCards = window.customCards || [];
if (!window.customCards.some((card) => card.type === CARD)) {
  window.customCards.push({
    type: CARD,
    name: "Soul emotion",
    description: "A soul's emotion as a living form, its mood and its willingness to act.",
    preview: true,
    documentationURL: "https://github.com/soul-ha/soul/blob/main/docs/panel.md",
  });
}
