// Shared by the Soul panel and card: translations, the souls store and small helpers.
// Plain ES module, no build (docs/panel.md). Data comes only from Soul's
// WebSocket commands (custom_components/soul/websocket_panel.py, websocket_api.py).

const STRINGS = {
  en: {
    title: "Soul",
    menu: "Open the sidebar",
    tabs: "Soul sections",
    tab_souls: "Souls",
    tab_history: "History",
    tab_timeline: "Timeline",
    tab_bodies: "Bodies",
    tab_talk: "Talk",
    no_souls: "No soul to show yet. An administrator adds souls in Settings → Devices & services → Soul.",
    not_ready: "Soul is not set up.",
    loading: "Loading…",
    mood: "Mood",
    willingness: "Willingness to act",
    bodies: "Bodies",
    no_bodies: "No body bound",
    connected: "connected",
    disconnected: "not connected",
    user_emotion: "User emotion last recognised",
    none_yet: "none yet",
    feels: "{name} feels {mood}",
    pad: "pleasure {p}, arousal {a}, dominance {d}",
    pleasure: "Pleasure",
    arousal: "Arousal",
    dominance: "Dominance",
    soul: "Soul",
    body: "Body",
    type: "Type",
    all: "All",
    range: "Range",
    last_hour: "Last hour",
    last_day: "Last day",
    user_turn: "user turn",
    no_history: "No emotion recorded in this range.",
    history_of: "PAD of {name}",
    no_events: "No events yet.",
    open_trace: "Open this trace",
    close: "Close",
    trace: "Trace",
    you_said: "User said",
    reply: "Reply",
    inner_voice: "Inner voice",
    intent: "Decision",
    skills: "Skills",
    intents: "Intent catalog",
    last_decisions: "Last decisions",
    confidence: "confidence",
    invocations: "Invocations",
    failures: "failures",
    timeouts: "timeouts",
    latency: "Latency",
    last: "last",
    mean: "mean",
    no_decisions: "No decision yet.",
    moved: "Emotion moved",
    suggestion: "Navigator's suggestion",
    notification: "Notification",
    no_body: "No body (talk to the soul alone)",
    message: "Message",
    send: "Send",
    sending: "The soul is thinking…",
    talk_hint: "Talk to a soul without hardware or a voice pipeline.",
    talk_read_only: "A read-only user can watch souls but not talk to them.",
    you: "You",
    error: "Error",
    card_soul: "Soul (empty: the first you see)",
    card_name: "Title (optional)",
    card_gauge: "Show the willingness gauge",
    route: "route",
    executed: "executed",
    heartbeat: "last heartbeat",
    "mood.exuberant": "exuberant",
    "mood.dependent": "dependent",
    "mood.relaxed": "relaxed",
    "mood.docile": "docile",
    "mood.hostile": "hostile",
    "mood.anxious": "anxious",
    "mood.disdainful": "disdainful",
    "mood.bored": "bored",
    "mood.neutral": "neutral",
    "exec.auto_execute": "acts on its own",
    "exec.confirm": "asks before acting",
    "exec.blocked": "refuses to act",
    "type.user_input": "user input",
    "type.driver_response": "reply",
    "type.navigator_suggestion": "navigator",
    "type.psyche_update": "emotion",
    "type.system_notification": "system",
  },
  "zh-Hans": {
    title: "灵魂",
    menu: "打开侧边栏",
    tabs: "灵魂面板分区",
    tab_souls: "灵魂",
    tab_history: "历史",
    tab_timeline: "时间线",
    tab_bodies: "躯体",
    tab_talk: "对话",
    no_souls: "还没有可显示的灵魂。管理员可在 设置 → 设备与服务 → Soul 中添加。",
    not_ready: "Soul 尚未设置。",
    loading: "加载中…",
    mood: "心境",
    willingness: "行动意愿",
    bodies: "躯体",
    no_bodies: "未绑定躯体",
    connected: "已连接",
    disconnected: "未连接",
    user_emotion: "最近识别到的用户情绪",
    none_yet: "暂无",
    feels: "{name}感到{mood}",
    pad: "愉悦 {p}，唤醒 {a}，支配 {d}",
    pleasure: "愉悦",
    arousal: "唤醒",
    dominance: "支配",
    soul: "灵魂",
    body: "躯体",
    type: "类型",
    all: "全部",
    range: "范围",
    last_hour: "最近一小时",
    last_day: "最近一天",
    user_turn: "用户发言",
    no_history: "此范围内没有情绪记录。",
    history_of: "{name} 的 PAD",
    no_events: "还没有事件。",
    open_trace: "打开此追踪",
    close: "关闭",
    trace: "追踪",
    you_said: "用户说",
    reply: "回复",
    inner_voice: "内心独白",
    intent: "决策",
    skills: "技能",
    intents: "意图目录",
    last_decisions: "最近的决策",
    confidence: "置信度",
    invocations: "调用",
    failures: "失败",
    timeouts: "超时",
    latency: "延迟",
    last: "最近",
    mean: "平均",
    no_decisions: "还没有决策。",
    moved: "情绪变化",
    suggestion: "导航者的建议",
    notification: "通知",
    no_body: "不经躯体（只与灵魂对话）",
    message: "消息",
    send: "发送",
    sending: "灵魂正在思考…",
    talk_hint: "无需硬件或语音管线即可与灵魂对话。",
    talk_read_only: "只读用户可以查看灵魂，但不能与之对话。",
    you: "你",
    error: "错误",
    card_soul: "灵魂（留空：你能看到的第一个）",
    card_name: "标题（可选）",
    card_gauge: "显示行动意愿仪表",
    route: "路径",
    executed: "已执行",
    heartbeat: "最近心跳",
    "mood.exuberant": "兴高采烈",
    "mood.dependent": "依赖",
    "mood.relaxed": "放松",
    "mood.docile": "温顺",
    "mood.hostile": "敌意",
    "mood.anxious": "焦虑",
    "mood.disdainful": "轻蔑",
    "mood.bored": "无聊",
    "mood.neutral": "平静",
    "exec.auto_execute": "自主行动",
    "exec.confirm": "行动前先询问",
    "exec.blocked": "拒绝行动",
    "type.user_input": "用户输入",
    "type.driver_response": "回复",
    "type.navigator_suggestion": "导航者",
    "type.psyche_update": "情绪",
    "type.system_notification": "系统",
  },
};

/** Return the strings' language for a Home Assistant language tag. */
export function languageOf(hass) {
  const lang = (hass && (hass.locale?.language || hass.language)) || "en";
  return lang.toLowerCase().startsWith("zh") ? "zh-Hans" : "en";
}

/** Translate ``key`` for ``hass``'s language, filling ``{placeholders}``. */
export function t(hass, key, values = {}) {
  const table = STRINGS[languageOf(hass)];
  const text = table[key] ?? STRINGS.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_m, name) => String(values[name] ?? ""));
}

/** The keys of both languages, for the tests. */
export const STRING_KEYS = { en: Object.keys(STRINGS.en), "zh-Hans": Object.keys(STRINGS["zh-Hans"]) };

/** Escape text for innerHTML. */
export function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ({
    "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;",
  })[c]);
}

/** JSON for people to read: bidirectional controls and invisible characters escaped. */
export function jsonText(value) {
  return JSON.stringify(value, null, 2).replace(
    /[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** Format a number with a sign and two decimals ("–" when missing). */
export function num(value, digits = 2) {
  return typeof value === "number" && Number.isFinite(value)
    ? (value > 0 ? "+" : "") + value.toFixed(digits)
    : "–";
}

/** Format Unix seconds as a local time. */
export function when(hass, seconds, withDate = false) {
  if (typeof seconds !== "number") return "";
  const options = withDate
    ? { dateStyle: "short", timeStyle: "medium" }
    : { timeStyle: "medium" };
  try {
    return new Date(seconds * 1000).toLocaleString(hass?.locale?.language || hass?.language || "en", options);
  } catch (_err) {
    return new Date(seconds * 1000).toLocaleString();
  }
}

/**
 * One ``soul/souls/subscribe`` per connection, shared by every panel and card:
 * ``watchSouls(hass, listener)`` calls ``listener(souls, error)`` now (when
 * known) and on every push; it returns the function that stops listening.
 */
const stores = new WeakMap();
// After Soul reloads ({"ended": true}), how soon and how often to subscribe again.
export const RESUBSCRIBE_MS = 2000;
const RESUBSCRIBE_TRIES = 15;

export function watchSouls(hass, listener) {
  const connection = hass.connection;
  let store = stores.get(connection);
  if (!store) {
    store = { souls: new Map(), order: [], listeners: new Set(), ready: false, error: null, unsub: null, stopTimer: null };
    stores.set(connection, store);
    const apply = (message) => {
      if (message.ended) {
        // Soul was reloaded: its new runtime streams from a new subscription.
        const old = store.unsub;
        old.then((unsub) => unsub && unsub()).catch(() => {});
        setTimeout(subscribe, RESUBSCRIBE_MS);
        return;
      }
      if (message.souls) {
        store.souls = new Map(message.souls.map((s) => [s.soul_id, s]));
        store.order = message.souls.map((s) => s.soul_id);
      } else if (message.soul) {
        if (!store.souls.has(message.soul.soul_id)) store.order.push(message.soul.soul_id);
        store.souls.set(message.soul.soul_id, message.soul);
      }
      store.ready = true;
      store.error = null;
      const list = store.order.map((id) => store.souls.get(id)).filter(Boolean);
      store.listeners.forEach((l) => l(list, null, message.soul || null));
    };
    let attempts = 0;
    const subscribe = () => {
      if (stores.get(connection) !== store) return; // nobody watches any more
      store.unsub = connection
        .subscribeMessage(apply, { type: "soul/souls/subscribe" })
        .then((unsub) => {
          attempts = 0;
          return unsub;
        })
        .catch((err) => {
          // Soul is reloading (not_ready): try again a few times, then say so.
          if (err && err.code === "not_ready" && store.ready && attempts++ < RESUBSCRIBE_TRIES) {
            setTimeout(subscribe, RESUBSCRIBE_MS);
            return null;
          }
          store.error = err;
          store.listeners.forEach((l) => l([], err, null));
          stores.delete(connection);
          return null;
        });
    };
    subscribe();
  }
  if (store.stopTimer) {
    clearTimeout(store.stopTimer);
    store.stopTimer = null;
  }
  store.listeners.add(listener);
  if (store.ready) listener(store.order.map((id) => store.souls.get(id)).filter(Boolean), null, null);
  else if (store.error) listener([], store.error, null);
  return () => {
    store.listeners.delete(listener);
    if (store.listeners.size === 0 && !store.stopTimer) {
      // Kept a little: a card moving between views would subscribe again at once.
      store.stopTimer = setTimeout(() => {
        if (store.listeners.size) return;
        stores.delete(connection);
        store.unsub.then((unsub) => unsub && unsub()).catch(() => {});
      }, 5000);
    }
  };
}

/** CSS shared by the panel and the card: Home Assistant's theme variables. */
export const BASE_CSS = `
  :host { color: var(--primary-text-color); font-family: var(--ha-font-family-body, var(--paper-font-body1_-_font-family, Roboto, sans-serif)); }
  /* Text from bodies and users may hold a bidirectional override: it ends
     with its element ("\\u202e" in a chat line reversed the labels beside it). */
  span, strong, em, b, small, code, label, bdi, time, a { unicode-bidi: isolate; }
  .muted { color: var(--secondary-text-color); }
  /* Names and words from bodies and users wrap anywhere rather than run out of
     their card (a body's 128-character model, a 4,000-character word, a name
     of 64 wide ligatures did, in a black-box run). */
  .muted, .chip, .said, .reply, .mood, h1, h2, h3, td, th { overflow-wrap: anywhere; min-width: 0; }
  .chip { display: inline-flex; align-items: center; gap: 6px; padding: 2px 10px; border-radius: 12px; max-width: 100%; box-sizing: border-box;
    background: var(--secondary-background-color); color: var(--primary-text-color); font-size: 0.85em; }
  .dot { width: 8px; height: 8px; border-radius: 50%; background: var(--disabled-text-color, #bdbdbd); flex: none; }
  .dot.on { background: var(--success-color, #43a047); }
  .gauge { position: relative; height: 10px; border-radius: 5px; background: var(--divider-color); overflow: hidden; }
  .gauge > span { position: absolute; inset: 0 auto 0 0; border-radius: 5px; background: var(--primary-color);
    transition: width 0.6s ease; }
  .gauge.blocked > span { background: var(--error-color, #db4437); }
  .gauge.confirm > span { background: var(--warning-color, #ffa600); }
  button, select, input, textarea { font: inherit; color: inherit; }
  :focus-visible { outline: 2px solid var(--primary-color); outline-offset: 2px; }
`;

/** The HTML of the willingness gauge. */
export function gaugeHtml(hass, emotion) {
  const probability = emotion ? emotion.exec_probability : 0;
  const percent = Math.round(Math.max(0, Math.min(1, probability || 0)) * 100);
  const mode = emotion ? emotion.exec_mode : "";
  const modeText = mode ? t(hass, `exec.${mode}`) : "";
  return `<div class="willingness">
    <div class="row"><span>${esc(t(hass, "willingness"))}</span>
      <span class="muted" data-role="exec">${percent}% · ${esc(modeText)}</span></div>
    <div class="gauge ${esc(mode)}" role="meter" aria-label="${esc(t(hass, "willingness"))}"
      aria-valuemin="0" aria-valuemax="100" aria-valuenow="${percent}" aria-valuetext="${percent}% ${esc(modeText)}">
      <span style="width:${percent}%"></span></div></div>`;
}
