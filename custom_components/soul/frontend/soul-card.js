// The Lovelace card "Soul emotion" (type: custom:soul-emotion-card) and its editor.
//
// Soul loads this module on every dashboard (frontend.add_extra_js_url, see
// panel.py): no second HACS repository. The card shows one soul's emotion
// form, mood and willingness to act, live; without ``soul_id`` the first
// soul the user sees. Options: soul_id, name (a title), show_gauge.

import "./emotion-form.js";
import { BASE_CSS, esc, gaugeHtml, num, t, watchSouls } from "./soul-common.js";

const CARD = "soul-emotion-card";
const EDITOR = "soul-emotion-card-editor";

const STYLE = `${BASE_CSS}
  :host { display: block; }
  .wrap { display: flex; gap: 16px; align-items: center; padding: 16px; }
  .wrap.narrow { flex-direction: column; text-align: center; }
  .facts { flex: 1; min-width: 0; display: flex; flex-direction: column; gap: 10px; width: 100%; }
  h2 { margin: 0; font-size: 1.25em; font-weight: 500; }
  .mood { font-size: 1.4em; text-transform: capitalize; }
  .row { display: flex; justify-content: space-between; gap: 8px; margin-bottom: 4px; flex-wrap: wrap; font-size: 0.9em; }
  .fallback { background: var(--ha-card-background, var(--card-background-color, #fff)); border-radius: var(--ha-card-border-radius, 12px);
    border: var(--ha-card-border-width, 1px) solid var(--ha-card-border-color, var(--divider-color, #e0e0e0)); display: block; }
  .empty { padding: 16px; color: var(--secondary-text-color); }
`;

class SoulEmotionCard extends HTMLElement {
  constructor() {
    super();
    this.attachShadow({ mode: "open" });
    this._config = {};
    this._soul = null;
    this._souls = [];
    this._stop = null;
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
    this._stop = watchSouls(this._hass, (souls, error) => {
      this._souls = souls;
      this._error = error;
      this._render();
    });
  }

  _render() {
    const root = this.shadowRoot;
    const hass = this._hass;
    const wanted = this._config.soul_id;
    const soul = this._souls.find((s) => s.soul_id === wanted) || (!wanted ? this._souls[0] : null);
    if (!root.querySelector("style")) {
      const Card = customElements.get("ha-card") ? "ha-card" : "div";
      root.innerHTML = `<style>${STYLE}</style><${Card} class="${Card === "div" ? "fallback" : ""}"><div class="content"></div></${Card}>`;
    }
    const content = root.querySelector(".content");
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
      this._stop = watchSouls(hass, (souls) => {
        this._souls = souls;
        this._render();
      });
    }
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
    if (!hass) return;
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

if (!customElements.get(CARD)) customElements.define(CARD, SoulEmotionCard);
if (!customElements.get(EDITOR)) customElements.define(EDITOR, SoulEmotionCardEditor);

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
