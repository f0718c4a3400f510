/**
 * bench/results.svg: a hand-written grouped bar chart, two panels — processing throughput
 * (jobs/s, higher is better) and enqueue-to-start latency p50 (ms, lower is better).
 */
import { type BenchResults, fmt, summarize } from "./results.js";

const COLORS: Record<string, string> = {
  "errand-postgres": "#1f6feb",
  "errand-sqlite": "#58a6ff",
  "graphile-worker-best": "#d29922",
  "graphile-worker": "#f2cc60",
  "pg-boss": "#8957e5",
  sidequest: "#3fb950",
  bullmq: "#da3633",
};
const FALLBACK = ["#6e7781", "#bf8700", "#0969da", "#cf222e"];

interface Group {
  label: string;
  bars: Array<{ system: string; value: number }>;
}

function escape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function niceMax(value: number): number {
  if (!(value > 0)) return 1;
  const exp = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * exp >= value) return step * exp;
  return 10 * exp;
}

function panel(
  x0: number,
  y0: number,
  width: number,
  height: number,
  title: string,
  unit: string,
  groups: Group[],
  digits: number,
): string {
  const out: string[] = [];
  const left = 70;
  const bottom = 46;
  const plotW = width - left - 10;
  const plotH = height - bottom - 34;
  const top = y0 + 34;
  const max = niceMax(
    Math.max(0, ...groups.flatMap((g) => g.bars.map((b) => (Number.isFinite(b.value) ? b.value : 0)))),
  );
  out.push(
    `<text x="${x0 + width / 2}" y="${y0 + 18}" text-anchor="middle" font-size="15" font-weight="600">${escape(title)}</text>`,
  );
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    const y = top + plotH - (plotH * i) / 4;
    out.push(
      `<line x1="${x0 + left}" x2="${x0 + left + plotW}" y1="${y}" y2="${y}" stroke="#d0d7de" stroke-width="1"/>`,
    );
    out.push(
      `<text x="${x0 + left - 6}" y="${y + 4}" text-anchor="end" font-size="11" fill="#57606a">${fmt(v, max < 10 ? 1 : 0)}</text>`,
    );
  }
  out.push(
    `<text x="${x0 + 14}" y="${top + plotH / 2}" font-size="11" fill="#57606a" transform="rotate(-90 ${x0 + 14} ${top + plotH / 2})" text-anchor="middle">${escape(unit)}</text>`,
  );
  const groupW = plotW / Math.max(1, groups.length);
  groups.forEach((group, gi) => {
    const gx = x0 + left + gi * groupW;
    const n = Math.max(1, group.bars.length);
    const barW = Math.min(34, (groupW - 16) / n);
    const start = gx + (groupW - barW * n) / 2;
    group.bars.forEach((bar, bi) => {
      const x = start + bi * barW;
      const color = COLORS[bar.system] ?? FALLBACK[bi % FALLBACK.length];
      if (!Number.isFinite(bar.value)) {
        out.push(
          `<text x="${x + barW / 2}" y="${top + plotH - 4}" text-anchor="middle" font-size="9" fill="#cf222e">n/a</text>`,
        );
        return;
      }
      const h = (plotH * bar.value) / max;
      out.push(
        `<rect x="${x + 1}" y="${top + plotH - h}" width="${barW - 2}" height="${h}" fill="${color}"><title>${escape(bar.system)}: ${fmt(bar.value, digits)} ${escape(unit)}</title></rect>`,
      );
      out.push(
        `<text x="${x + barW / 2}" y="${top + plotH - h - 3}" text-anchor="middle" font-size="8.5" fill="#24292f">${fmt(bar.value, bar.value < 10 ? digits : 0)}</text>`,
      );
    });
    out.push(
      `<text x="${gx + groupW / 2}" y="${top + plotH + 16}" text-anchor="middle" font-size="11">${escape(group.label)}</text>`,
    );
  });
  return out.join("\n");
}

export function renderChart(results: BenchResults): string {
  const systems = results.systems.filter((s) => !s.unavailable).map((s) => s.name);
  const hasData = (workload: string, metric: string) =>
    systems.some((s) => Number.isFinite(summarize(results, workload, s, metric).median));
  const groupsFor = (group: string, metric: string, label: (name: string) => string): Group[] =>
    results.workloads
      .filter((w) => w.group === group && hasData(w.name, metric))
      .map((w) => ({
        label: label(w.name),
        bars: systems
          .filter((s) => results.records.some((r) => r.workload === w.name && r.system === s))
          .map((s) => ({ system: s, value: summarize(results, w.name, s, metric).median })),
      }));
  const processing = groupsFor("process", "jobsPerSec", (name) => {
    const m = /process-c(\d+)-p(\d+)/.exec(name);
    return m ? `c=${m[1]}, ${m[2]} proc${name.endsWith("-burst") ? ", never analyzed" : ""}` : name;
  });
  const latency = groupsFor("latency", "p50", (name) => `${fmt(Number(name.split("-")[1]))} jobs/s`);

  const width = 980;
  const panelH = 330;
  const legendH = 28 + Math.ceil(systems.length / 4) * 20;
  const height = 50 + panelH * 2 + legendH;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif">`,
  );
  out.push(`<rect width="100%" height="100%" fill="#ffffff"/>`);
  out.push(
    `<text x="${width / 2}" y="26" text-anchor="middle" font-size="17" font-weight="700">errand vs peers — ${escape(results.date.slice(0, 10))}, ${results.machine.nproc} cores, median of ${results.runs} run${results.runs > 1 ? "s" : ""} (${escape(results.mode)})</text>`,
  );
  out.push(panel(0, 40, width, panelH, "Processing no-op jobs (higher is better)", "jobs/s", processing, 0));
  out.push(
    panel(
      0,
      40 + panelH,
      width,
      panelH,
      "Enqueue-to-start latency p50, idle workers (lower is better)",
      "ms",
      latency,
      2,
    ),
  );
  const ly = 40 + panelH * 2 + 12;
  systems.forEach((s, i) => {
    const x = 70 + (i % 4) * 225;
    const y = ly + Math.floor(i / 4) * 20;
    out.push(
      `<rect x="${x}" y="${y}" width="14" height="14" fill="${COLORS[s] ?? FALLBACK[i % FALLBACK.length]}"/>`,
    );
    out.push(`<text x="${x + 20}" y="${y + 12}" font-size="12">${escape(s)}</text>`);
  });
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}
