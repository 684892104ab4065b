// <soul-emotion-form>: a soul's emotion drawn, not printed (docs/panel.md).
//
// A soft form whose colour follows pleasure (blue when sad, teal when calm,
// amber when glad) with arousal as its saturation, whose breathing quickens
// and trembles with arousal, whose size follows dominance, and whose face
// smiles or frowns with pleasure. Properties: ``emotion`` ({p, a, d, mood}),
// ``label`` (the accessible text). The computed look is mirrored in data-*
// attributes (data-hue, data-scale, data-period, data-mood) for tests.

const clamp = (x) => (typeof x === "number" && Number.isFinite(x) ? Math.max(-1, Math.min(1, x)) : 0);

/** Return how an emotion looks: hue, saturation, scale, breathing period, smile. */
export function formLook(emotion) {
  const p = clamp(emotion?.p);
  const a = clamp(emotion?.a);
  const d = clamp(emotion?.d);
  // 220 blue … 175 teal … 40 amber; the square root makes small moods visible.
  const hue = p < 0 ? 175 + Math.sqrt(-p) * 45 : 175 - Math.sqrt(p) * 135;
  return {
    hue: Math.round(hue),
    saturation: Math.round(38 + ((a + 1) / 2) * 50),
    lightness: Math.round(52 + p * 6),
    scale: +(0.7 + ((d + 1) / 2) * 0.38).toFixed(3),
    period: +(4.6 - ((a + 1) / 2) * 3.4).toFixed(2), // seconds per breath
    tremble: +(((a + 1) / 2) * 3).toFixed(2), // degrees of sway
    smile: +p.toFixed(3), // mouth curve
    eyes: +(0.55 + ((a + 1) / 2) * 0.6).toFixed(3), // eye openness
    droop: +(Math.max(0, -p) * 8).toFixed(2), // a sad form sinks
  };
}

/** A smooth closed blob through ``n`` points around (100, 100). */
function blobPath(look, n = 8) {
  const points = [];
  for (let i = 0; i < n; i += 1) {
    const angle = (i / n) * Math.PI * 2;
    const wobble = 1 + 0.06 * Math.sin(i * 2.3 + look.hue / 40) + 0.04 * Math.cos(i * 1.7);
    // Sadness flattens the top, gladness lifts it.
    const lift = Math.sin(angle) < 0 ? 1 + look.smile * 0.06 : 1 - look.smile * 0.03;
    const r = 62 * wobble * lift;
    points.push([100 + Math.cos(angle) * r, 100 + Math.sin(angle) * r]);
  }
  let d = "";
  for (let i = 0; i < n; i += 1) {
    const [x0, y0] = points[(i - 1 + n) % n];
    const [x1, y1] = points[i];
    const [x2, y2] = points[(i + 1) % n];
    const [x3, y3] = points[(i + 2) % n];
    if (i === 0) d += `M${x1.toFixed(1)},${y1.toFixed(1)}`;
    const c1 = [x1 + (x2 - x0) / 6, y1 + (y2 - y0) / 6];
    const c2 = [x2 - (x3 - x1) / 6, y2 - (y3 - y1) / 6];
    d += `C${c1[0].toFixed(1)},${c1[1].toFixed(1)} ${c2[0].toFixed(1)},${c2[1].toFixed(1)} ${x2.toFixed(1)},${y2.toFixed(1)}`;
  }
  return `${d}Z`;
}

const CSS = `
  :host { display: inline-block; width: var(--soul-form-size, 160px); height: var(--soul-form-size, 160px); }
  svg { width: 100%; height: 100%; overflow: visible; }
  .body { transform-origin: 100px 100px; transition: transform 0.8s ease; }
  .breath { transform-origin: 100px 110px; animation: breathe var(--period, 3s) ease-in-out infinite; }
  .blob { transition: fill 0.8s ease, d 0.8s ease; }
  .glow { transition: fill 0.8s ease; }
  .face path, .face ellipse { transition: d 0.8s ease, ry 0.8s ease; }
  @keyframes breathe {
    0%, 100% { transform: scale(1) rotate(calc(var(--tremble, 1deg) * -1)); }
    50% { transform: scale(1.05, 0.97) rotate(var(--tremble, 1deg)); }
  }
  @media (prefers-reduced-motion: reduce) { .breath { animation: none; } }
`;

export class SoulEmotionForm extends HTMLElement {
  constructor() {
    super();
    this.attachShadow({ mode: "open" });
    this._emotion = null;
    this._label = "";
  }

  set emotion(value) {
    this._emotion = value;
    this._render();
  }

  get emotion() {
    return this._emotion;
  }

  set label(value) {
    this._label = value || "";
    this._render();
  }

  connectedCallback() {
    this._render();
  }

  _render() {
    const look = formLook(this._emotion);
    const fill = `hsl(${look.hue} ${look.saturation}% ${look.lightness}%)`;
    const glow = `hsl(${look.hue} ${look.saturation}% ${look.lightness}% / 0.25)`;
    const ink = "rgba(20, 24, 32, 0.78)";
    const mouth = 12 * look.smile; // + smile, − frown
    const eyeRy = (6 * look.eyes).toFixed(2);
    for (const [key, value] of Object.entries({
      hue: look.hue, scale: look.scale, period: look.period,
      p: clamp(this._emotion?.p).toFixed(3), a: clamp(this._emotion?.a).toFixed(3),
      d: clamp(this._emotion?.d).toFixed(3), mood: this._emotion?.mood || "",
    })) this.dataset[key] = String(value);
    this.setAttribute("role", "img");
    this.setAttribute("aria-label", this._label);
    const style = `--period:${look.period}s;--tremble:${look.tremble}deg`;
    if (!this.shadowRoot.querySelector("svg")) {
      this.shadowRoot.innerHTML = `<style>${CSS}</style>
        <svg viewBox="0 0 200 200" aria-hidden="true" focusable="false">
          <g class="body"><g class="breath">
            <circle class="glow" cx="100" cy="100" r="88"></circle>
            <path class="blob"></path>
            <g class="face">
              <ellipse class="eye" cx="80" cy="92" rx="6"></ellipse>
              <ellipse class="eye" cx="120" cy="92" rx="6"></ellipse>
              <path class="mouth" fill="none" stroke-width="4.5" stroke-linecap="round"></path>
            </g>
          </g></g>
        </svg>`;
    }
    const root = this.shadowRoot;
    root.querySelector(".body").style.transform = `translateY(${look.droop}px) scale(${look.scale})`;
    root.querySelector(".breath").setAttribute("style", style);
    root.querySelector(".glow").setAttribute("fill", glow);
    const blob = root.querySelector(".blob");
    blob.setAttribute("d", blobPath(look));
    blob.setAttribute("fill", fill);
    for (const eye of root.querySelectorAll(".eye")) {
      eye.setAttribute("ry", eyeRy);
      eye.setAttribute("fill", ink);
    }
    const mouthPath = root.querySelector(".mouth");
    mouthPath.setAttribute("d", `M84,${118 - mouth / 2} Q100,${118 + mouth} 116,${118 - mouth / 2}`);
    mouthPath.setAttribute("stroke", ink);
  }
}

if (!customElements.get("soul-emotion-form")) {
  customElements.define("soul-emotion-form", SoulEmotionForm);
}
