// <soul-panel>: the sidebar panel "Soul" (docs/panel.md). Plain ES module, no build.
//
// Souls (each soul's emotion drawn, live), History (PAD over the last hour or
// day from the event journal, user turns marked), Timeline (the journal live,
// grouped by trace), Bodies (skills, catalog, decisions, invocations) and
// Talk (a chat box). Everything comes through hass.connection: Soul's
// WebSocket commands, scoped to the signed-in user; nothing polls.

import "./emotion-form.js";
import { BASE_CSS, RESUBSCRIBE_MS, esc, gaugeHtml, jsonText, num, t, watchSouls, when } from "./soul-common.js";

const TABS = ["souls", "history", "timeline", "bodies", "talk"];
const EVENT_TYPES = ["user_input", "psyche_update", "driver_response", "navigator_suggestion", "system_notification"];
const MAX_EVENTS = 500;
const MAX_GROUPS = 60;
const RANGES = { hour: 3600, day: 86400 };
const LINES = [
  ["p", "pleasure", "#e0a000"],
  ["a", "arousal", "#d0467a"],
  ["d", "dominance", "#3f8fd2"],
];

const STYLE = `${BASE_CSS}
  :host { display: block; min-height: 100vh; background: var(--primary-background-color); }
  header { position: sticky; top: 0; z-index: 2; display: flex; align-items: center; gap: 8px;
    height: var(--header-height, 56px); padding: 0 12px; box-sizing: border-box;
    background: var(--app-header-background-color, var(--primary-color));
    color: var(--app-header-text-color, var(--text-primary-color, #fff));
    border-bottom: var(--app-header-border-bottom, none); }
  header h1 { margin: 0 0 0 8px; font-size: 20px; font-weight: 400; flex: 1; }
  .menu { display: none; background: none; border: 0; color: inherit; width: 40px; height: 40px; border-radius: 50%; cursor: pointer; }
  :host([narrow]) .menu { display: inline-flex; align-items: center; justify-content: center; }
  .menu svg { width: 24px; height: 24px; fill: currentColor; }
  [role=tablist] { display: flex; gap: 4px; overflow-x: auto; padding: 0 8px;
    background: var(--app-header-background-color, var(--primary-color)); position: sticky; top: var(--header-height, 56px); z-index: 2; }
  [role=tab] { background: none; border: 0; border-bottom: 2px solid transparent; padding: 12px 14px; cursor: pointer;
    color: var(--app-header-text-color, var(--text-primary-color, #fff)); opacity: 0.75; white-space: nowrap; }
  [role=tab][aria-selected=true] { opacity: 1; border-bottom-color: currentColor; }
  main { padding: 16px; max-width: 1200px; margin: 0 auto; box-sizing: border-box; }
  :host([narrow]) main { padding: 8px; }
  .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(320px, 1fr)); gap: 16px; }
  :host([narrow]) .grid { grid-template-columns: 1fr; gap: 8px; }
  .card { background: var(--ha-card-background, var(--card-background-color, #fff)); border-radius: var(--ha-card-border-radius, 12px);
    border: var(--ha-card-border-width, 1px) solid var(--ha-card-border-color, var(--divider-color, #e0e0e0));
    box-shadow: var(--ha-card-box-shadow, none); padding: 16px; box-sizing: border-box; min-width: 0; }
  .card h2 { margin: 0; font-size: 1.2em; font-weight: 500; }
  .soul-head { display: flex; align-items: baseline; justify-content: space-between; gap: 8px; }
  .soul-main { display: flex; gap: 16px; align-items: center; margin: 8px 0; }
  :host([narrow]) .soul-main { --soul-form-size: 120px; }
  .mood { font-size: 1.35em; text-transform: capitalize; }
  .row { display: flex; justify-content: space-between; gap: 8px; margin-bottom: 4px; flex-wrap: wrap; }
  .facts { flex: 1; min-width: 0; display: flex; flex-direction: column; gap: 8px; }
  .label { font-size: 0.8em; color: var(--secondary-text-color); text-transform: uppercase; letter-spacing: 0.04em; }
  .chips { display: flex; flex-wrap: wrap; gap: 6px; }
  .filters { display: flex; gap: 12px; flex-wrap: wrap; margin-bottom: 12px; align-items: end; }
  .field { display: flex; flex-direction: column; gap: 4px; }
  .field label { font-size: 0.85em; color: var(--secondary-text-color); }
  select, input, textarea { background: var(--input-fill-color, var(--secondary-background-color)); border: 1px solid var(--divider-color);
    border-radius: 8px; padding: 8px; color: var(--primary-text-color); min-width: 140px; }
  ul.timeline { list-style: none; margin: 0; padding: 0; display: flex; flex-direction: column; gap: 12px; }
  .trace-head { display: flex; justify-content: space-between; gap: 8px; flex-wrap: wrap; margin-bottom: 8px; }
  .event { display: grid; grid-template-columns: 110px 1fr; gap: 8px; padding: 4px 0; border-top: 1px solid var(--divider-color); }
  :host([narrow]) .event { grid-template-columns: 1fr; gap: 2px; }
  .event > *, .grid > *, .soul-head > * { min-width: 0; }
  .event .kind { font-size: 0.8em; color: var(--secondary-text-color); }
  .inner { font-style: italic; color: var(--secondary-text-color); }
  .btn { background: var(--primary-color); color: var(--text-primary-color, #fff); border: 0; border-radius: 18px;
    padding: 8px 16px; cursor: pointer; }
  .btn.flat { background: none; color: var(--primary-color); padding: 4px 8px; }
  .btn[disabled] { opacity: 0.5; cursor: default; }
  svg.chart { width: 100%; height: auto; display: block; }
  .legend { display: flex; gap: 12px; flex-wrap: wrap; font-size: 0.85em; }
  .legend i { display: inline-block; width: 14px; height: 3px; vertical-align: middle; margin-right: 4px; }
  table { border-collapse: collapse; width: 100%; font-size: 0.9em; }
  th, td { text-align: left; padding: 4px 6px; border-bottom: 1px solid var(--divider-color); }
  .log { display: flex; flex-direction: column; gap: 8px; min-height: 200px; max-height: 55vh; overflow-y: auto; padding: 8px 0; }
  .bubble { max-width: 80%; padding: 8px 12px; border-radius: 14px; white-space: pre-wrap; overflow-wrap: anywhere; }
  .bubble.user { align-self: flex-end; background: var(--primary-color); color: var(--text-primary-color, #fff); }
  .bubble.soul { align-self: flex-start; background: var(--secondary-background-color); }
  .bubble.error { align-self: center; color: var(--error-color, #db4437); background: none; }
  .compose { display: flex; gap: 8px; align-items: end; }
  .compose textarea { flex: 1; resize: vertical; min-height: 42px; }
  dialog { border: 0; border-radius: var(--ha-dialog-border-radius, 16px); padding: 16px; max-width: min(760px, 96vw);
    width: 96vw; background: var(--card-background-color, #fff); color: var(--primary-text-color); }
  dialog::backdrop { background: rgba(0, 0, 0, 0.45); }
  pre { white-space: pre-wrap; overflow-wrap: anywhere; font-size: 0.8em; background: var(--secondary-background-color); padding: 8px; border-radius: 8px; }
  .sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
  .empty { padding: 24px; text-align: center; color: var(--secondary-text-color); }
`;

const MENU_ICON = '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M3,6H21V8H3V6M3,11H21V13H3V11M3,16H21V18H3V16Z"/></svg>';

class SoulPanel extends HTMLElement {
  constructor() {
    super();
    this.attachShadow({ mode: "open" });
    this._tab = "souls";
    this._souls = [];
    this._soulsError = null;
    this._events = new Map();
    this._filters = { soul: "", body: "", type: "" };
    this._history = { soul: "", range: "hour", points: [], turns: [], loading: false };
    this._bodies = null;
    this._talk = { soul: "", body: "", messages: [], busy: false };
    this._stops = [];
    this._language = null;
  }

  set hass(hass) {
    const first = !this._hass;
    this._hass = hass;
    if (first) {
      this._build();
      this._start();
    } else if (this._languageKey() !== this._language) {
      this._build();
    }
  }

  get hass() {
    return this._hass;
  }

  set narrow(value) {
    this.toggleAttribute("narrow", Boolean(value));
  }

  set route(route) {
    const tab = (route?.path || "").replace(/^\//, "").split("/")[0];
    if (TABS.includes(tab) && tab !== this._tab && this._hass) this._select(tab, false);
    else if (TABS.includes(tab)) this._tab = tab;
  }

  set panel(_panel) {}

  connectedCallback() {
    if (this._hass && !this._stops.length) this._start();
  }

  disconnectedCallback() {
    this._stops.forEach((stop) => stop());
    this._stops = [];
  }

  _languageKey() {
    return `${this._hass.locale?.language || this._hass.language}`;
  }

  _t(key, values) {
    return t(this._hass, key, values);
  }

  // -- structure -----------------------------------------------------------

  _build() {
    this._language = this._languageKey();
    const tabs = TABS.map(
      (tab) => `<button role="tab" id="tab-${tab}" data-tab="${tab}" aria-controls="section-${tab}"
        aria-selected="${tab === this._tab}" tabindex="${tab === this._tab ? 0 : -1}">${esc(this._t(`tab_${tab}`))}</button>`,
    ).join("");
    const sections = TABS.map(
      (tab) => `<section role="tabpanel" id="section-${tab}" aria-labelledby="tab-${tab}" ${tab === this._tab ? "" : "hidden"}></section>`,
    ).join("");
    this.shadowRoot.innerHTML = `<style>${STYLE}</style>
      <header><button class="menu" aria-label="${esc(this._t("menu"))}">${MENU_ICON}</button>
        <h1>${esc(this._t("title"))}</h1></header>
      <nav role="tablist" aria-label="${esc(this._t("tabs"))}">${tabs}</nav>
      <main>${sections}</main>
      <dialog id="trace" aria-labelledby="trace-title"></dialog>`;
    const root = this.shadowRoot;
    root.querySelector(".menu").addEventListener("click", () =>
      this.dispatchEvent(new CustomEvent("hass-toggle-menu", { bubbles: true, composed: true })),
    );
    const tablist = root.querySelector("[role=tablist]");
    tablist.addEventListener("click", (ev) => {
      const tab = ev.target.closest("[role=tab]");
      if (tab) this._select(tab.dataset.tab, true);
    });
    tablist.addEventListener("keydown", (ev) => {
      const index = TABS.indexOf(this._tab);
      const moves = { ArrowRight: 1, ArrowLeft: -1, Home: -index, End: TABS.length - 1 - index };
      if (!(ev.key in moves)) return;
      ev.preventDefault();
      const next = TABS[(index + moves[ev.key] + TABS.length) % TABS.length];
      this._select(next, true);
      root.getElementById(`tab-${next}`).focus();
    });
    this._renderSection();
  }

  _select(tab, navigate) {
    this._tab = tab;
    const root = this.shadowRoot;
    for (const button of root.querySelectorAll("[role=tab]")) {
      const selected = button.dataset.tab === tab;
      button.setAttribute("aria-selected", String(selected));
      button.tabIndex = selected ? 0 : -1;
    }
    for (const section of root.querySelectorAll("[role=tabpanel]")) {
      section.hidden = section.id !== `section-${tab}`;
    }
    if (navigate) {
      history.replaceState(history.state, "", `/${this.panel?.url_path || "soul"}/${tab}`);
    }
    if (tab === "bodies") this._loadBodies();
    if (tab === "history") this._loadHistory();
    this._renderSection();
  }

  _section(tab) {
    return this.shadowRoot.getElementById(`section-${tab}`);
  }

  _renderSection() {
    ({
      souls: () => this._renderSouls(),
      history: () => this._renderHistory(),
      timeline: () => this._renderTimeline(),
      bodies: () => this._renderBodies(),
      talk: () => this._renderTalk(),
    })[this._tab]();
  }

  // -- data ------------------------------------------------------------------

  _start() {
    this._stops.push(
      watchSouls(this._hass, (souls, error, changed) => {
        this._souls = souls;
        this._soulsError = error;
        if (changed && this._tab === "souls") this._updateSoul(changed);
        else if (this._tab === "souls") this._renderSouls();
        if (changed) this._historyPoint(changed);
        if (this._tab === "talk" || this._tab === "history" || this._tab === "timeline") this._renderSelectors();
        if (this._tab === "bodies" && !changed) this._loadBodies();
      }),
    );
    const connection = this._hass.connection;
    connection
      .sendMessagePromise({ type: "soul/events/list", limit: 200 })
      .then((page) => {
        for (const event of page.events) this._events.set(event.id ?? `${event.trace_id}-${event.type}-${event.meta?.timestamp}`, event);
        if (this._tab === "timeline") this._renderTimeline();
      })
      .catch(() => {});
    let subscribed = null;
    let stopped = false;
    let tries = 0;
    const subscribe = () => {
      if (stopped) return;
      subscribed = connection
        .subscribeMessage(
          (message) => {
            if (message.ended) {
              // Soul was reloaded: stream from its new runtime.
              subscribed.then((unsub) => unsub && unsub()).catch(() => {});
              setTimeout(subscribe, RESUBSCRIBE_MS);
              return;
            }
            this._onEvent(message.event);
          },
          { type: "soul/events/subscribe" },
        )
        .then((unsub) => {
          tries = 0;
          return unsub;
        })
        .catch((err) => {
          if (err && err.code === "not_ready" && tries++ < 15) setTimeout(subscribe, RESUBSCRIBE_MS);
          return null;
        });
    };
    subscribe();
    this._stops.push(() => {
      stopped = true;
      if (subscribed) subscribed.then((unsub) => unsub && unsub()).catch(() => {});
    });
  }

  _onEvent(event) {
    if (!event) return;
    const key = event.id ?? `live-${event.trace_id}-${event.type}-${event.meta?.timestamp}`;
    this._events.set(key, event);
    if (this._events.size > MAX_EVENTS) this._events.delete(this._events.keys().next().value);
    if (this._tab === "timeline") this._renderTimeline();
    if (event.type === "user_input" && event.soul_id === this._history.soul) {
      this._history.turns.push({ t: event.meta?.timestamp, text: event.payload?.content });
      if (this._tab === "history") this._renderChart();
    }
    if (this._tab === "bodies") {
      clearTimeout(this._bodiesTimer);
      this._bodiesTimer = setTimeout(() => this._loadBodies(), 800);
    }
    const trace = this.shadowRoot.getElementById("trace");
    if (trace?.open && trace.dataset.trace === event.trace_id) this._openTrace(event.trace_id);
  }

  _soulName(soulId) {
    return this._souls.find((s) => s.soul_id === soulId)?.name || soulId || "–";
  }

  // -- Souls -----------------------------------------------------------------

  _formLabel(soul) {
    const e = soul.emotion;
    if (!e) return soul.name;
    return `${this._t("feels", { name: soul.name, mood: this._t(`mood.${e.mood}`) })}; ${this._t("pad", { p: num(e.p), a: num(e.a), d: num(e.d) })}`;
  }

  _renderSouls() {
    const section = this._section("souls");
    if (!section) return;
    if (this._soulsError) {
      section.innerHTML = `<div class="empty" role="status">${esc(this._soulsError.code === "not_ready" ? this._t("not_ready") : this._soulsError.message || this._t("error"))}</div>`;
      return;
    }
    if (!this._souls.length) {
      section.innerHTML = `<div class="empty" role="status">${esc(this._t("no_souls"))}</div>`;
      return;
    }
    section.innerHTML = `<div class="grid" role="list">${this._souls
      .map((soul) => `<article class="card soul" role="listitem" data-soul="${esc(soul.soul_id)}" aria-labelledby="name-${esc(soul.soul_id)}"></article>`)
      .join("")}</div>`;
    for (const soul of this._souls) this._updateSoul(soul);
  }

  _updateSoul(soul) {
    const card = this._section("souls")?.querySelector(`[data-soul="${CSS.escape(soul.soul_id)}"]`);
    if (!card) return this._renderSouls();
    const e = soul.emotion;
    if (!card.querySelector("soul-emotion-form")) {
      card.innerHTML = `<div class="soul-head"><h2 id="name-${esc(soul.soul_id)}"></h2><span class="muted mbti"></span></div>
        <div class="soul-main"><soul-emotion-form></soul-emotion-form>
          <div class="facts"><div><div class="label">${esc(this._t("mood"))}</div><div class="mood" aria-live="polite"></div>
          <div class="muted pad"></div></div><div class="gauge-slot"></div></div></div>
        <div class="label">${esc(this._t("bodies"))}</div><div class="chips bodies"></div>
        <div class="label" style="margin-top:8px">${esc(this._t("user_emotion"))}</div><div class="user-emotion"></div>`;
    }
    card.querySelector("h2").textContent = soul.name;
    card.querySelector(".mbti").textContent = soul.mbti_type;
    const form = card.querySelector("soul-emotion-form");
    form.label = this._formLabel(soul);
    form.emotion = e;
    card.querySelector(".mood").textContent = e ? this._t(`mood.${e.mood}`) : "–";
    card.querySelector(".pad").textContent = e ? this._t("pad", { p: num(e.p), a: num(e.a), d: num(e.d) }) : "";
    card.querySelector(".gauge-slot").innerHTML = gaugeHtml(this._hass, e);
    card.querySelector(".bodies").innerHTML = soul.bodies.length
      ? soul.bodies
          .map((b) => `<span class="chip" data-body="${esc(b.terminal_id)}" data-connected="${b.connected}">
            <span class="dot ${b.connected ? "on" : ""}" aria-hidden="true"></span>${esc(b.terminal_id)}
            <span class="muted">${esc(this._t(b.connected ? "connected" : "disconnected"))}</span></span>`)
          .join("")
      : `<span class="muted">${esc(this._t("no_bodies"))}</span>`;
    const ue = soul.user_emotion;
    card.querySelector(".user-emotion").innerHTML = ue
      ? `<span class="chip" data-emotion="${esc(ue.emotion)}">${esc(ue.emotion)} · ${num(ue.intensity)}</span>
         <span class="muted">${esc(when(this._hass, ue.at))}</span>`
      : `<span class="muted">${esc(this._t("none_yet"))}</span>`;
    return undefined;
  }

  // -- selectors shared by History, Timeline and Talk ---------------------------

  _soulOptions(selected, withAll) {
    const all = withAll ? `<option value="">${esc(this._t("all"))}</option>` : "";
    return all + this._souls
      .map((s) => `<option value="${esc(s.soul_id)}" ${s.soul_id === selected ? "selected" : ""}>${esc(s.name)}</option>`)
      .join("");
  }

  _renderSelectors() {
    if (this._tab === "talk") this._renderTalkSelectors();
    if (this._tab === "history" && !this._history.soul && this._souls.length) this._loadHistory();
    if (this._tab === "timeline") {
      const select = this._section("timeline").querySelector("#filter-soul");
      if (select && select.options.length !== this._souls.length + 1) this._renderTimeline();
    }
  }

  // -- History ---------------------------------------------------------------

  _loadHistory() {
    const h = this._history;
    if (!h.soul || !this._souls.some((s) => s.soul_id === h.soul)) h.soul = this._souls[0]?.soul_id || "";
    if (!h.soul) return this._renderHistory();
    const since = Date.now() / 1000 - RANGES[h.range];
    const request = { soul: h.soul, range: h.range };
    h.loading = true;
    this._renderHistory();
    this._hass.connection
      .sendMessagePromise({ type: "soul/events/list", soul_id: h.soul, since, limit: 500 })
      .then((page) => {
        if (request.soul !== h.soul || request.range !== h.range) return;
        const points = [];
        const turns = [];
        for (const event of page.events) {
          const time = event.meta?.timestamp;
          const state = event.meta?.psyche_state;
          if (state && typeof state.pleasure === "number") {
            points.push({ t: time, p: state.pleasure, a: state.arousal, d: state.dominance });
          }
          if (event.type === "user_input") turns.push({ t: time, text: event.payload?.content });
        }
        h.points = points.sort((x, y) => x.t - y.t);
        h.turns = turns;
        h.loading = false;
        this._historyPoint(this._souls.find((s) => s.soul_id === h.soul));
        this._renderHistory();
      })
      .catch((err) => {
        h.loading = false;
        h.error = err.message || String(err);
        this._renderHistory();
      });
    return undefined;
  }

  _historyPoint(soul) {
    const h = this._history;
    if (!soul || soul.soul_id !== h.soul || !soul.emotion || typeof soul.at !== "number") return;
    const last = h.points[h.points.length - 1];
    if (last && last.t >= soul.at) return;
    h.points.push({ t: soul.at, p: soul.emotion.p, a: soul.emotion.a, d: soul.emotion.d });
    if (this._tab === "history") this._renderChart();
  }

  _renderHistory() {
    const section = this._section("history");
    if (!section) return;
    const h = this._history;
    section.innerHTML = `<div class="card">
      <div class="filters">
        <div class="field"><label for="history-soul">${esc(this._t("soul"))}</label><select id="history-soul">${this._soulOptions(h.soul, false)}</select></div>
        <div class="field"><label for="history-range">${esc(this._t("range"))}</label><select id="history-range">
          <option value="hour" ${h.range === "hour" ? "selected" : ""}>${esc(this._t("last_hour"))}</option>
          <option value="day" ${h.range === "day" ? "selected" : ""}>${esc(this._t("last_day"))}</option></select></div>
      </div>
      <div class="legend">${LINES.map(([, key, color]) => `<span><i style="background:${color}"></i>${esc(this._t(key))}</span>`).join("")}
        <span><i style="background:var(--secondary-text-color)"></i>${esc(this._t("user_turn"))}</span></div>
      <div id="chart" aria-live="polite"></div></div>`;
    section.querySelector("#history-soul").addEventListener("change", (ev) => {
      h.soul = ev.target.value;
      this._loadHistory();
    });
    section.querySelector("#history-range").addEventListener("change", (ev) => {
      h.range = ev.target.value;
      this._loadHistory();
    });
    this._renderChart();
  }

  _renderChart() {
    const target = this._section("history")?.querySelector("#chart");
    if (!target) return;
    const h = this._history;
    if (h.loading) {
      target.innerHTML = `<div class="empty">${esc(this._t("loading"))}</div>`;
      return;
    }
    const now = Date.now() / 1000;
    const since = now - RANGES[h.range];
    const points = h.points.filter((pt) => pt.t >= since);
    if (!points.length) {
      target.innerHTML = `<div class="empty">${esc(this._t("no_history"))}</div>`;
      return;
    }
    const W = 640;
    const H = 220;
    const pad = 28;
    const x = (time) => pad + ((time - since) / (now - since)) * (W - pad * 2);
    const y = (v) => pad / 2 + ((1 - v) / 2) * (H - pad * 1.5);
    const grid = [-1, -0.5, 0, 0.5, 1]
      .map((v) => `<line x1="${pad}" x2="${W - pad}" y1="${y(v)}" y2="${y(v)}" stroke="var(--divider-color)" stroke-width="${v === 0 ? 1.5 : 0.7}"/>
        <text x="2" y="${y(v) + 4}" font-size="10" fill="var(--secondary-text-color)">${v}</text>`)
      .join("");
    const turns = h.turns
      .filter((turn) => turn.t >= since)
      .map((turn) => `<line class="turn" x1="${x(turn.t)}" x2="${x(turn.t)}" y1="${pad / 2}" y2="${H - pad}"
        stroke="var(--secondary-text-color)" stroke-dasharray="3 3"><title>${esc(when(this._hass, turn.t))} ${esc(turn.text || "")}</title></line>`)
      .join("");
    const lines = LINES.map(([axis, key, color]) => {
      const path = points.map((pt, i) => `${i ? "L" : "M"}${x(pt.t).toFixed(1)},${y(pt[axis]).toFixed(1)}`).join(" ");
      const dots = points.map((pt) => `<circle cx="${x(pt.t).toFixed(1)}" cy="${y(pt[axis]).toFixed(1)}" r="2.5" fill="${color}"/>`).join("");
      return `<g data-axis="${key}"><path d="${path}" fill="none" stroke="${color}" stroke-width="2"/>${dots}</g>`;
    }).join("");
    const axis = [since, (since + now) / 2, now]
      .map((time, i) => `<text x="${x(time)}" y="${H - 6}" font-size="10" text-anchor="${["start", "middle", "end"][i]}" fill="var(--secondary-text-color)">${esc(when(this._hass, time))}</text>`)
      .join("");
    const soul = this._soulName(h.soul);
    const last = points[points.length - 1];
    target.innerHTML = `<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" data-points="${points.length}" data-turns="${h.turns.filter((tt) => tt.t >= since).length}"
      aria-label="${esc(this._t("history_of", { name: soul }))}: ${esc(this._t("pad", { p: num(last.p), a: num(last.a), d: num(last.d) }))}">
      ${grid}${turns}${lines}${axis}</svg>`;
  }

  // -- Timeline --------------------------------------------------------------

  _visibleEvents() {
    const f = this._filters;
    return [...this._events.values()].filter(
      (e) => (!f.soul || e.soul_id === f.soul) && (!f.body || e.terminal_id === f.body) && (!f.type || e.type === f.type),
    );
  }

  _renderTimeline() {
    const section = this._section("timeline");
    if (!section) return;
    const f = this._filters;
    const bodies = [...new Set([...this._events.values()].map((e) => e.terminal_id).filter(Boolean))].sort();
    const focused = this.shadowRoot.activeElement?.id;
    const groups = new Map();
    const events = this._visibleEvents().sort((a, b) => (b.meta?.timestamp || 0) - (a.meta?.timestamp || 0));
    for (const event of events) {
      if (!groups.has(event.trace_id)) {
        if (groups.size >= MAX_GROUPS) continue;
        groups.set(event.trace_id, []);
      }
      groups.get(event.trace_id).push(event);
    }
    const items = [...groups.entries()].map(([trace, list]) => {
      const ordered = [...list].sort((a, b) => (a.meta?.timestamp || 0) - (b.meta?.timestamp || 0) || (a.id || 0) - (b.id || 0));
      const head = ordered[0];
      return `<li class="card trace" data-trace="${esc(trace)}">
        <div class="trace-head"><span><strong>${esc(this._soulName(head.soul_id))}</strong>
          ${head.terminal_id ? `<span class="chip">${esc(head.terminal_id)}</span>` : ""}
          <span class="muted">${esc(when(this._hass, head.meta?.timestamp, true))}</span></span>
          <button class="btn flat open" data-trace="${esc(trace)}" aria-label="${esc(this._t("open_trace"))} ${esc(String(trace).slice(0, 8))}">${esc(this._t("open_trace"))}</button></div>
        ${ordered.map((e) => this._eventHtml(e)).join("")}</li>`;
    });
    section.innerHTML = `<div class="filters" role="group" aria-label="Filters">
        <div class="field"><label for="filter-soul">${esc(this._t("soul"))}</label><select id="filter-soul">${this._soulOptions(f.soul, true)}</select></div>
        <div class="field"><label for="filter-body">${esc(this._t("body"))}</label><select id="filter-body"><option value="">${esc(this._t("all"))}</option>
          ${bodies.map((b) => `<option value="${esc(b)}" ${b === f.body ? "selected" : ""}>${esc(b)}</option>`).join("")}</select></div>
        <div class="field"><label for="filter-type">${esc(this._t("type"))}</label><select id="filter-type"><option value="">${esc(this._t("all"))}</option>
          ${EVENT_TYPES.map((k) => `<option value="${k}" ${k === f.type ? "selected" : ""}>${esc(this._t(`type.${k}`))}</option>`).join("")}</select></div>
      </div>
      ${items.length ? `<ul class="timeline" aria-live="polite">${items.join("")}</ul>` : `<div class="empty">${esc(this._t("no_events"))}</div>`}`;
    for (const [id, key] of [["filter-soul", "soul"], ["filter-body", "body"], ["filter-type", "type"]]) {
      section.querySelector(`#${id}`).addEventListener("change", (ev) => {
        this._filters[key] = ev.target.value;
        this._renderTimeline();
        section.querySelector(`#${id}`).focus();
      });
    }
    section.querySelectorAll("button.open").forEach((button) =>
      button.addEventListener("click", () => this._openTrace(button.dataset.trace)),
    );
    if (focused && section.querySelector(`#${focused}`)) section.querySelector(`#${focused}`).focus();
  }

  _eventHtml(e) {
    const p = e.payload || {};
    let body = "";
    switch (e.type) {
      case "user_input":
        body = `<span class="said">${esc(p.content)}</span> <span class="muted">${esc(p.channel || "")}</span>`;
        break;
      case "psyche_update": {
        const delta = p.delta || {};
        const state = e.meta?.psyche_state || {};
        body = `${esc(this._t("moved"))}: P ${num(delta.pleasure)} A ${num(delta.arousal)} D ${num(delta.dominance)}
          <span class="muted">(${esc(p.reason || "")}${state.mood ? ` → ${esc(this._t(`mood.${state.mood}`))}` : ""})</span>`;
        break;
      }
      case "driver_response": {
        const skills = Array.isArray(p.executed_skills) ? p.executed_skills.map((s) => s?.skill || s?.name || s).join(", ") : "";
        body = `<div class="reply">${esc(p.content)}</div>
          ${p.inner_voice ? `<div class="inner"><span class="muted">${esc(this._t("inner_voice"))}:</span> ${esc(p.inner_voice)}</div>` : ""}
          <div class="muted">${esc(this._t("intent"))}: ${esc(p.intent_decision || "–")} · ${esc(this._t("route"))}: ${esc(p.route || "–")}${skills ? ` · ${esc(this._t("executed"))}: ${esc(skills)}` : ""}</div>`;
        break;
      }
      case "navigator_suggestion":
        body = `${esc(p.suggestion || p.content || JSON.stringify(p))}`;
        break;
      default:
        body = `${esc(p.message || p.content || JSON.stringify(p))}`;
    }
    return `<div class="event" data-type="${esc(e.type)}"><span class="kind">${esc(this._t(`type.${e.type}`))}<br>${esc(when(this._hass, e.meta?.timestamp))}</span><div>${body}</div></div>`;
  }

  _openTrace(traceId) {
    const dialog = this.shadowRoot.getElementById("trace");
    dialog.dataset.trace = traceId;
    this._hass.connection
      .sendMessagePromise({ type: "soul/events/list", trace_id: traceId, limit: 100 })
      .then((page) => {
        const events = [...page.events].reverse();
        dialog.innerHTML = `<div class="trace-head"><h2 id="trace-title">${esc(this._t("trace"))} <code>${esc(traceId)}</code></h2>
            <button class="btn flat close" autofocus>${esc(this._t("close"))}</button></div>
          ${events.map((e) => this._eventHtml(e)).join("")}
          <details><summary>JSON</summary><pre>${esc(jsonText(events))}</pre></details>`;
        dialog.querySelector(".close").addEventListener("click", () => dialog.close());
        if (!dialog.open) dialog.showModal();
      })
      .catch((err) => {
        dialog.innerHTML = `<p>${esc(err.message || String(err))}</p><button class="btn flat close">${esc(this._t("close"))}</button>`;
        dialog.querySelector(".close").addEventListener("click", () => dialog.close());
        if (!dialog.open) dialog.showModal();
      });
  }

  // -- Bodies ----------------------------------------------------------------

  _loadBodies() {
    this._hass.connection
      .sendMessagePromise({ type: "soul/bodies/list" })
      .then((answer) => {
        this._bodies = answer.bodies;
        if (this._tab === "bodies") this._renderBodies();
      })
      .catch((err) => {
        this._bodies = { error: err.message || String(err) };
        if (this._tab === "bodies") this._renderBodies();
      });
  }

  _renderBodies() {
    const section = this._section("bodies");
    if (!section) return;
    if (this._bodies === null) {
      section.innerHTML = `<div class="empty">${esc(this._t("loading"))}</div>`;
      return;
    }
    if (this._bodies.error) {
      section.innerHTML = `<div class="empty">${esc(this._bodies.error)}</div>`;
      return;
    }
    if (!this._bodies.length) {
      section.innerHTML = `<div class="empty">${esc(this._t("no_bodies"))}</div>`;
      return;
    }
    section.innerHTML = `<div class="grid">${this._bodies.map((b) => this._bodyHtml(b)).join("")}</div>`;
  }

  _bodyHtml(b) {
    const inv = b.invoke || {};
    const decisions = b.decisions.length
      ? `<table><thead><tr><th>${esc(this._t("intent"))}</th><th>${esc(this._t("intents"))}</th><th>${esc(this._t("confidence"))}</th><th></th></tr></thead><tbody>
        ${b.decisions.map((d) => `<tr><td>${esc(d.action)}<div class="muted">${esc(d.reason)}</div></td><td>${esc(d.intent_ids.join(", ") || d.trigger_intent_id || "–")}</td>
          <td>${d.confidence == null ? "–" : Number(d.confidence).toFixed(2)}</td><td class="muted">${esc(when(this._hass, d.at))}</td></tr>`).join("")}</tbody></table>`
      : `<div class="muted">${esc(this._t("no_decisions"))}</div>`;
    return `<article class="card body" data-body="${esc(b.terminal_id)}" aria-labelledby="body-${esc(b.terminal_id)}">
      <div class="soul-head"><h2 id="body-${esc(b.terminal_id)}">${esc(b.terminal_id)}</h2>
        <span class="chip"><span class="dot ${b.connected ? "on" : ""}" aria-hidden="true"></span>${esc(this._t(b.connected ? "connected" : "disconnected"))}</span></div>
      <div class="muted">${esc([b.manufacturer, b.model, b.firmware].filter(Boolean).join(" · "))}${b.soul_name ? ` · ${esc(this._t("soul"))}: ${esc(b.soul_name)}` : ""}
        ${b.last_heartbeat ? ` · ${esc(this._t("heartbeat"))} ${esc(when(this._hass, b.last_heartbeat))}` : ""}</div>
      <p><span class="label">${esc(this._t("skills"))} (${b.skills.length})</span></p>
      <div class="chips">${b.skills.map((s) => `<span class="chip" title="${esc(s.description || "")}">${esc(s.name)}</span>`).join("")}</div>
      <p><span class="label">${esc(this._t("intents"))} (${b.intents.length})</span></p>
      <div class="chips">${b.intents.map((i) => `<span class="chip">${esc(i.name || i.id)}</span>`).join("")}</div>
      <p><span class="label">${esc(this._t("invocations"))}</span></p>
      <div class="invoke">${Number(inv.invocations ?? 0)} · ${esc(this._t("failures"))} ${Number(inv.failures ?? 0)} · ${esc(this._t("timeouts"))} ${Number(inv.timeouts ?? 0)}
        · ${esc(this._t("latency"))}: ${esc(this._t("last"))} ${inv.last_ms == null ? "–" : `${Number(inv.last_ms)} ms`}, ${esc(this._t("mean"))} ${inv.mean_ms == null ? "–" : `${Number(inv.mean_ms)} ms`}</div>
      <p><span class="label">${esc(this._t("last_decisions"))}</span></p>${decisions}</article>`;
  }

  // -- Talk ------------------------------------------------------------------

  _renderTalk() {
    const section = this._section("talk");
    if (!section) return;
    section.innerHTML = `<div class="card">
      <p class="muted">${esc(this._t("talk_hint"))}</p>
      <p class="muted read-only" role="note" hidden>${esc(this._t("talk_read_only"))}</p>
      <div class="filters">
        <div class="field"><label for="talk-soul">${esc(this._t("soul"))}</label><select id="talk-soul"></select></div>
        <div class="field"><label for="talk-body">${esc(this._t("body"))}</label><select id="talk-body"></select></div>
      </div>
      <div class="log" role="log" aria-live="polite" aria-label="${esc(this._t("tab_talk"))}"></div>
      <form class="compose"><div class="field" style="flex:1"><label for="talk-text">${esc(this._t("message"))}</label><textarea id="talk-text" rows="2" maxlength="4096" required></textarea></div>
        <button class="btn send" type="submit">${esc(this._t("send"))}</button></form></div>`;
    this._renderTalkSelectors();
    this._renderTalkLog();
    section.querySelector("#talk-soul").addEventListener("change", (ev) => {
      this._talk.soul = ev.target.value;
      this._talk.body = "";
      this._talk.chosen = false;
      this._renderTalkSelectors();
    });
    section.querySelector("#talk-body").addEventListener("change", (ev) => {
      this._talk.body = ev.target.value;
      this._talk.chosen = true;
    });
    const text = section.querySelector("#talk-text");
    text.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey) {
        ev.preventDefault();
        section.querySelector("form").requestSubmit();
      }
    });
    section.querySelector("form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      this._send(text);
    });
  }

  _renderTalkSelectors() {
    const section = this._section("talk");
    const soulSelect = section?.querySelector("#talk-soul");
    if (!soulSelect) return;
    const talk = this._talk;
    if (!this._souls.some((s) => s.soul_id === talk.soul)) talk.soul = this._souls[0]?.soul_id || "";
    soulSelect.innerHTML = this._soulOptions(talk.soul, false);
    const soul = this._souls.find((s) => s.soul_id === talk.soul);
    const bodies = soul ? soul.bodies : [];
    if (talk.body && !bodies.some((b) => b.terminal_id === talk.body)) talk.body = "";
    if (!talk.body && bodies.length && !talk.chosen) talk.body = (bodies.find((b) => b.connected) || bodies[0]).terminal_id;
    section.querySelector("#talk-body").innerHTML = `<option value="">${esc(this._t("no_body"))}</option>${bodies
      .map((b) => `<option value="${esc(b.terminal_id)}" ${b.terminal_id === talk.body ? "selected" : ""}>${esc(b.terminal_id)} (${esc(this._t(b.connected ? "connected" : "disconnected"))})</option>`)
      .join("")}`;
    const readOnly = soul?.may_chat === false;
    section.querySelector(".read-only").hidden = !readOnly;
    section.querySelector("#talk-text").disabled = readOnly;
    section.querySelector(".send").disabled = talk.busy || !talk.soul || readOnly;
  }

  _renderTalkLog() {
    const log = this._section("talk")?.querySelector(".log");
    if (!log) return;
    const items = this._talk.messages.map(
      (m) => `<div class="bubble ${m.from}" data-from="${m.from}"><span class="sr-only">${esc(m.from === "user" ? this._t("you") : m.from === "soul" ? m.name : this._t("error"))}: </span>${esc(m.text)}</div>`,
    );
    if (this._talk.busy) items.push(`<div class="bubble soul muted" role="status">${esc(this._t("sending"))}</div>`);
    log.innerHTML = items.join("");
    log.scrollTop = log.scrollHeight;
  }

  async _send(textarea) {
    const talk = this._talk;
    const text = textarea.value.trim();
    const soul = this._souls.find((s) => s.soul_id === talk.soul);
    if (!text || talk.busy || !talk.soul || soul?.may_chat === false) return;
    talk.busy = true;
    talk.messages.push({ from: "user", text });
    textarea.value = "";
    this._renderTalkLog();
    this._renderTalkSelectors();
    const message = { type: "soul/chat", text, soul_id: talk.soul };
    if (talk.body) message.terminal_id = talk.body;
    try {
      const answer = await this._hass.connection.sendMessagePromise(message);
      const name = this._souls.find((soul) => soul.soul_id === answer.soul_id)?.name || "";
      const text = answer.reply || `… (${answer.intent_decision || ""})`;
      talk.messages.push({ from: "soul", name, text, trace: answer.trace_id });
    } catch (err) {
      talk.messages.push({ from: "error", text: `${err.message || err.code || err}` });
    }
    talk.busy = false;
    this._renderTalkLog();
    this._renderTalkSelectors();
    this._section("talk")?.querySelector("#talk-text")?.focus();
  }
}

if (!customElements.get("soul-panel")) customElements.define("soul-panel", SoulPanel);
