/**
 * Diagnosis → what the results panel shows. Pure: no VS Code API, so it is unit-tested directly.
 */
import { DiagnoseResult, Finding, LineRef, MetricSeries, RankReport, rootCause } from '../diagnosis';

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

export interface ChartLine {
    readonly label: string;
    /** Aligned with ChartModel.steps; null where this rank logged nothing at that step. */
    readonly values: readonly (number | null)[];
}

export interface ChartModel {
    readonly title: string;
    readonly logScale: boolean;
    readonly steps: readonly number[];
    readonly lines: readonly ChartLine[];
    /** Aligned with steps: the value to mark where an anomaly was found, else null. */
    readonly anomalies: readonly (number | null)[];
    readonly anomalyLabels: readonly string[];
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
    readonly why: string;
    readonly ranks: readonly RankRow[];
    readonly evidence: readonly EvidenceRow[];
    readonly related: readonly string[];
    readonly charts: readonly ChartModel[];
    readonly places: readonly Place[];
}

const EVIDENCE_SHOWN_PER_FINDING = 12;
const QUOTE_WIDTH = 120;

const METRICS: Readonly<Record<string, { title: string; logScale: boolean; order: number }>> = {
    loss: { title: 'Loss', logScale: false, order: 0 },
    loss_scale: { title: 'Loss scale', logScale: true, order: 1 },
    grad_norm: { title: 'Gradient norm', logScale: true, order: 2 },
};

function baseName(path: string): string {
    return path.split(/[\\/]/).filter(Boolean).pop() ?? path;
}

function lineLabel(ref: LineRef): string {
    return `${baseName(ref.path)}:${ref.line}`;
}

function quote(text: string): string {
    const trimmed = text.trim();
    return trimmed.length <= QUOTE_WIDTH ? trimmed : `${trimmed.slice(0, QUOTE_WIDTH - 1)}…`;
}

function listRanks(ranks: readonly number[]): string {
    if (ranks.length === 1) {
        return `rank ${ranks[0]}`;
    }
    const head = ranks.slice(0, -1).join(', ');
    return `ranks ${head} and ${ranks[ranks.length - 1]}`;
}

function sameLine(a: LineRef, b: LineRef): boolean {
    return a.path === b.path && a.line === b.line;
}

/** Why the initiating rank is the one that started the failure, in one or two sentences. */
export function explainInitiatingRank(result: DiagnoseResult): string {
    const rank = result.initiatingRank;
    const failedLater = result.ranks
        .filter((r) => r.rank !== rank && r.status !== 'healthy' && r.status !== 'silent')
        .map((r) => r.rank);
    if (rank === null) {
        if (result.ranks.length === 0) {
            return 'The text names no ranks: it reads as the output of a single process.';
        }
        return 'No root-cause line names a rank, so the rank that failed first cannot be told from this text.';
    }
    const report = result.ranks.find((r) => r.rank === rank);
    let why = `Rank ${rank} logged the earliest root-cause line`;
    const first = report?.firstFailure;
    if (first) {
        const text = result.findings.flatMap((f) => f.evidence).find((e) => sameLine(e, first))?.text;
        why += ` (${lineLabel(first)}${text ? `: “${quote(text)}”` : ''})`;
    }
    why += '.';
    if (failedLater.length > 0) {
        why += ` ${listRanks(failedLater).replace(/^r/, 'R')} failed after it: collateral damage, not the cause.`;
    }
    return why;
}

class Places {
    readonly list: Place[] = [];
    private readonly index = new Map<string, number>();

    constructor(private readonly locate: Locate) {}

    link(ref: LineRef): LineLink {
        const place = this.locate(ref);
        if (!place) {
            return { label: lineLabel(ref), place: undefined };
        }
        const key = `${place.uri}\n${place.line}`;
        let i = this.index.get(key);
        if (i === undefined) {
            i = this.list.length;
            this.list.push(place);
            this.index.set(key, i);
        }
        return { label: lineLabel(ref), place: i };
    }
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
            rank: f.rank,
            link: places.link(e),
            text: e.text,
        })),
    );
}

/** The rule ids under the entry's `## Related` heading, as `rule_markdown` writes them. */
export function relatedFromMarkdown(markdown: string): string[] {
    const line = /^## Related\s*\n+([^\n]*)/m.exec(markdown)?.[1] ?? '';
    return [...line.matchAll(/`([a-z0-9][a-z0-9-]*)`/g)].flatMap((m) => (m[1] ? [m[1]] : []));
}

function relatedIds(result: DiagnoseResult, root: Finding | undefined): string[] {
    const ids = [...relatedFromMarkdown(result.markdown), ...result.findings.map((f) => f.ruleId)];
    return [...new Set(ids)].filter((id) => id !== root?.ruleId);
}

function metricInfo(name: string): { title: string; logScale: boolean; order: number } {
    return METRICS[name] ?? { title: name.replace(/_/g, ' '), logScale: false, order: Object.keys(METRICS).length };
}

/** One chart per metric: every rank's series aligned on the union of their steps. */
export function buildCharts(series: readonly MetricSeries[]): ChartModel[] {
    const byName = new Map<string, MetricSeries[]>();
    for (const s of series) {
        byName.set(s.name, [...(byName.get(s.name) ?? []), s]);
    }
    return [...byName.entries()]
        .sort(([a], [b]) => metricInfo(a).order - metricInfo(b).order || a.localeCompare(b))
        .map(([name, group]) => {
            const steps = [...new Set(group.flatMap((s) => s.steps))].sort((a, b) => a - b);
            const column = new Map(steps.map((step, i) => [step, i]));
            const anomalies: (number | null)[] = steps.map(() => null);
            const anomalyLabels: string[] = steps.map(() => '');
            const lines = group.map((s) => {
                const at = new Map(s.steps.map((step, i) => [step, s.values[i] ?? null]));
                for (const a of s.anomalies) {
                    const i = column.get(a.step);
                    if (i !== undefined) {
                        anomalies[i] = at.get(a.step) ?? null;
                        anomalyLabels[i] = anomalyLabels[i] ? `${anomalyLabels[i]}; ${a.label}` : a.label;
                    }
                }
                return { label: s.rank === null ? name : `rank ${s.rank}`, values: steps.map((step) => at.get(step) ?? null) };
            });
            const info = metricInfo(name);
            return { title: info.title, logScale: info.logScale, steps, lines, anomalies, anomalyLabels };
        });
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
        why: explainInitiatingRank(result),
        ranks: rankRows(result, places),
        evidence: evidenceRows(result, places),
        related: relatedIds(result, root),
        charts: buildCharts(result.series),
        places: places.list,
    };
}
