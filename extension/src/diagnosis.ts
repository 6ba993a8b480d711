/**
 * The server's answer to `trainmedic.diagnose`: the JSON of `trainmedic diagnose --format json`
 * plus `markdown` and, when the server extracts metric samples, `series`.
 * Parsed defensively: the answer crosses a process boundary.
 */

export interface Evidence {
    readonly path: string;
    /** 1-based line number within the text that was diagnosed. */
    readonly line: number;
    /** The rank that printed the line (its prefix, its file's name), null when none did. */
    readonly rank: number | null;
    readonly text: string;
}

export type Role = 'root' | 'collateral';

export interface Finding {
    readonly ruleId: string;
    readonly title: string;
    readonly role: Role;
    readonly confidence: number;
    readonly rank: number | null;
    readonly evidence: readonly Evidence[];
    readonly fix: string;
    readonly verify: string;
    /** Rule ids of the catalogue's related entries. */
    readonly related: readonly string[];
}

export interface LineRef {
    readonly path: string;
    readonly line: number;
}

export interface RankReport {
    readonly rank: number;
    /** failed-first, failed (by itself, order unknown), failed-collateral, killed, healthy or silent. */
    readonly status: string;
    readonly firstFailure: LineRef | null;
}

/** A line where a detector fired on the metric (a spike, a collapsing loss scale...). */
export interface Anomaly extends LineRef {
    readonly detector: string;
    readonly rank: number | null;
    /** The step it happened at, when the server says. */
    readonly x: number | undefined;
}

/** One metric of one rank (the rank where a detector fired, else the lowest), thinned for plotting. */
export interface MetricSeries {
    readonly name: string;
    readonly rank: number | null;
    readonly points: readonly Point[];
    readonly anomalies: readonly Anomaly[];
    /** The same metric of the other ranks, lowest rank first. */
    readonly otherRanks: readonly { readonly rank: number; readonly points: readonly Point[] }[];
}

/** [step, value]; value null where it was not finite (NaN, inf). */
export type Point = readonly [number, number | null];

export interface DiagnoseResult {
    readonly initiatingRank: number | null;
    /** Why that rank (or why none): the server's words; may be empty. */
    readonly initiatingReason: string;
    /** How the rank was chosen: first-root-cause, exited-by-itself, named-by-peers, lagging-sequence,
     *  missing-from-reports, only-rank-in-input, all-ranks-alike or undetermined. */
    readonly initiatingBasis: string;
    /** The host the initiating rank ran on, when the input names it. */
    readonly initiatingHost: string | null;
    readonly findings: readonly Finding[];
    readonly ranks: readonly RankReport[];
    readonly markdown: string;
    readonly series: readonly MetricSeries[];
    /** What reading files skipped or cut (a diagnosis of paths). */
    readonly warnings: readonly string[];
}

export class MalformedResultError extends Error {
    constructor(where: string) {
        super(`the server's diagnosis is malformed at ${where}`);
        this.name = 'MalformedResultError';
    }
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function object(value: unknown, where: string): Json {
    if (!isObject(value)) {
        throw new MalformedResultError(where);
    }
    return value;
}

function array(value: unknown, where: string): unknown[] {
    if (!Array.isArray(value)) {
        throw new MalformedResultError(where);
    }
    return value;
}

function string(value: unknown, where: string): string {
    if (typeof value !== 'string') {
        throw new MalformedResultError(where);
    }
    return value;
}

function number(value: unknown, where: string): number {
    if (typeof value !== 'number' || !Number.isFinite(value)) {
        throw new MalformedResultError(where);
    }
    return value;
}

function rankOrNull(value: unknown, where: string): number | null {
    return value === null || value === undefined ? null : number(value, where);
}

function lineRef(value: unknown, where: string): LineRef {
    const ref = object(value, where);
    return { path: string(ref.path, `${where}.path`), line: number(ref.line, `${where}.line`) };
}

function evidence(value: unknown, where: string): Evidence {
    const ev = object(value, where);
    return { ...lineRef(ev, where), rank: rankOrNull(ev.rank, `${where}.rank`), text: string(ev.text, `${where}.text`) };
}

function finding(value: unknown, where: string): Finding {
    const d = object(value, where);
    const role = string(d.role, `${where}.role`);
    if (role !== 'root' && role !== 'collateral') {
        throw new MalformedResultError(`${where}.role`);
    }
    return {
        ruleId: string(d.rule_id, `${where}.rule_id`),
        title: string(d.title, `${where}.title`),
        role,
        confidence: number(d.confidence, `${where}.confidence`),
        rank: rankOrNull(d.rank, `${where}.rank`),
        evidence: array(d.evidence, `${where}.evidence`).map((e, i) => evidence(e, `${where}.evidence[${i}]`)),
        fix: string(d.fix, `${where}.fix`),
        verify: string(d.verify, `${where}.verify`),
        related: array(d.related ?? [], `${where}.related`).map((r, i) => string(r, `${where}.related[${i}]`)),
    };
}

function rankReports(value: unknown): RankReport[] {
    const ranks = object(value ?? {}, 'ranks');
    return Object.entries(ranks)
        .map(([key, report]): RankReport => {
            const where = `ranks.${key}`;
            const r = object(report, where);
            const rank = Number(key);
            if (!Number.isInteger(rank)) {
                throw new MalformedResultError(where);
            }
            const first = r.first_failure_line;
            return {
                rank,
                status: string(r.status, `${where}.status`),
                firstFailure: first === null || first === undefined ? null : lineRef(first, `${where}.first_failure_line`),
            };
        })
        .sort((a, b) => a.rank - b.rank);
}

function point(value: unknown, where: string): [number, number | null] {
    const [x, v, ...rest] = array(value, where);
    if (rest.length > 0) {
        throw new MalformedResultError(where);
    }
    return [number(x, `${where}[0]`), v === null ? null : number(v, `${where}[1]`)];
}

function anomaly(value: unknown, where: string): Anomaly {
    const a = object(value, where);
    return {
        ...lineRef(a, where),
        detector: string(a.detector, `${where}.detector`),
        rank: rankOrNull(a.rank, `${where}.rank`),
        x: a.x === undefined || a.x === null ? undefined : number(a.x, `${where}.x`),
    };
}

function metricSeries(name: string, value: unknown): MetricSeries {
    const where = `series.${name}`;
    const s = object(value, where);
    return {
        name,
        rank: rankOrNull(s.rank, `${where}.rank`),
        points: array(s.points, `${where}.points`).map((p, i) => point(p, `${where}.points[${i}]`)),
        anomalies: array(s.anomalies ?? [], `${where}.anomalies`).map((a, i) => anomaly(a, `${where}.anomalies[${i}]`)),
        otherRanks: Object.entries(object(s.other_ranks ?? {}, `${where}.other_ranks`))
            .map(([key, points]) => {
                const at = `${where}.other_ranks.${key}`;
                const rank = Number(key);
                if (!Number.isInteger(rank)) {
                    throw new MalformedResultError(at);
                }
                return { rank, points: array(points, at).map((p, i) => point(p, `${at}[${i}]`)) };
            })
            .sort((a, b) => a.rank - b.rank),
    };
}

/** The typed result, or a MalformedResultError naming the first field that is wrong. */
export function parseDiagnoseResult(value: unknown): DiagnoseResult {
    const r = object(value, 'the result');
    return {
        initiatingRank: rankOrNull(r.initiating_rank, 'initiating_rank'),
        initiatingReason: r.initiating_reason === undefined || r.initiating_reason === null ? '' : string(r.initiating_reason, 'initiating_reason'),
        initiatingBasis: r.initiating_basis === undefined || r.initiating_basis === null ? 'undetermined' : string(r.initiating_basis, 'initiating_basis'),
        initiatingHost: r.initiating_host === undefined || r.initiating_host === null ? null : string(r.initiating_host, 'initiating_host'),
        findings: array(r.diagnoses, 'diagnoses').map((d, i) => finding(d, `diagnoses[${i}]`)),
        ranks: rankReports(r.ranks),
        markdown: r.markdown === undefined ? '' : string(r.markdown, 'markdown'),
        series: Object.entries(object(r.series ?? {}, 'series')).map(([name, s]) => metricSeries(name, s)),
        warnings: array(r.warnings ?? [], 'warnings').map((w, i) => string(w, `warnings[${i}]`)),
    };
}

export interface RuleSummary {
    readonly id: string;
    readonly title: string;
    readonly category: string;
    readonly role: string;
}

export function parseRuleList(value: unknown): RuleSummary[] {
    return array(value, 'the rule list').map((item, i) => {
        const r = object(item, `rules[${i}]`);
        return {
            id: string(r.id, `rules[${i}].id`),
            title: string(r.title, `rules[${i}].title`),
            category: string(r.category, `rules[${i}].category`),
            role: string(r.role, `rules[${i}].role`),
        };
    });
}

export interface CatalogueEntry {
    readonly id: string;
    readonly title: string;
    readonly markdown: string;
}

export function parseCatalogueEntry(value: unknown): CatalogueEntry {
    const e = object(value, 'the entry');
    return { id: string(e.id, 'id'), title: string(e.title, 'title'), markdown: string(e.markdown, 'markdown') };
}

/** The most likely root cause: the server orders findings most likely root cause first. */
export function rootCause(result: DiagnoseResult): Finding | undefined {
    return result.findings.find((f) => f.role === 'root');
}

/** Whether the basis says the rank failed before the others (not only that it is the one shown). */
export function failedFirst(result: DiagnoseResult): boolean {
    return result.initiatingRank !== null
        && !['only-rank-in-input', 'all-ranks-alike', 'undetermined'].includes(result.initiatingBasis);
}
