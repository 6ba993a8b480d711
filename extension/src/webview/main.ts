/**
 * The results panel's only script: forwards clicks to the extension and draws the metric charts.
 * Charts use uPlot: ~50 KB, no dependencies, canvas-fast on long series, and it reads its colours
 * from us, so it follows the VS Code theme.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import './panel.css';

interface VsCodeApi {
    postMessage(message: unknown): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

/** What the extension embeds per chart (see ChartModel in src/panel/model.ts). */
interface ChartData {
    title: string;
    logScale: boolean;
    rank: number | null;
    steps: number[];
    values: (number | null)[];
    marks: (number | null)[];
}

const vscode = acquireVsCodeApi();

document.addEventListener('click', (event) => {
    const target = event.target instanceof Element ? event.target.closest('[data-action]') : null;
    if (!target || (target instanceof HTMLButtonElement && target.disabled)) {
        return;
    }
    event.preventDefault();
    const action = target.getAttribute('data-action');
    switch (action) {
        case 'reveal':
            vscode.postMessage({ type: 'reveal', place: Number(target.getAttribute('data-place')) });
            break;
        case 'showEntry':
            vscode.postMessage({ type: 'showEntry', ruleId: target.getAttribute('data-rule') });
            break;
        case 'runVerification':
        case 'copyFix':
        case 'copyVerify':
            vscode.postMessage({ type: action });
            break;
        default:
            break;
    }
});

function themeColour(name: string, fallback: string): string {
    return getComputedStyle(document.body).getPropertyValue(name).trim() || fallback;
}

// uPlot declares its scale kinds as a const enum in its .d.ts only, which a bundler cannot inline.
// eslint-disable-next-line @typescript-eslint/no-unsafe-enum-assignment
const LOGARITHMIC = 3 as uPlot.Scale.Distr;
const CHART_HEIGHT = 180;

/** Axis numbers that fit: 1.4e10 rather than 14,000,000,000. */
function tick(value: number): string {
    const size = Math.abs(value);
    if (size !== 0 && (size >= 1e5 || size < 1e-3)) {
        return value.toExponential(2).replace(/\.?0+e/, 'e').replace('e+', 'e');
    }
    return String(Number(value.toPrecision(4)));
}

function positiveOrNull(values: (number | null)[]): (number | null)[] {
    return values.map((v) => (v !== null && v > 0 ? v : null));
}

function chartOptions(chart: ChartData, width: number): uPlot.Options {
    const foreground = themeColour('--vscode-charts-foreground', themeColour('--vscode-foreground', '#888'));
    const grid = themeColour('--vscode-charts-lines', 'rgba(128,128,128,0.3)');
    const line = themeColour('--vscode-charts-blue', foreground);
    const anomaly = themeColour('--vscode-charts-red', '#e51400');
    const axis: uPlot.Axis = { stroke: foreground, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    return {
        width,
        height: CHART_HEIGHT,
        scales: { x: { time: false }, y: chart.logScale ? { distr: LOGARITHMIC } : {} },
        axes: [
            { ...axis, label: 'step' },
            { ...axis, size: 64, values: (_u: uPlot, splits: number[]) => splits.map(tick) },
        ],
        cursor: { drag: { x: false, y: false } },
        series: [
            { label: 'step' },
            {
                label: chart.rank === null ? chart.title : `${chart.title}, rank ${chart.rank}`,
                stroke: line,
                width: 1.5,
                spanGaps: true,
                value: (_u: uPlot, v: number | null) => (v === null ? '—' : tick(v)),
            },
            ...(hasMarks(chart)
                ? [
                      {
                          label: 'anomaly',
                          stroke: anomaly,
                          fill: anomaly,
                          width: 0,
                          paths: () => null,
                          points: { show: true, size: 9, stroke: anomaly, fill: anomaly },
                      },
                  ]
                : []),
        ],
    };
}

function hasMarks(chart: ChartData): boolean {
    return chart.marks.some((m) => m !== null);
}

function chartData(chart: ChartData): uPlot.AlignedData {
    const clean = chart.logScale ? positiveOrNull : (v: (number | null)[]) => v;
    return hasMarks(chart) ? [chart.steps, clean(chart.values), clean(chart.marks)] : [chart.steps, clean(chart.values)];
}

function drawCharts(): void {
    const source = document.getElementById('tm-charts');
    if (!source?.textContent) {
        return;
    }
    const charts = JSON.parse(source.textContent) as ChartData[];
    const plots: uPlot[] = [];
    const draw = (): void => {
        for (const plot of plots.splice(0)) {
            plot.destroy();
        }
        document.querySelectorAll<HTMLElement>('[data-chart]').forEach((box) => {
            const chart = charts[Number(box.dataset.chart)];
            if (chart) {
                plots.push(new uPlot(chartOptions(chart, Math.max(box.clientWidth, 240)), chartData(chart), box));
            }
        });
    };
    draw();
    // Follow the theme (body class) and the panel's width.
    new MutationObserver(draw).observe(document.body, { attributes: true, attributeFilter: ['class'] });
    let pending: number | undefined;
    new ResizeObserver(() => {
        window.clearTimeout(pending);
        pending = window.setTimeout(() => {
            document.querySelectorAll<HTMLElement>('[data-chart]').forEach((box, i) => {
                plots[i]?.setSize({ width: Math.max(box.clientWidth, 240), height: CHART_HEIGHT });
            });
        }, 100);
    }).observe(document.body);
}

drawCharts();
