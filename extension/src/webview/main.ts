/**
 * The results panel's only script: forwards clicks to the extension and draws the metric charts.
 * Charts use uPlot: ~50 KB, no dependencies, canvas-fast on long series, and it reads its colours
 * from us, so it follows the VS Code theme.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import './panel.css';
import { STEP_INCREMENTS, finite, stepTick, tick, valueRange } from '../panel/axes';

interface VsCodeApi {
    postMessage(message: unknown): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

/** What the extension embeds per chart (see ChartModel in src/panel/model.ts). */
interface SeriesData {
    rank: number | null;
    steps: number[];
    values: (number | null)[];
    marks: (number | null)[];
}

interface ChartData {
    title: string;
    logScale: boolean;
    series: SeriesData[];
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

function positiveOrNull(values: (number | null)[]): (number | null)[] {
    return values.map((v) => (v !== null && v > 0 ? v : null));
}

function chartOptions(chart: ChartData, series: SeriesData, width: number): uPlot.Options {
    const foreground = themeColour('--vscode-charts-foreground', themeColour('--vscode-foreground', '#888'));
    const grid = themeColour('--vscode-charts-lines', 'rgba(128,128,128,0.3)');
    const line = themeColour('--vscode-charts-blue', foreground);
    const anomaly = themeColour('--vscode-charts-red', '#e51400');
    const axis: uPlot.Axis = { stroke: foreground, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    return {
        width,
        height: CHART_HEIGHT,
        scales: {
            x: { time: false },
            y: { ...(chart.logScale ? { distr: LOGARITHMIC } : {}), range: () => valueRange(series.values, chart.logScale) },
        },
        axes: [
            { ...axis, label: 'step', incrs: STEP_INCREMENTS, values: (_u: uPlot, splits: (number | null)[]) => splits.map(stepTick) },
            { ...axis, size: 64, values: (_u: uPlot, splits: (number | null)[]) => splits.map(tick) },
        ],
        cursor: { drag: { x: false, y: false } },
        series: [
            { label: 'step' },
            {
                label: series.rank === null ? chart.title : `${chart.title}, rank ${series.rank}`,
                stroke: line,
                width: 1.5,
                spanGaps: true,
                value: (_u: uPlot, v: number | null) => (v === null ? '—' : tick(v)),
            },
            ...(hasMarks(series)
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

function hasMarks(series: SeriesData): boolean {
    return series.marks.some((m) => m !== null);
}

function chartData(chart: ChartData, series: SeriesData): uPlot.AlignedData {
    const clean = chart.logScale ? positiveOrNull : (v: (number | null)[]) => v;
    return hasMarks(series) ? [series.steps, clean(series.values), clean(series.marks)] : [series.steps, clean(series.values)];
}

function drawCharts(): void {
    const source = document.getElementById('tm-charts');
    if (!source?.textContent) {
        return;
    }
    const charts = JSON.parse(source.textContent) as ChartData[];
    const shown = charts.map(() => 0); // which rank's series each chart shows
    const plots = new Map<number, uPlot>();
    const drawOne = (box: HTMLElement): void => {
        const index = Number(box.dataset.chart);
        const chart = charts[index];
        const series = chart?.series[shown[index] ?? 0];
        plots.get(index)?.destroy();
        plots.delete(index);
        box.replaceChildren();
        if (!chart || !series) {
            return;
        }
        if (finite(series.values, chart.logScale).length === 0) {
            const note = document.createElement('p');
            note.className = 'chart-empty';
            note.textContent = chart.logScale ? 'No positive finite values to chart.' : 'No finite values to chart (NaN or inf).';
            box.append(note);
            return;
        }
        const options = chartOptions(chart, series, Math.max(box.clientWidth, 240));
        const stroke = options.series[1]?.stroke;
        box.dataset.stroke = typeof stroke === 'string' ? stroke : '';
        plots.set(index, new uPlot(options, chartData(chart, series), box));
    };
    const draw = (): void => {
        document.querySelectorAll<HTMLElement>('[data-chart]').forEach(drawOne);
    };
    draw();
    document.addEventListener('change', (event) => {
        const select = event.target instanceof HTMLSelectElement ? event.target : null;
        const index = Number(select?.dataset.chartRank);
        const box = document.querySelector<HTMLElement>(`[data-chart="${index}"]`);
        if (select && box && Number.isInteger(index)) {
            shown[index] = Number(select.value);
            drawOne(box);
        }
    });
    // Follow the theme (body class) and the panel's width.
    new MutationObserver(draw).observe(document.body, { attributes: true, attributeFilter: ['class'] });
    let pending: number | undefined;
    new ResizeObserver(() => {
        window.clearTimeout(pending);
        pending = window.setTimeout(() => {
            document.querySelectorAll<HTMLElement>('[data-chart]').forEach((box) => {
                plots.get(Number(box.dataset.chart))?.setSize({ width: Math.max(box.clientWidth, 240), height: CHART_HEIGHT });
            });
        }, 100);
    }).observe(document.body);
}

// A new diagnosis starts at its top, wherever the last one was scrolled to.
window.scrollTo(0, 0);
drawCharts();
