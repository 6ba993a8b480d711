/**
 * The results panel's HTML. Pure: every dynamic string is escaped here, the only script is the
 * bundled one with a fresh nonce, and the policy allows nothing from the network.
 */
import { ChartModel, EvidenceRow, LineLink, PanelModel, RankRow } from './model';

export interface PanelResources {
    /** The webview's `cspSource`: the origin its local resources are served from. */
    readonly cspSource: string;
    readonly nonce: string;
    readonly scriptUri: string;
    readonly styleUri: string;
}

export interface PanelOptions {
    /** Verification commands run only in a trusted workspace. */
    readonly trusted: boolean;
    /** The exact line the Run in terminal button would type, shown as its tooltip. */
    readonly verifyCommandLine: string | undefined;
}

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
    return [
        "default-src 'none'",
        `style-src ${cspSource}`,
        `img-src ${cspSource} data:`,
        `font-src ${cspSource}`,
        `script-src 'nonce-${nonce}'`,
    ].join('; ');
}

export function escapeHtml(text: string): string {
    return text
        .replace(/&/g, '&amp;')
        .replace(/</g, '&lt;')
        .replace(/>/g, '&gt;')
        .replace(/"/g, '&quot;')
        .replace(/'/g, '&#39;');
}

/** JSON that can sit inside a <script type="application/json"> without closing it. */
export function embeddedJson(value: unknown): string {
    return JSON.stringify(value)
        .replace(/</g, '\\u003c')
        .replace(/>/g, '\\u003e')
        .replace(/&/g, '\\u0026')
        .replace(/\u2028/g, '\\u2028')
        .replace(/\u2029/g, '\\u2029');
}

const STATUS_LABELS: Readonly<Record<string, string>> = {
    'failed-first': 'failed first',
    failed: 'failed (order unknown)',
    'failed-collateral': 'collateral',
    killed: 'killed',
    healthy: 'healthy',
    silent: 'silent',
};

function lineLink(link: LineLink): string {
    const label = escapeHtml(link.label);
    return link.place === undefined
        ? `<span class="line-ref">${label}</span>`
        : `<a href="#" class="line-ref" data-action="reveal" data-place="${link.place}" title="Go to this line">${label}</a>`;
}

function entryLink(ruleId: string): string {
    const id = escapeHtml(ruleId);
    return `<a href="#" data-action="showEntry" data-rule="${id}" title="Open the catalogue entry"><code>${id}</code></a>`;
}

function rankRow(row: RankRow): string {
    const status = escapeHtml(STATUS_LABELS[row.status] ?? row.status);
    const cls = row.initiating ? ' class="initiating"' : '';
    return (
        `<tr${cls}><td>${row.rank}</td><td><span class="status status-${escapeHtml(row.status)}">${status}</span></td>` +
        `<td>${row.firstFailure ? lineLink(row.firstFailure) : '—'}</td>` +
        `<td>${row.ruleIds.map(entryLink).join(' ') || '—'}</td></tr>`
    );
}

function ranksSection(model: PanelModel): string {
    if (model.ranks.length === 0) {
        return '';
    }
    return `<section aria-labelledby="h-ranks"><h2 id="h-ranks">Ranks</h2>
<table class="ranks"><thead><tr><th scope="col">Rank</th><th scope="col">Status</th><th scope="col">First failure</th><th scope="col">Found</th></tr></thead>
<tbody>${model.ranks.map(rankRow).join('')}</tbody></table></section>`;
}

function evidenceItem(row: EvidenceRow): string {
    const who = row.rank === null ? '' : ` · rank ${row.rank}`;
    return `<li class="${row.role}">${lineLink(row.link)}<span class="ev-meta">${escapeHtml(row.ruleId)}${who}</span><code class="ev-text">${escapeHtml(row.text)}</code></li>`;
}

function evidenceSection(model: PanelModel): string {
    if (model.evidence.length === 0) {
        return '';
    }
    return `<section aria-labelledby="h-evidence"><h2 id="h-evidence">Evidence</h2><ul class="evidence">${model.evidence.map(evidenceItem).join('')}</ul></section>`;
}

function anomalyList(chart: ChartModel): string {
    if (chart.anomalies.length === 0) {
        return '';
    }
    const items = chart.anomalies
        .map((a) => `<li>${lineLink(a.link)} <span class="ev-meta">${escapeHtml(a.detector)}${a.rank === null ? '' : ` · rank ${a.rank}`}</span></li>`)
        .join('');
    return `<ul class="anomalies" aria-label="Anomalies in ${escapeHtml(chart.title.toLowerCase())}">${items}</ul>`;
}

/** A choice of the rank whose series the chart shows; the webview redraws on a change. */
function rankPicker(chart: ChartModel, index: number): string {
    const options = chart.series
        .map((s, j) => `<option value="${j}"${j === 0 ? ' selected' : ''}>rank ${s.rank ?? '?'}</option>`)
        .join('');
    return `<select class="chart-rank" data-chart-rank="${index}" aria-label="Rank shown in the ${escapeHtml(chart.title.toLowerCase())} chart">${options}</select>`;
}

function chartsSection(charts: readonly ChartModel[]): string {
    if (charts.length === 0) {
        return '';
    }
    const boxes = charts
        .map((c, i) => {
            const rank = c.series.length > 1 ? rankPicker(c, i) : c.rank === null ? '' : ` <span class="ev-meta">rank ${c.rank}</span>`;
            return `<figure class="chart"><figcaption>${escapeHtml(c.title)}${rank}</figcaption><div class="chart-body" data-chart="${i}"></div>${anomalyList(c)}</figure>`;
        })
        .join('');
    return `<section aria-labelledby="h-metrics"><h2 id="h-metrics">Metrics</h2><div class="charts">${boxes}</div>
<script type="application/json" id="tm-charts">${embeddedJson(charts)}</script></section>`;
}

function relatedSection(model: PanelModel): string {
    if (model.related.length === 0) {
        return '';
    }
    return `<section aria-labelledby="h-related"><h2 id="h-related">Related entries</h2><p class="related">${model.related.map(entryLink).join(' ')}</p></section>`;
}

function rootSections(model: PanelModel, options: PanelOptions): string {
    const root = model.root;
    if (!root) {
        return `<header><h1>No root cause found</h1><p class="meta">${escapeHtml(model.origin)}</p></header>
<p>Nothing in this text matches a root cause in the catalogue.${model.evidence.length > 0 ? ' The lines below failed as a consequence of something this text does not show: look further back, or at the other ranks’ logs.' : ''}</p>`;
    }
    const host = model.initiatingHost === null ? '' : ` on host ${model.initiatingHost}`;
    const initiating = model.initiatingRank === null ? 'not determined' : `rank ${model.initiatingRank}${host}`;
    const basis = model.basis === '' ? '' : `<p class="basis">${escapeHtml(model.basis)}</p>`;
    const runTitle = options.trusted
        ? `Types ${options.verifyCommandLine ?? root.verify} into a terminal`
        : 'Verification commands are disabled in an untrusted workspace';
    const untrustedNote = options.trusted ? '' : '<p class="note">Trust this workspace to run verification commands from here.</p>';
    return `<header><h1>${escapeHtml(root.title)}</h1>
<p class="meta">${entryLink(root.ruleId)} · confidence ${root.confidencePercent}% · ${escapeHtml(model.origin)}</p></header>
<section class="initiating" aria-labelledby="h-rank"><h2 id="h-rank">Initiating rank</h2>
<p class="rank-value${model.initiatingRank === null ? ' undetermined' : ''}">${escapeHtml(initiating)}</p><p class="why">${escapeHtml(model.why)}${model.whyLine ? ` First failure: ${lineLink(model.whyLine)}.` : ''}</p>${basis}</section>
<section aria-labelledby="h-fix"><h2 id="h-fix">Fix</h2><pre class="fix">${escapeHtml(root.fix)}</pre>
<div class="actions"><button type="button" class="secondary" data-action="copyFix">Copy fix</button></div></section>
<section aria-labelledby="h-verify"><h2 id="h-verify">Verify</h2><pre class="verify"><code>${escapeHtml(root.verify)}</code></pre>
<div class="actions"><button type="button" data-action="runVerification" title="${escapeHtml(runTitle)}"${options.trusted ? '' : ' disabled'}>Run in terminal</button>
<button type="button" class="secondary" data-action="copyVerify">Copy command</button></div>${untrustedNote}</section>`;
}

export function renderPanelHtml(model: PanelModel, resources: PanelResources, options: PanelOptions): string {
    const csp = contentSecurityPolicy(resources.cspSource, resources.nonce);
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeHtml(resources.styleUri)}">
<title>TrainMedic diagnosis</title>
</head>
<body>
<main>
${rootSections(model, options)}
${ranksSection(model)}
${evidenceSection(model)}
${chartsSection(model.charts)}
${relatedSection(model)}
</main>
<script nonce="${escapeHtml(resources.nonce)}" src="${escapeHtml(resources.scriptUri)}"></script>
</body>
</html>
`;
}
