/**
 * Diagnosis → what the results panel shows. Pure: no VS Code API, so it is unit-tested directly.
 */
import { DiagnoseResult, Finding, LineRef, MetricSeries, Point, RankReport, rootCause } from '../diagnosis';

/** Where an evidence line lives in the editor: a document URI and a 0-based line. */
export interface Place {
    readonly uri: string;
    readonly line: number;
}

/** Maps a line of the diagnosed text to its place, when it has one (terminal output has none). */
export type Locate = (ref: LineRef) => Place | undefined;

export interface LineLink {
    readonly label: string;
    /** Index into PanelModel.places, or undefined when the line cannot be opened. */
    readonly place: number | undefined;
}

export interface RankRow {
    readonly rank: number;
    readonly status: string;
    readonly initiating: boolean;
    readonly firstFailure: LineLink | undefined;
    readonly ruleIds: readonly string[];
}

export interface EvidenceRow {
    readonly ruleId: string;
    readonly role: Finding['role'];
    readonly rank: number | null;
    readonly link: LineLink;
    readonly text: string;
}

export interface AnomalyRow {
    readonly detector: string;
    readonly rank: number | null;
    readonly link: LineLink;
}

/** One rank's line of a chart. */
export interface ChartSeries {
    /** The rank, or null when the lines name none. */
    readonly rank: number | null;
    readonly steps: readonly number[];
    readonly values: readonly (number | null)[];
    /** Aligned with steps: the value to mark where an anomaly happened, else null. */
    readonly marks: readonly (number | null)[];
}

export interface ChartModel {
    readonly title: string;
    readonly logScale: boolean;
    /** The rank plotted first: the initiating rank when it logged the metric. */
    readonly rank: number | null;
    /** That rank's series first, then the other ranks', which the chart can switch to. */
    readonly series: readonly ChartSeries[];
    readonly anomalies: readonly AnomalyRow[];
}

export interface RootCauseModel {
    readonly ruleId: string;
    readonly title: string;
    readonly confidencePercent: number;
    readonly fix: string;
    readonly verify: string;
}

export interface PanelModel {
    readonly origin: string;
    readonly root: RootCauseModel | undefined;
    readonly initiatingRank: number | null;
    readonly initiatingHost: string | null;
    /** How the rank was chosen, in words that claim no order where the basis gives none. */
    readonly basis: string;
    readonly why: string;
    /** The initiating rank's first failure, from the ranks' JSON. */
    readonly whyLine: LineLink | undefined;
    readonly ranks: readonly RankRow[];
    readonly evidence: readonly EvidenceRow[];
    readonly related: readonly string[];
    readonly charts: readonly ChartModel[];
    readonly places: readonly Place[];
}

const EVIDENCE_SHOWN_PER_FINDING = 12;

/** The metrics the server extracts, in the order they are charted. */
const METRICS: Readonly<Partial<Record<string, { title: string; logScale: boolean }>>> = {
    loss: { title: 'Loss', logScale: false },
    loss_scale: { title: 'Loss scale', logScale: true },
    grad_norm: { title: 'Gradient norm', logScale: true },
    lr: { title: 'Learning rate', logScale: false },
};

/**
 * A file's short name: its base name, with the parent folder for per-rank files whose names
 * repeat (torchrun's `attempt_0/<rank>/stderr.log`), so `1/stderr.log` tells the rank.
 */
function baseName(path: string): string {
    const parts = path.split(/[\\/]/).filter(Boolean);
    const name = parts.pop() ?? path;
    const parent = parts.pop();
    return parent && /^(stdout|stderr|error)(\.\w+)?$/.test(name) ? `${parent}/${name}` : name;
}

/**
 * A line's name as the user sees it: the document line when it has a place, else as diagnosed
 * (text sent without a file, such as a terminal's output, is named `<text>` by the server).
 */
function lineLabel(ref: LineRef, place: Place | undefined): string {
    if (place) {
        return `${baseName(decodeURIComponent(place.uri))}:${place.line + 1}`;
    }
    return ref.path.startsWith('<') ? `line ${ref.line}` : `${baseName(ref.path)}:${ref.line}`;
}

class Places {
    readonly list: Place[] = [];
    private readonly index = new Map<string, number>();

    constructor(private readonly locate: Locate) {}

    link(ref: LineRef): LineLink {
        const place = this.locate(ref);
        if (!place) {
            return { label: lineLabel(ref, undefined), place: undefined };
        }
        const key = `${place.uri}\n${place.line}`;
        let i = this.index.get(key);
        if (i === undefined) {
            i = this.list.length;
            this.list.push(place);
            this.index.set(key, i);
        }
        return { label: lineLabel(ref, place), place: i };
    }
}

/** The server's bases in words (as its text and Markdown say them). */
const BASIS_WORDS: Readonly<Partial<Record<string, string>>> = {
    'first-root-cause': 'Its root-cause error came before any other rank’s.',
    'exited-by-itself': 'The launcher saw it end by itself and then stopped the others.',
    'named-by-peers': 'The other ranks name it in their collective-mismatch reports.',
    'lagging-sequence': 'Its collective sequence number lags the other ranks’.',
    'missing-from-reports': 'It is the one rank missing from the others’ timeout reports.',
    'only-rank-in-input': 'The only rank in this input, so whether it started the failure is not known.',
    'all-ranks-alike': 'Every rank failed alike, so no single rank started it.',
    undetermined: 'This input does not show which rank failed first.',
};

/** How the rank was chosen; nothing for a single process's output, where there is no choice. */
function basisWords(result: DiagnoseResult): string {
    const none = result.initiatingRank === null && result.initiatingBasis === 'undetermined' && result.ranks.length === 0;
    return none ? '' : BASIS_WORDS[result.initiatingBasis] ?? '';
}

/** Why the initiating rank is the one that started the failure (or why none is named). */
function explainInitiatingRank(result: DiagnoseResult): string {
    if (result.initiatingReason !== '') {
        const reason = result.initiatingReason;
        return `${reason.charAt(0).toUpperCase()}${reason.slice(1)}${reason.endsWith('.') ? '' : '.'}`;
    }
    if (result.ranks.length === 0) {
        return 'The text names no ranks: it reads as the output of a single process.';
    }
    return result.initiatingRank === null
        ? 'No root-cause line names a rank, so the rank that failed first cannot be told from this text.'
        : `Rank ${result.initiatingRank} logged the earliest root-cause line.`;
}

function rankRows(result: DiagnoseResult, places: Places): RankRow[] {
    const byRank = new Map<number, string[]>();
    for (const f of result.findings) {
        if (f.rank !== null) {
            byRank.set(f.rank, [...(byRank.get(f.rank) ?? []), f.ruleId]);
        }
    }
    const row = (r: RankReport): RankRow => ({
        rank: r.rank,
        status: r.status,
        initiating: r.rank === result.initiatingRank,
        firstFailure: r.firstFailure ? places.link(r.firstFailure) : undefined,
        ruleIds: [...new Set(byRank.get(r.rank) ?? [])],
    });
    const rows = result.ranks.map(row);
    return [...rows.filter((r) => r.initiating), ...rows.filter((r) => !r.initiating)];
}

function evidenceRows(result: DiagnoseResult, places: Places): EvidenceRow[] {
    return result.findings.flatMap((f) =>
        f.evidence.slice(0, EVIDENCE_SHOWN_PER_FINDING).map((e) => ({
            ruleId: f.ruleId,
            role: f.role,
            rank: e.rank,
            link: places.link(e),
            text: e.text,
        })),
    );
}

function relatedIds(result: DiagnoseResult, root: Finding | undefined): string[] {
    const ids = [...(root?.related ?? []), ...result.findings.map((f) => f.ruleId)];
    return [...new Set(ids)].filter((id) => id !== root?.ruleId);
}

function chartSeries(rank: number | null, points: readonly Point[], series: MetricSeries): ChartSeries {
    const steps = points.map(([x]) => x);
    const values = points.map(([, v]) => v);
    const marks: (number | null)[] = values.map(() => null);
    for (const a of series.anomalies) {
        const i = a.x === undefined || a.rank !== rank ? -1 : steps.indexOf(a.x);
        if (i >= 0) {
            marks[i] = values[i] ?? null;
        }
    }
    return { rank, steps, values, marks };
}

function chart(series: MetricSeries, places: Places): ChartModel {
    const info = METRICS[series.name] ?? { title: series.name.replace(/_/g, ' '), logScale: false };
    return {
        title: info.title,
        logScale: info.logScale,
        rank: series.rank,
        series: [
            chartSeries(series.rank, series.points, series),
            ...series.otherRanks.map((other) => chartSeries(other.rank, other.points, series)),
        ],
        anomalies: series.anomalies.map((a) => ({ detector: a.detector, rank: a.rank, link: places.link(a) })),
    };
}

/** One chart per metric, loss first, then loss scale and gradient norm. */
function buildCharts(series: readonly MetricSeries[], places: Places): ChartModel[] {
    const order = (name: string): number => {
        const i = Object.keys(METRICS).indexOf(name);
        return i < 0 ? Number.MAX_SAFE_INTEGER : i;
    };
    return [...series].sort((a, b) => order(a.name) - order(b.name) || a.name.localeCompare(b.name)).map((s) => chart(s, places));
}

function initiatingLine(result: DiagnoseResult, places: Places): LineLink | undefined {
    const first = result.ranks.find((r) => r.rank === result.initiatingRank)?.firstFailure;
    return first ? places.link(first) : undefined;
}

export function buildPanelModel(result: DiagnoseResult, origin: string, locate: Locate): PanelModel {
    const places = new Places(locate);
    const root = rootCause(result);
    return {
        origin,
        root: root && {
            ruleId: root.ruleId,
            title: root.title,
            confidencePercent: Math.round(root.confidence * 100),
            fix: root.fix,
            verify: root.verify,
        },
        initiatingRank: result.initiatingRank,
        initiatingHost: result.initiatingHost,
        basis: basisWords(result),
        why: explainInitiatingRank(result),
        whyLine: initiatingLine(result, places),
        ranks: rankRows(result, places),
        evidence: evidenceRows(result, places),
        related: relatedIds(result, root),
        charts: buildCharts(result.series, places),
        places: places.list,
    };
}
